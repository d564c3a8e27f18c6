"""A Spark run's page counts its time from the start and, when the run ends, shows a duration measured on the same
span, never a smaller one (the driver's own duration_s leaves out spark-submit's start); the preview's timestamps
are in the one date format of every page. The runs are rows the test writes (no Spark needed: the page shows what
the worker stores)."""

from __future__ import annotations

import json
import re

import pytest

from tests.browser.conftest import screenshot
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def make_run(platform, **fields) -> int:
    """A run of a job of its own, with `fields` (JSON; *_ago_s: that many seconds before now)."""
    return int(platform.django(
        "import json\n"
        "from datetime import timedelta\n"
        "from django.utils import timezone\n"
        "from web.sparkjobs.models import JobDefinition, JobRun\n"
        f"fields = json.loads({json.dumps(json.dumps(fields))})\n"
        "now = timezone.now()\n"
        "for key in [k for k in fields if k.endswith('_ago_s')]:\n"
        "    fields[key[:-len('_ago_s')]] = now - timedelta(seconds=fields.pop(key))\n"
        f"job = JobDefinition.objects.create(name='btsparkt-{tagged_suffix()}', template='sql')\n"
        "print(JobRun.objects.create(definition=job, template='sql', **fields).pk)\n"
    ).strip().splitlines()[-1])


def minutes_and_seconds(text: str) -> float:
    found = re.search(r"(\d+) min (\d+) s", text)
    assert found, text
    return int(found.group(1)) * 60 + int(found.group(2))


def test_the_duration_does_not_go_backwards_when_the_run_ends(session, platform):
    run = make_run(platform, status="running", started_at_ago_s=300, heartbeat_at_ago_s=0)
    current, page = session("viewer")
    page.goto(f"/spark/runs/{run}/")
    duration = page.locator('[data-run="duration"]')
    page.wait_for_function("document.querySelector('[data-run=\"duration\"]').textContent.includes('so far')")
    counted = minutes_and_seconds(duration.inner_text())
    assert counted >= 300, duration.inner_text()

    # it ends: the worker stores finished_at and the driver's own duration, 30 s shorter than the span counted
    platform.django(
        "from django.utils import timezone\n"
        "from web.sparkjobs.models import JobRun\n"
        f"JobRun.objects.filter(pk={run}).update(status='succeeded', finished_at=timezone.now(), duration_s=270.0,"
        " preview={'columns': [], 'rows': []})\n")
    page.locator("#run-status").and_(page.locator('[data-status="succeeded"]')).wait_for()
    ended = minutes_and_seconds(duration.inner_text())
    assert "so far" not in duration.inner_text()
    assert ended >= counted, (counted, duration.inner_text())
    screenshot(page, "spark-run-duration-after-the-end")

    page.reload()  # the page as rendered, and the job's list of runs, say the same
    assert minutes_and_seconds(duration.inner_text()) >= counted, duration.inner_text()
    page.goto("/spark/")
    row = page.locator(f'tr[data-run="{run}"]')
    assert minutes_and_seconds(row.inner_text()) >= counted, row.inner_text()


def test_preview_timestamps_use_the_date_format_of_every_page(session, platform):
    preview = {"columns": ["window_start", "op", "events", "day"],
               "rows": [["2026-03-01T10:15:00", "c", 3, "2026-03-01"],
                        ["2026-03-01T10:16:00.250000Z", "u", 1, "2026-03-01"]]}
    run = make_run(platform, status="succeeded", started_at_ago_s=60, finished_at_ago_s=30, duration_s=25.0,
                   preview=preview)
    current, page = session("viewer")
    page.goto(f"/spark/runs/{run}/")
    cells = page.locator("#preview tbody tr td")
    cells.first.wait_for()
    expected = page.evaluate("[Date.parse('2026-03-01T10:15:00Z'), Date.parse('2026-03-01T10:16:00.250Z')]"
                             ".map((ms) => window.cdcFormat.datetime(ms))")
    assert cells.nth(0).inner_text() == expected[0]
    assert cells.nth(4).inner_text() == expected[1]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", expected[0])
    assert cells.nth(0).locator("time").get_attribute("title") == "2026-03-01T10:15:00Z (UTC)"
    assert cells.nth(3).inner_text() == "2026-03-01"  # a date stays a date
    assert cells.nth(2).inner_text() == "3"
    screenshot(page, "spark-preview-dates")

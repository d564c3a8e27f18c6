"""Spark pages in a real browser against the real platform (daphne, a Celery worker on every queue running
spark-submit on local[2], the stack's Kafka): an operator creates an SQL job through the form, launches it and
watches its run page move (status, step, log) to a preview table with the counts of the events produced; a run
whose SQL names a missing view ends failed with Spark's message on the run page.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter

import pytest

from sparkjobs.templates import view_name
from tests.browser.conftest import screenshot
from tests.spark.workload import Clock, Collection, create_topics, encode, produce
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

RUN_TIMEOUT_MS = 240_000


@pytest.fixture(scope="module")
def events(stack):
    """A topic with inserts, updates and deletes; the number of events per operation."""
    coll = Collection("shop", "orders", Clock())
    records = [coll.insert({"_id": i, "qty": i}) for i in range(12)]
    records += [coll.update(i, {"qty": i * 10}) for i in range(0, 12, 2)]
    records += [coll.delete(i) for i in (1, 3, 5)]
    prefix = f"spark.pages.{tagged_suffix()}"
    messages = encode(records, prefix)
    topic = f"{prefix}.shop.orders"
    create_topics(stack.kafka_bootstrap, [topic])
    produce(stack.kafka_bootstrap, messages)
    ops = Counter(json.loads(m.value)["op"] for m in messages if m.topic == topic and m.value)
    return {"topic": topic, "ops": dict(ops)}


def _create_sql_job(page, topic: str, sql: str) -> str:
    name = f"sql-{uuid.uuid4().hex[:6]}"
    page.get_by_role("link", name="Spark jobs").click()
    page.get_by_role("link", name="New Spark job").click()
    page.wait_for_url("**/spark/jobs/new/")
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Template").select_option("sql")
    assert page.get_by_label("SQL", exact=True).is_visible()
    assert not page.get_by_label("Keep deleted documents (as deleted = true)").is_visible()
    page.get_by_label("Topics").fill(topic)
    page.get_by_label("SQL", exact=True).fill(sql)
    page.get_by_role("button", name="Create job").click()
    page.wait_for_url(f"**/spark/jobs/{name}/")
    return name


def _launch(page) -> None:
    page.get_by_role("button", name="Launch run").click()
    page.wait_for_url("**/spark/runs/*/")
    page.evaluate("""() => { window.__seen = {status: [], step: [], stage: [], log: []};
        setInterval(() => {
          const add = (key, value) => { if (!window.__seen[key].includes(value)) window.__seen[key].push(value); };
          add("status", document.querySelector("#run-status").textContent);
          add("step", document.querySelector('[data-run="step"]').textContent);
          add("stage", document.querySelector('[data-run="stage"]').textContent);
          add("log", document.querySelector("#run-log").textContent.split("\\n").length);
        }, 100); }""")


def _wait_finished(page) -> dict:
    page.wait_for_function("() => ['succeeded', 'failed', 'cancelled'].includes("
                           "document.querySelector('#run-status').textContent)", timeout=RUN_TIMEOUT_MS)
    return page.evaluate("() => window.__seen")


def test_launching_a_job_shows_its_progress_and_preview(session, events):
    current, page = session("operator")
    view = view_name(events["topic"])
    query = f"SELECT op, count(*) AS n FROM {view} WHERE op IS NOT NULL GROUP BY op ORDER BY op"  # noqa: S608
    _create_sql_job(page, events["topic"], query)
    _launch(page)
    seen = _wait_finished(page)
    assert page.locator("#run-status").inner_text() == "succeeded", page.locator("#run-error").inner_text()
    assert "running" in seen["status"], seen  # seen running before it ended
    assert "sql" in seen["step"], seen  # the step was shown while it ran
    assert any("tasks" in stage for stage in seen["stage"]), seen  # Spark's stage progress was shown
    assert len(seen["log"]) > 2, seen  # the log grew while the run went on

    table = page.locator("#preview")
    assert [h.inner_text() for h in table.locator("thead th").all()] == ["op", "n"]
    rows = {cells[0]: int(cells[1]) for cells in (
        [td.inner_text() for td in row.locator("td").all()] for row in table.locator("tbody tr").all())}
    assert rows == events["ops"]
    assert page.locator('[data-run="rows_out"]').inner_text() == str(len(events["ops"]))
    assert page.locator("#stage-progress").evaluate("bar => bar.value") == 100
    assert "step: sql" in page.locator("#run-log").inner_text()
    assert page.locator("#run-error").is_hidden()
    screenshot(page, "spark-run")


def test_an_sql_error_is_shown_on_the_run_page(session, events):
    current, page = session("operator")
    _create_sql_job(page, events["topic"], "SELECT qty FROM no_such_view")
    _launch(page)
    _wait_finished(page)
    assert page.locator("#run-status").inner_text() == "failed"
    error = page.locator("#run-error")
    assert error.is_visible()
    assert "TABLE_OR_VIEW_NOT_FOUND" in error.inner_text() and "no_such_view" in error.inner_text()
    assert page.locator('[data-run="preview-note"]').inner_text() == "No preview."
    assert "failed: AnalysisException" in page.locator("#run-log").inner_text()


def test_a_viewer_reads_runs_but_cannot_launch(session, platform):
    name = f"viewed-{uuid.uuid4().hex[:6]}"
    platform.django("from web.sparkjobs.models import JobDefinition\n"
                    f"JobDefinition.objects.create(name={name!r}, template='sql', topics=['t'],"
                    " arguments={'sql': 'SELECT 1'})\n")
    current, page = session("viewer")
    page.get_by_role("link", name="Spark jobs").click()
    page.wait_for_url("**/spark/")
    assert page.get_by_role("link", name="New Spark job").count() == 0
    page.locator(f'tr[data-job="{name}"] a').first.click()
    page.wait_for_url(f"**/spark/jobs/{name}/")
    assert page.get_by_role("button", name="Launch run").count() == 0
    answer = page.request.post(f"/api/spark/jobs/{name}/run/", headers={"X-CSRFToken": current.csrf(page)})
    assert answer.status == 403


def test_a_stats_run_shows_its_time_from_the_start_a_chart_and_a_csv(session, events):
    """Issue 13.12: the elapsed time and what the run is doing from its first second (a driver says nothing for
    half a minute), then a chart of the statistics and the preview as CSV."""
    current, page = session("operator")
    name = f"stats-{uuid.uuid4().hex[:6]}"
    page.goto("/spark/jobs/new/")
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Template").select_option("stats")
    page.get_by_label("Topics").fill(events["topic"])
    page.get_by_role("button", name="Create job").click()
    page.wait_for_url(f"**/spark/jobs/{name}/")
    _launch(page)
    page.wait_for_function("() => document.querySelector('[data-run=\"duration\"]').textContent !== '—' && "
                           "document.querySelector('[data-run=\"step\"]').textContent !== '—'", timeout=2500)
    duration = page.locator('[data-run="duration"]').inner_text()
    assert "so far" in duration or "queued for" in duration or " s" in duration, duration
    # the time moves between polls while the run is queued or running
    page.wait_for_function("""first => document.querySelector('[data-run="duration"]').textContent !== first
        || !['queued', 'running'].includes(document.querySelector('#run-status').textContent)""", arg=duration,
                           timeout=10_000)
    _wait_finished(page)
    assert page.locator("#run-status").inner_text() == "succeeded", page.locator("#run-error").inner_text()

    chart = page.locator("#preview-chart")
    assert chart.is_visible() and chart.locator("canvas").count() == 1
    assert page.locator("#preview-chart-note").inner_text().startswith("Events per window start and operation")
    columns = [h.inner_text() for h in page.locator("#preview thead th").all()]
    with page.expect_download() as download:
        page.get_by_role("link", name="Download CSV").click()
    lines = open(download.value.path(), encoding="utf-8").read().splitlines()  # noqa: PTH123
    assert lines[0].split(",") == columns
    assert len(lines) - 1 == page.locator("#preview tbody tr").count()
    total = sum(int(line.split(",")[columns.index("events")]) for line in lines[1:])
    assert total == sum(events["ops"].values())
    screenshot(page, "spark-stats-run")

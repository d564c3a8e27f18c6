"""The detail page's charts: a new connector's chart with its first point shows the last minutes, not years, and a
stretch without reports is drawn as a gap, not a line across it."""

from __future__ import annotations

import pytest

from tests.browser.conftest import create_connector, wait_streaming
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

# The chart's time range (seconds) once it drew `points`: uPlot sets its scales on the next frame.
RANGE_AFTER = """([key, xs, ys]) => new Promise(done => {
  const u = window.cdcLive.charts[key].lag;
  u.setData([xs, ys]);
  requestAnimationFrame(() => requestAnimationFrame(() => done([u.scales.x.min, u.scales.x.max, Date.now() / 1000])));
})"""


@pytest.fixture
def detail(session, platform, mongo_rs):
    name = f"btchart{tagged_suffix()}"
    create_connector(platform, mongo_rs, name)
    _, page = session("viewer")
    page.goto(f"/connectors/{name}/")
    wait_streaming(page, name)
    page.wait_for_function("name => Object.keys(window.cdcLive.charts).some(k => k.startsWith(name + '/'))",
                           arg=name, timeout=30_000)
    return page, page.evaluate("name => Object.keys(window.cdcLive.charts).find(k => k.startsWith(name + '/'))", name)


def test_a_chart_with_only_its_first_point_shows_the_last_minutes(detail):
    page, key = detail
    now = int(page.evaluate("Date.now() / 1000"))
    low, high, at = page.evaluate(RANGE_AFTER, [key, [now], [None]])  # a new connector: one report, no lag yet
    assert at - 3600 <= low <= at and at - 5 <= high <= at + 5, (low, high, at)
    low, high, at = page.evaluate(RANGE_AFTER, [key, [], []])
    assert at - 3600 <= low <= at and at - 5 <= high <= at + 5, (low, high, at)


def test_a_stretch_without_reports_is_a_gap(detail):
    page, key = detail
    now = int(page.evaluate("Date.now() / 1000"))
    xs, ys = page.evaluate("([ts, vs]) => window.cdcLive.withGaps(ts, vs)",
                           [[now - 600, now - 599, now - 598, now - 5, now - 4], [10, 12, 11, 30, 31]])
    assert ys == [10, 12, 11, None, 30, 31], (xs, ys)
    assert xs[:3] == [now - 600, now - 599, now - 598] and now - 598 < xs[3] < now - 5
    # a live report after a silence: the chart's own series breaks there too
    page.evaluate("""key => { const u = window.cdcLive.charts[key].eps;
                              const t = Math.floor(Date.now() / 1000) - 120; u.setData([[t - 1, t], [5, 6]]); }""", key)
    page.wait_for_function("""key => { const ys = window.cdcLive.charts[key].eps.data[1];
                                       return ys.length >= 4 && ys.includes(null); }""", arg=key, timeout=15_000)
    eps = page.evaluate("key => window.cdcLive.charts[key].eps.data", key)
    gap = eps[1].index(None)
    assert eps[0][gap - 1] == now - 120 or eps[0][gap - 1] >= now - 121
    assert all(value is not None for value in eps[1][gap + 1:])

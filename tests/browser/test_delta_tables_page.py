"""A Delta sync job's tables page in a real browser against the real platform: an operator opens the job's *Synced
tables*, sees its table's rows, versions and last source position, picks an older version in the history and runs
the query the box then holds; the run (spark-submit of the `delta_query` template on the worker) shows the rows the
table had at that version."""

from __future__ import annotations

import json
import uuid

import pytest

from sparkjobs import delta_sync
from tests.browser.conftest import screenshot
from tests.spark.conftest import spark  # noqa: F401 - fixture
from tests.spark.delta_sync_process import job_folder, remove_folder

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

RUN_TIMEOUT_MS = 300_000
SCHEMA = ("_cdc_key string, _cdc_op string, _cdc_source_ts_ms long, _cdc_ord long, _cdc_txn_order long, "
          "_cdc_partition long, _cdc_offset long, _cdc_deleted boolean, document string")


def _merge(spark, path, topic, changes, batch_id):  # noqa: F811 - the fixture's session
    from pyspark.sql.types import StringType

    rows = spark.createDataFrame([(key, op, offset, 0, 0, 0, offset, op == "d", json.dumps({"_id": key}))
                                  for key, op, offset in changes], SCHEMA)
    metadata = json.dumps({"topic": topic, "batch_id": batch_id,
                           "offsets": {"0": max(offset for _, _, offset in changes)}})
    delta_sync.merge_topic(spark, path, rows, {"document": StringType()}, soft=False, txn=("app", batch_id, metadata))


@pytest.fixture
def synced(spark, stack, platform):  # noqa: F811
    """A delta_sync job whose table got 3 rows (version 1), then lost one and gained two (version 2)."""
    folder = job_folder()
    topic = f"browser.delta.{uuid.uuid4().hex[:8]}.orders"
    output = folder / "stream"
    path = delta_sync.table_path(str(output), topic)
    session = spark.newSession()
    _merge(session, path, topic, [("a", "c", 0), ("b", "c", 1), ("c", "c", 2)], 0)
    _merge(session, path, topic, [("a", "d", 3), ("d", "c", 4), ("e", "c", 5)], 1)
    name = f"sync-{uuid.uuid4().hex[:6]}"
    arguments = {"topics": [topic], "mode": "stream", "output_path": str(output),
                 "checkpoint_path": str(folder / "checkpoint"), "bootstrap_servers": stack.kafka_bootstrap}
    platform.django("from web.sparkjobs.models import JobDefinition, JobRun\n"
                    f"job = JobDefinition.objects.create(name={name!r}, template='delta_sync', mode='stream', "
                    f"topics=[{topic!r}])\n"
                    f"JobRun.objects.create(definition=job, template='delta_sync', mode='stream', "
                    f"status='cancelled', arguments={arguments!r})\n")
    yield {"name": name, "table": delta_sync.table_name(topic)}
    remove_folder(folder)


def test_the_page_shows_rows_and_versions_and_queries_an_older_version(session, synced):
    current, page = session("operator")
    page.goto(f"/spark/jobs/{synced['name']}/")
    page.get_by_role("link", name="Synced tables").click()
    page.wait_for_url(f"**/spark/jobs/{synced['name']}/tables/")
    table = page.locator(f'section[data-table="{synced["table"]}"]')
    assert table.locator('[data-fact="rows"]').inner_text() == "4"
    assert table.locator('[data-fact="version"]').inner_text() == "2"
    assert "batch 1, partition 0 offset 5" in table.locator('[data-fact="position"]').inner_text()
    versions = [[cell.inner_text() for cell in row.locator("td").all()[:4]]
                for row in table.locator("tbody tr").all()]
    assert [(v[0], v[2], v[3]) for v in versions] == [("2", "MERGE", "3"), ("1", "MERGE", "3"),
                                                       ("0", "CREATE TABLE", "—")]
    screenshot(page, "delta-tables")

    table.get_by_role("button", name="Query version 1").click()
    box = page.get_by_label("SQL", exact=True)
    assert "VERSION AS OF 1" in box.input_value()
    box.fill(f"SELECT _cdc_key FROM {synced['table']} VERSION AS OF 1 ORDER BY _cdc_key")  # noqa: S608 - its own table
    page.get_by_role("button", name="Run query").click()
    page.wait_for_url("**/spark/runs/*/")
    page.wait_for_function("() => ['succeeded', 'failed', 'cancelled'].includes("
                           "document.querySelector('#run-status').textContent)", timeout=RUN_TIMEOUT_MS)
    assert page.locator("#run-status").inner_text() == "succeeded", page.locator("#run-error").inner_text()
    keys = [row.locator("td").first.inner_text() for row in page.locator("#preview tbody tr").all()]
    assert keys == ["a", "b", "c"]

"""A Delta sync job's tables through the API and its page: rows, versions (as Delta's history has them), the last
source position from the commits' userMetadata and the lag behind the topic's end offsets (from the stream's
checkpoint once it has one); the query box launches a `delta_query` run over the job's own tables only (operators;
viewers are refused), and that run's arguments read the table at a chosen version."""

from __future__ import annotations

import json
import uuid

import pytest

from sparkjobs import delta_sync
from tests.api_support import client_for, make_user
from tests.spark.workload import KafkaMessage, create_topics, produce
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

SCHEMA = ("_cdc_key string, _cdc_op string, _cdc_source_ts_ms long, _cdc_ord long, _cdc_txn_order long, "
          "_cdc_partition long, _cdc_offset long, _cdc_deleted boolean, document string")


def _merge(spark, path, topic, changes, batch_id):
    from pyspark.sql.types import StringType

    rows = spark.createDataFrame([(key, op, offset, 0, 0, 0, offset, op == "d", json.dumps({"_id": key}))
                                  for key, op, offset in changes], SCHEMA)
    metadata = json.dumps({"topic": topic, "batch_id": batch_id,
                           "offsets": {"0": max(offset for _, _, offset in changes)}})
    delta_sync.merge_topic(spark, path, rows, {"document": StringType()}, soft=False, txn=("app", batch_id, metadata))


@pytest.fixture
def synced(spark, stack, tmp_path):
    """A topic of 5 records (one transaction: its end offset is 6) and a delta_sync job whose run merged offsets
    0-2 into its table: version 0 creates it, 1 inserts 2 rows, 2 inserts 1 and deletes 1."""
    from web.sparkjobs.models import JobDefinition, JobRun, RunStatus

    topic = f"delta.tables.{tagged_suffix()}.orders"
    create_topics(stack.kafka_bootstrap, [topic])
    produce(stack.kafka_bootstrap, [KafkaMessage(topic, f"k{n}".encode(), b"{}") for n in range(5)])
    output, checkpoint = tmp_path / "stream", tmp_path / "checkpoint"
    session = spark.newSession()
    path = delta_sync.table_path(str(output), topic)
    _merge(session, path, topic, [("a", "c", 0), ("b", "c", 1)], 0)
    _merge(session, path, topic, [("a", "d", 2), ("c", "c", 2)], 1)
    name = f"sync-{uuid.uuid4().hex[:6]}"
    definition = JobDefinition.objects.create(name=name, template="delta_sync", mode="stream", topics=[topic])
    arguments = {"topics": [topic], "mode": "stream", "output_path": str(output), "checkpoint_path": str(checkpoint),
                 "bootstrap_servers": stack.kafka_bootstrap}
    JobRun.objects.create(definition=definition, template="delta_sync", mode="stream", arguments=arguments,
                          status=RunStatus.CANCELLED)
    return {"session": session, "name": name, "topic": topic, "path": path, "checkpoint": checkpoint}


def test_the_tables_rows_versions_position_and_lag(synced, django_user_model):
    from delta.tables import DeltaTable

    user = make_user(django_user_model, "viewer")
    viewer = client_for(user)
    viewer.force_login(user)  # the pages read the session
    answer = viewer.get(f"/api/spark/jobs/{synced['name']}/tables/")
    assert answer.status_code == 200, answer.content
    [table] = answer.json()["tables"]
    history = DeltaTable.forPath(synced["session"], synced["path"]).history().collect()
    assert table["name"] == delta_sync.table_name(synced["topic"]) and table["topic"] == synced["topic"]
    assert table["rows"] == synced["session"].read.format("delta").load(synced["path"]).count() == 2
    assert table["version"] == 2
    assert [(v["version"], v["operation"]) for v in table["versions"]] == [
        (row["version"], row["operation"]) for row in sorted(history, key=lambda row: -row["version"])]
    assert [v["rows_affected"] for v in table["versions"][:2]] == [2, 2]
    assert table["last_position"] == {"version": 2, "batch_id": 1, "offsets": {"0": 2}}
    assert table["lag"] == {"total": 3, "partitions": [
        {"partition": 0, "end_offset": 6, "last_merged": 2, "position": 3, "lag": 3}]}

    # the stream committed a batch that read to the topic's end (past the transaction's marker): no lag
    for folder, text in (("offsets", f'v1\n{{"batchWatermarkMs":0}}\n{{"{synced["topic"]}":{{"0":6}}}}'),
                         ("commits", 'v1\n{"nextBatchWatermarkMs":0}')):
        (synced["checkpoint"] / folder).mkdir(parents=True)
        (synced["checkpoint"] / folder / "1").write_text(text)
    [table] = viewer.get(f"/api/spark/jobs/{synced['name']}/tables/").json()["tables"]
    assert table["lag"]["total"] == 0 and table["lag"]["partitions"][0]["position"] == 6

    page = viewer.get(f"/spark/jobs/{synced['name']}/tables/")
    assert page.status_code == 200
    text = page.content.decode()
    assert 'data-fact="rows">2<' in text and 'id="delta-query"' not in text  # a viewer sees no query box
    assert text.count("<tr data-version=") == 3


def test_the_query_box_runs_over_the_jobs_tables_only(synced, django_user_model, run_job, monkeypatch):
    from web.sparkjobs import services
    from web.sparkjobs.models import JobRun

    monkeypatch.setattr(services, "dispatch", lambda run_id: None)
    url = f"/api/spark/jobs/{synced['name']}/query/"
    sql = f"SELECT _cdc_key FROM {delta_sync.table_name(synced['topic'])} VERSION AS OF 1 ORDER BY 1"  # noqa: S608 - a test query over its own table
    assert client_for(make_user(django_user_model, "viewer")).post(url, {"sql": sql}, format="json").status_code == 403
    user = make_user(django_user_model, "operator")
    operator = client_for(user)
    operator.force_login(user)
    assert 'id="delta-query"' in operator.get(f"/spark/jobs/{synced['name']}/tables/").content.decode()
    answer = operator.post(url, {"sql": sql, "tables": {"x": "/etc"}, "output_path": "/tmp/elsewhere"},
                           format="json")
    assert answer.status_code == 202, answer.content
    run = JobRun.objects.get(pk=answer.json()["id"])
    assert run.template == "delta_query" and run.definition.name == synced["name"]
    assert run.arguments == {"tables": {delta_sync.table_name(synced["topic"]): synced["path"]}, "sql": sql}
    code, lines = run_job("delta_query", run.arguments)
    assert code == 0, lines[-1]
    assert lines[-1]["preview"]["rows"] == [["a"], ["b"]]

    refused = operator.post(url, {"sql": "SELECT 1; SELECT 2"}, format="json")
    assert refused.status_code == 400 and "statements" in refused.json()["detail"]
    from web.sparkjobs.models import JobDefinition

    JobDefinition.objects.create(name="not-a-sync", template="stats", topics=[synced["topic"]])
    not_sync = operator.get("/api/spark/jobs/not-a-sync/tables/")
    assert not_sync.status_code == 400 and "not a Delta sync job" in not_sync.json()["detail"]

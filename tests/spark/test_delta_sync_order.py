"""The Delta sync's MERGE follows source positions and Delta's transaction ids: a replayed batch (the same events
again) or an older event arriving later moves no row backwards, a batch id already committed for the stream is not
applied twice (also when the table was created or altered in it), and soft deletes keep the row with the delete's
time."""

from __future__ import annotations

import datetime
import random

import pytest
from bson import json_util

from sparkjobs.delta_sync import sync_batch, table_path
from tests.spark.workload import Clock, Collection, create_topics, encode, oid, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(5400)]


def _topic(stack, messages) -> str:
    create_topics(stack.kafka_bootstrap, [messages[0].topic])
    return messages[0].topic


def _table(spark, path, topic):
    return {row["_cdc_key"]: row for row in spark.read.format("delta").load(table_path(path, topic)).collect()}


def test_a_replayed_or_older_event_moves_no_row_backwards_and_soft_deletes_keep_the_time(spark, stack, run_job,
                                                                                          tmp_path):
    coll = Collection("shop", "orders", Clock())
    first = [coll.insert({"_id": 1, "n": 1}), coll.insert({"_id": 2, "n": 1}), coll.update(1, {"n": 2})]
    later = [coll.update(1, {"n": 3}), coll.delete(2)]
    prefix = f"spark.deltaorder.{oid(random.randrange(1 << 40))}"
    messages = encode(first + later, prefix)
    topic = _topic(stack, messages)
    produce(stack.kafka_bootstrap, messages)
    args = {"topics": [topic], "bootstrap_servers": stack.kafka_bootstrap, "mode": "stream", "delete_mode": "soft",
            "output_path": str(tmp_path / "tables"), "checkpoint_path": str(tmp_path / "checkpoint")}
    code, lines = run_job("delta_sync", args)
    assert code == 0, lines[-1]
    table = _table(spark, args["output_path"], topic)
    assert json_util.loads(table["1"]["document"]) == {"_id": 1, "n": 3}
    assert table["2"]["_cdc_deleted"] and table["2"]["_cdc_deleted_at"] == datetime.datetime.fromtimestamp(
        coll.clock.seconds, datetime.UTC).replace(tzinfo=None)
    position = table["1"]["_cdc_offset"]

    produce(stack.kafka_bootstrap, messages[:3])  # the first events again, later in the topic: a replay
    code, lines = run_job("delta_sync", args)
    assert code == 0, lines[-1]
    table = _table(spark, args["output_path"], topic)
    assert json_util.loads(table["1"]["document"]) == {"_id": 1, "n": 3}
    assert table["1"]["_cdc_offset"] == position and table["2"]["_cdc_deleted"]


def test_a_batch_id_already_committed_is_not_applied_twice(spark, stack, tmp_path):
    from sparkjobs.events import parse_events
    from sparkjobs.topics import TopicSource

    coll = Collection("shop", "items", Clock())
    prefix = f"spark.deltatxn.{oid(random.randrange(1 << 40))}"
    messages = encode([coll.insert({"_id": 1, "n": 1}), coll.update(1, {"n": 2})], prefix)
    topic = _topic(stack, messages)
    produce(stack.kafka_bootstrap, messages)
    path = str(tmp_path / "tables")

    def batch(end: int):
        source = TopicSource(topics=[topic], bootstrap_servers=stack.kafka_bootstrap,
                             starting_offsets={topic: {"0": 0}}, ending_offsets={topic: {"0": end}})
        return parse_events(source.read(spark))

    # batch 0 creates the table and inserts n=1; the same batch id again with the update is skipped by Delta
    sync_batch(spark, batch(1), output_path=path, app_id="stream-a", batch_id=0, soft=False)
    assert json_util.loads(_table(spark, path, topic)["1"]["document"]) == {"_id": 1, "n": 1}
    sync_batch(spark, batch(2), output_path=path, app_id="stream-a", batch_id=0, soft=False)
    assert json_util.loads(_table(spark, path, topic)["1"]["document"]) == {"_id": 1, "n": 1}
    sync_batch(spark, batch(2), output_path=path, app_id="stream-a", batch_id=1, soft=False)
    assert json_util.loads(_table(spark, path, topic)["1"]["document"]) == {"_id": 1, "n": 2}

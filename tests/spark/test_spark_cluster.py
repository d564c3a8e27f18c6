"""`devstack up spark` starts a standalone master and two workers from pyspark's own scripts, and a Delta sync
submitted with ``--master spark://…`` runs there: the master lists the application, and the table equals the
documents the events describe."""

from __future__ import annotations

import os
import random

import pytest
from bson import json_util

from devstack import spark_cluster
from tests.spark.delta_sync_process import SyncProcess, delta_rows, job_folder, remove_folder
from tests.spark.workload import Clock, Collection, create_topics, encode, oid, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(5400)]


@pytest.fixture(scope="module")
def cluster(stack):
    running = spark_cluster.process.is_running()
    spark_cluster.up()
    yield spark_cluster
    if not running and not os.environ.get("DEVSTACK_KEEP"):
        spark_cluster.down()


def test_the_cluster_has_a_master_and_two_workers(cluster):
    state = cluster.state()
    assert state["url"] == cluster.master_url()
    assert [worker["state"] for worker in state["workers"]].count("ALIVE") >= 2


def test_a_delta_sync_runs_on_the_standalone_cluster(spark, stack, cluster):
    coll = Collection("shop", "orders", Clock())
    records = [coll.insert({"_id": n, "qty": n}) for n in range(1, 21)]
    records += [coll.update(n, {"qty": n * 10}) for n in range(1, 6)]
    records += [coll.delete(n) for n in range(6, 9)]
    prefix = f"spark.cluster.{oid(random.randrange(1 << 40))}"
    messages = encode(records, prefix)
    topic = messages[0].topic
    create_topics(stack.kafka_bootstrap, [topic])
    produce(stack.kafka_bootstrap, messages)
    folder = job_folder()
    try:
        args = {"topics": [topic], "bootstrap_servers": stack.kafka_bootstrap, "mode": "stream",
                "output_path": str(folder / "tables"), "checkpoint_path": str(folder / "checkpoint"),
                "trigger": "available_now"}
        job = SyncProcess(args, master=cluster.master_url())
        final = job.finish()
        session = next(line for line in job.lines if line.get("event") == "session")
        assert session["master"] == cluster.master_url()
        apps = {app["id"]: app for key in ("activeapps", "completedapps") for app in cluster.state().get(key, [])}
        assert session["app_id"] in apps, (session["app_id"], sorted(apps))
        assert final["tables"][topic]["rows"] == 17
        table = delta_rows(spark, args["output_path"], topic, "_cdc_key")
        assert {key: json_util.loads(row["document"]) for key, row in table.items()} == {
            str(_id): document for _id, document in coll.docs.items()}
    finally:
        remove_folder(folder)

"""Offsets of a sharded cluster captured through mongos (`mongodb.connection.mode=sharded`): the pipeline keeps one
record keyed `["<connector>",{"server_id":"<topic.prefix>"}]`, and /api/ and /connect/ read, show and reset that
record, as does the admin console's offsets page, so a reset to a timestamp (API) or to a new snapshot (admin
page) is what the pipeline obeys at its next start."""

from __future__ import annotations

import json

import pytest
from bson import Timestamp
from django.contrib.auth.models import Group
from django.test import Client
from pymongo import MongoClient
from rest_framework.test import APIClient

from devstack.mongo.sharded_handle import start_sharded_cluster
from tests.api_support import create_connector
from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import RunningConnector, values, wait_for_events
from tests.topic_cleanup import tagged_suffix
from web.connectors import offsets as offset_views
from web.connectors.definitions import engine_config
from web.connectors.models import DesiredState

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def sharded():
    handle = start_sharded_cluster(shards=2, members=3, election_timeout=0.3, noop_interval=0.5)
    yield handle
    handle.stop()


@pytest.fixture
def admin_user(django_user_model, stack):
    user = django_user_model.objects.create_user("sharded-offsets-admin", is_staff=True)
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    return user


@pytest.fixture
def admin(admin_user):
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


@pytest.fixture
def admin_browser(admin_user):
    client = Client()
    client.force_login(admin_user)
    return client


def run_until(connector, bootstrap: str, topic: str, count: int) -> list[dict]:
    """Runs the connector's pipeline until `topic` holds `count` events, then stops it."""
    running = RunningConnector(engine_config(connector), bootstrap).start()
    try:
        return values(wait_for_events(bootstrap, topic, count, timeout=90))
    finally:
        running.finish(60)


def created_ids(events: list[dict]) -> list[int]:
    return [json.loads(e["after"])["_id"] for e in events if e["op"] == "c"]


def test_reset_a_sharded_connector_to_a_timestamp_and_to_a_new_snapshot(admin, admin_browser, stack, sharded,
                                                                         unique_name):
    name = "so" + unique_name.replace("-", "")[-12:]
    client = MongoClient(sharded.uri)
    client.admin.command("enableSharding", name, primaryShard="shard0")
    client.admin.command("shardCollection", f"{name}.docs", key={"k": 1})
    client.admin.command("split", f"{name}.docs", middle={"k": 100})
    client.admin.command("moveChunk", f"{name}.docs", find={"k": 100}, to="shard1")
    docs = client[name].docs
    docs.insert_many([{"_id": i, "k": i * 50} for i in range(4)])  # two documents on each shard
    connector = create_connector(
        name, state=DesiredState.STOPPED, **{
            "topic.prefix": name, "mongodb.connection.string": sharded.uri,
            "collection.include.list": f"{name}.docs", "poll.interval.ms": 100,
            "topic.creation.default.partitions": 1,
            "offset.storage.topic": f"cdc.offsets.test-{tagged_suffix()}"})
    bootstrap, topic = stack.kafka_bootstrap, f"{name}.{name}.docs"

    # First run: a snapshot of the four documents, then batch A (ids 10..12), cut-off T, batch B (ids 20..22).
    running = RunningConnector(engine_config(connector), bootstrap).start()
    try:
        running.wait_streaming(timeout=90)
        with client.start_session() as session:
            for i in (10, 11, 12):
                docs.insert_one({"_id": i, "k": i * 10}, session=session)
            cutoff = session.operation_time
            for i in (20, 21, 22):
                docs.insert_one({"_id": i, "k": i * 10}, session=session)
        wait_for_events(bootstrap, topic, 10, timeout=90)
    finally:
        running.finish(60)

    url = f"/api/connectors/{name}/offsets/"
    (shown,) = admin.get(url).json()["offsets"]
    assert shown["replica_set"] == name and shown["partition"] == {"server_id": name}
    assert shown["resume_token"] is not None and shown["pending_reset"] is None
    listed = admin.get(f"/connect/connectors/{name}/offsets").json()["offsets"]
    assert [entry["partition"] for entry in listed] == [{"server_id": name}]

    reset = admin.post(f"{url}reset/", {"mode": "timestamp", "timestamp": {"t": cutoff.time, "i": cutoff.inc}},
                       format="json")
    assert reset.status_code == 200, reset.json()
    (record,) = offset_views.store_for(connector).load(name).values()
    assert record.key == json.dumps([name, {"server_id": name}], separators=(",", ":")).encode()
    assert record.startup["mode"] == "timestamp" and record.startup["timestamp"] == Timestamp(cutoff.time,
                                                                                             cutoff.inc)

    # Second run: batch B again (the changes after T), nothing of batch A, no snapshot.
    events = run_until(connector, bootstrap, topic, 13)
    assert created_ids(events) == [10, 11, 12, 20, 21, 22, 20, 21, 22]
    assert [e["op"] for e in events].count("r") == 4
    assert admin.get(url).json()["offsets"][0]["pending_reset"] is None  # the pipeline obeyed and cleared it

    # A new snapshot, asked on the admin console's offsets page: the third run reads all ten documents again.
    page_url = f"/admin/connectors/connector/{connector.pk}/offsets/"
    token = admin.get(url).json()["offsets"][0]["resume_token"]["_data"]
    page = admin_browser.get(page_url).content.decode()
    assert f"<td>{name}</td>" in page and token in page
    done = admin_browser.post(page_url, {"mode": "snapshot", "confirm": "1"})
    assert done.status_code == 302, done.content.decode()[-2000:]
    assert admin.get(url).json()["offsets"][0]["pending_reset"]["mode"] == "snapshot"
    events = run_until(connector, bootstrap, topic, 23)
    assert [e["op"] for e in events].count("r") == 4 + 10
    assert sorted(json.loads(e["after"])["_id"] for e in events[13:] if e["op"] == "r") == sorted(
        [0, 1, 2, 3, 10, 11, 12, 20, 21, 22])
    assert len(read_topic(bootstrap, topic)) == 23
    client.close()


def test_a_reset_before_the_first_run_is_written_under_the_key_the_pipeline_reads(admin, stack, sharded,
                                                                                   unique_name):
    """No offset yet: the control plane asks mongos how the pipeline keys its offset, so a reset to `latest` is
    obeyed and the first run streams from now instead of taking the initial snapshot."""
    name = "sn" + unique_name.replace("-", "")[-12:]
    client = MongoClient(sharded.uri)
    docs = client[name].docs
    docs.insert_many([{"_id": i, "k": i} for i in range(3)])
    connector = create_connector(
        name, state=DesiredState.STOPPED, **{
            "topic.prefix": name, "mongodb.connection.string": sharded.uri, "snapshot.mode": "initial",
            "collection.include.list": f"{name}.docs", "poll.interval.ms": 100,
            "topic.creation.default.partitions": 1,
            "offset.storage.topic": f"cdc.offsets.test-{tagged_suffix()}"})
    reset = admin.post(f"/api/connectors/{name}/offsets/reset/", {"mode": "latest", "replica_sets": [name]},
                       format="json")
    assert reset.status_code == 200, reset.json()
    assert [entry["partition"] for entry in admin.get(f"/api/connectors/{name}/offsets/").json()["offsets"]] == [
        {"server_id": name}]

    bootstrap, topic = stack.kafka_bootstrap, f"{name}.{name}.docs"
    running = RunningConnector(engine_config(connector), bootstrap).start()
    try:
        running.wait_streaming(timeout=90)
        docs.insert_one({"_id": 10, "k": 10})
        events = values(wait_for_events(bootstrap, topic, 1, timeout=90))
    finally:
        running.finish(60)
    assert [(e["op"], json.loads(e["after"])["_id"]) for e in events] == [("c", 10)]
    client.close()

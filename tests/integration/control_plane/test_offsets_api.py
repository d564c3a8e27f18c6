"""Offsets through /api/ and /connect/ against the real Kafka and Redis: reading positions (resume token decoded to
cluster time), resets refused with 409 while the pipeline runs, stop=true stopping it first through the control
channel, KIP-875 PATCH/DELETE, and an audit entry for each change."""

from __future__ import annotations

import json
import threading

import pytest
from bson import Timestamp
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from connectors.kafka import OffsetRecord
from tests.api_support import create_connector
from tests.topic_cleanup import tagged_suffix
from web.connectors import offsets as offset_views
from web.connectors.models import AuditEntry, Connector, DesiredState
from workers import control
from workers.leases import Lease, lease_key

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
TOKEN = {"_data": "8265A1B2C3000000072B022C0100296E5A1004ABCDEF"}  # cluster time 0x65A1B2C3 = 1705095875, inc 7


@pytest.fixture
def admin(django_user_model, stack):
    user = django_user_model.objects.create_user("offsets-admin")
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def connector(unique_name, stack):
    name = unique_name[-40:].strip("-")
    return create_connector(name, state=DesiredState.RUNNING,
                            **{"offset.storage.topic": f"cdc.offsets.test-{tagged_suffix()}"})


def stored(connector) -> dict[str, OffsetRecord]:
    return offset_views.store_for(connector).load(connector.name)


def hold_lease_until_stopped(name: str, replica_set: str) -> threading.Thread:
    """Plays a running pipeline: holds the lease and releases it when a stop command arrives."""
    lease = Lease(control.client(), lease_key(name, replica_set), "fake-worker", 10_000)
    assert lease.acquire()
    pubsub = control.client().pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(control.control_channel(name))

    def run():
        try:
            for _ in range(100):
                message = pubsub.get_message(timeout=0.1)
                if message and json.loads(message["data"])["command"] in ("stop", "pause"):
                    break
        finally:
            pubsub.close()
            lease.release()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_read_and_reset_offsets(admin, connector):
    name, url = connector.name, f"/api/connectors/{connector.name}/offsets/"
    assert admin.get(url).json()["offsets"] == []
    offset_views.store_for(connector).write(OffsetRecord(name, "rs0", resume_token=TOKEN, cluster_time=None,
                                                         snapshot={"done": ["inventory.orders"]}))
    shown = admin.get(url).json()
    assert shown["topic"].startswith("cdc.offsets.test-")
    (position,) = shown["offsets"]
    assert position["replica_set"] == "rs0" and position["resume_token"] == TOKEN
    assert position["cluster_time"] == {"t": 0x65A1B2C3, "i": 7, "iso": "2024-01-12T21:44:35Z"}
    assert position["snapshot"] == {"done": ["inventory.orders"]} and position["pending_reset"] is None

    # Desired state running: refused, nothing written.
    refused = admin.post(f"{url}reset/", {"mode": "timestamp", "timestamp": "2024-01-01T00:00:00Z"}, format="json")
    assert refused.status_code == 409, refused.json()
    assert stored(connector)["rs0"].resume_token == TOKEN

    # A pipeline holds its lease: stop=true tells it to stop, waits for the lease, then writes the reset.
    pipeline = hold_lease_until_stopped(name, "rs0")
    reset = admin.post(f"{url}reset/?stop=true", {"mode": "timestamp", "timestamp": 1704067200000}, format="json")
    pipeline.join(5)
    assert reset.status_code == 200, reset.json()
    assert Connector.objects.get(name=name).desired_state == DesiredState.STOPPED
    record = stored(connector)["rs0"]
    assert record.startup["mode"] == "timestamp" and record.startup["timestamp"] == Timestamp(1704067200, 0)
    assert record.startup["requested_by"] == "offsets-admin" and record.resume_token is None
    assert admin.get(url).json()["offsets"][0]["pending_reset"]["timestamp"]["iso"] == "2024-01-01T00:00:00Z"

    # Stopped, but a pipeline still holds its lease (finishing its last batch): still refused without stop=true.
    lease = Lease(control.client(), lease_key(name, "rs0"), "zombie", 5_000)
    assert lease.acquire()
    try:
        assert admin.post(f"{url}reset/", {"mode": "latest"}, format="json").status_code == 409
    finally:
        lease.release()

    for body, check in [
        ({"mode": "token", "resume_token": TOKEN}, lambda r: r.startup == {**r.startup, "mode": "token",
                                                                           "token": TOKEN}),
        ({"mode": "latest"}, lambda r: r.startup["mode"] == "latest"),
        ({"mode": "snapshot", "replica_sets": ["rs0"]}, lambda r: r.startup["mode"] == "snapshot"),
    ]:
        response = admin.post(f"{url}reset/", body, format="json")
        assert response.status_code == 200, response.json()
        assert check(stored(connector)["rs0"]), body
    assert admin.post(f"{url}reset/", {"mode": "initial"}, format="json").status_code == 200
    assert stored(connector) == {}

    actions = set(AuditEntry.objects.filter(target=f"connector:{name}").values_list("action", flat=True))
    assert {"connector.stop", "offsets.reset.timestamp", "offsets.reset.token", "offsets.reset.latest",
            "offsets.reset.snapshot", "offsets.reset.initial"} <= actions
    entry = AuditEntry.objects.filter(action="offsets.reset.timestamp").get()
    assert entry.before["rs0"]["resume_token"] == TOKEN and entry.username == "offsets-admin"


def test_reset_needs_a_known_replica_set(admin, connector):
    admin.post(f"/api/connectors/{connector.name}/stop/")
    response = admin.post(f"/api/connectors/{connector.name}/offsets/reset/", {"mode": "latest"}, format="json")
    assert response.status_code == 400 and "replica_set" in response.json()["detail"]
    named = admin.post(f"/api/connectors/{connector.name}/offsets/reset/",
                       {"mode": "latest", "replica_sets": ["rs9"]}, format="json")
    assert named.status_code == 200
    assert set(stored(connector)) == {"rs9"}


def test_connect_offsets_kip875(admin, connector):
    name, url = connector.name, f"/connect/connectors/{connector.name}/offsets"
    offset_views.store_for(connector).write(OffsetRecord(name, "rs0", resume_token=TOKEN,
                                                         cluster_time=Timestamp(1705096899, 7)))
    listed = admin.get(url).json()
    assert listed == {"offsets": [{"partition": {"rs": "rs0"},
                                   "offset": {"resume_token": TOKEN, "cluster_time": {"t": 1705096899, "i": 7},
                                              "snapshot": None}}]}
    assert admin.patch(url, listed, format="json").status_code == 400  # not STOPPED
    assert admin.put(f"/connect/connectors/{name}/stop").status_code == 204
    unknown = admin.patch(url, {"offsets": [{"partition": {"rs": "rs1"}, "offset": {"resume_token": TOKEN}}]},
                          format="json")
    assert unknown.status_code == 400 and "Unknown partition(s) 'rs1'" in unknown.json()["message"]
    short = {"offsets": [{"partition": {"rs": "rs0"}, "offset": {"resume_token": {"_data": "82AA"}}}]}
    garbage = admin.patch(url, short, format="json")
    assert garbage.status_code == 400 and "does not start with a cluster time" in garbage.json()["message"]
    later = {"_data": "8265A1B2C4000000012B022C0100296E5A1004ABCDEF"}
    changed = {"offsets": [{"partition": {"rs": "rs0"}, "offset": {"resume_token": later,
                                                                   "cluster_time": None, "snapshot": None}}]}
    altered = admin.patch(url, changed, format="json")
    assert altered.status_code == 200, altered.json()
    assert {rs: r.resume_token for rs, r in stored(connector).items()} == {"rs0": later}
    removed = admin.delete(url)
    assert removed.json() == {"message": "The offsets for this connector have been reset successfully"}
    assert admin.get(url).json() == {"offsets": []}
    assert AuditEntry.objects.filter(action="offsets.alter", source="connect").count() == 2


def test_notify_reaches_a_subscriber_within_a_second(stack, unique_name):
    pubsub = control.client().pubsub()
    pubsub.subscribe(control.control_channel(unique_name))
    confirmed = pubsub.get_message(timeout=30)  # subscribed once Redis confirms it, however loaded the machine
    assert confirmed and confirmed["type"] == "subscribe", confirmed
    assert control.notify(unique_name, "snapshot", {"collections": ["a.b"]}, replica_set="rs0")
    message = pubsub.get_message(timeout=1.0)
    pubsub.close()
    body = json.loads(message["data"])
    assert body["command"] == "snapshot" and body["replica_set"] == "rs0"
    assert body["payload"] == {"collections": ["a.b"]} and body["connector"] == unique_name


def test_notify_never_raises_without_redis(monkeypatch, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    assert control.notify("x", "stop") is False


class _OtherLayoutRecord:
    """An offset record of another source's key layout (PostgreSQL's and MariaDB's `["<name>", {"server": …}]`)."""

    def __init__(self, connector: str):
        self.key = json.dumps([connector, {"server": connector}]).encode()

    def to_value(self) -> bytes:
        return b'{"lsn": 123, "txId": 7}'


def test_offsets_of_other_sources_in_a_shared_topic_are_skipped_silently(admin, connector, caplog):
    """A viewer's read of one connector's offsets writes no log line per record of other connectors."""
    store = offset_views.store_for(connector)
    store.write(OffsetRecord(connector.name, "rs0", resume_token=TOKEN))
    for number in range(3):
        other = f"{connector.name}-pg{number}"
        store.write_partition(other, other, _OtherLayoutRecord(other))
    caplog.set_level("DEBUG", logger="connectors.kafka.offsets")
    shown = admin.get(f"/api/connectors/{connector.name}/offsets/").json()
    assert [position["replica_set"] for position in shown["offsets"]] == ["rs0"]
    assert [r.getMessage() for r in caplog.records if r.name == "connectors.kafka.offsets"] == []
    everything = store.load_all()
    assert set(everything) == {(connector.name, "rs0")}
    lines = [r for r in caplog.records if r.name == "connectors.kafka.offsets"]
    assert len(lines) == 1 and lines[0].levelname == "DEBUG" and "ignored 3 record(s)" in lines[0].getMessage()

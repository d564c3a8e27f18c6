"""An offset reset to a timestamp replays exactly the changes after it, through the real control plane.

A connector created through the REST API streams through a real Celery worker and beat (subprocesses over a
temporary database, tests/platform_processes.py). Batch A of changes ends with a transaction whose commit time T is
taken from the writing session (`operationTime`); batch B follows and starts with a transaction too. After both
are streamed, `POST …/offsets/reset/?stop=true {"mode": "timestamp", "timestamp": {"t", "i"} = T}` stops the
pipeline and writes the reset; `resume` starts it again. A read_committed consumer from the topic's end at the
reset ("the marker") up to a sentinel written afterwards sees batch B's events once more, identical and in order,
and nothing of batch A: the changes at exactly T (the whole transaction) are not replayed, the first change after
T is (docs/offsets.md, "Startup instructions").
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pymongo
import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import topic_exists
from tests.platform_processes import Platform
from tests.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REDIS_DB = 11  # apart from a running demo (0), the snapshot-chunk test (10) and the other process tests (12-15)


class Api:
    def __init__(self, base_url: str, token: str):
        self.base_url, self.token = base_url, token

    def __call__(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        request = urllib.request.Request(  # noqa: S310 - our daphne, over http
            self.base_url + path, method=method, data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json",
                     "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - our daphne
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
    futures = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in partitions})
    return {tp.partition: future.result().offset for tp, future in futures.items()}


def read_from(bootstrap: str, topic: str, start: dict[int, int]) -> list[tuple[bytes | None, bytes | None]]:
    """(key, value) of every committed record after `start`, up to the topic's end now."""
    ends = end_offsets(bootstrap, topic)
    pending = {p: end for p, end in ends.items() if end > start.get(p, 0)}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reset-replay-reader",
                         "enable.auto.commit": False, "isolation.level": "read_committed", "fetch.wait.max.ms": 50})
    found = []
    try:
        consumer.assign([TopicPartition(topic, p, start.get(p, 0)) for p in pending])
        deadline = time.monotonic() + 30
        while pending:
            assert time.monotonic() < deadline, f"could not read {topic} to its end"
            for message in consumer.consume(500, 0.005):
                assert message.error() is None, message.error()
                found.append((message.key(), message.value()))
            for position in consumer.position([TopicPartition(topic, p) for p in list(pending)]):
                if position.offset >= pending[position.partition]:
                    del pending[position.partition]
    finally:
        consumer.close()
    return found


def change(record: tuple[bytes | None, bytes | None]) -> tuple:
    """A record without the time it was produced (the envelope's top-level ts_ms): what a replay must repeat."""
    key, value = record
    if value is None:
        return key, None
    envelope = json.loads(value)
    envelope.pop("ts_ms")
    return key, envelope


def doc_id(record: tuple[bytes | None, bytes | None]) -> str:
    return json.loads(json.loads(record[0])["id"])  # the key's id is the _id in extended JSON


@pytest.fixture
def platform(stack, tmp_path):
    processes = Platform(stack, tmp_path, REDIS_DB)
    processes.migrate()
    token = processes.django(
        "from django.contrib.auth.models import Group, User\n"
        "from rest_framework.authtoken.models import Token\n"
        "user = User.objects.create_user('replay-admin')\n"
        "user.groups.add(Group.objects.get(name='admin'))\n"
        "print(Token.objects.create(user=user).key)\n"
    ).strip().splitlines()[-1]
    processes.start_worker("worker", queues="streaming,snapshot,default")
    processes.start_beat()
    processes.start_web()
    processes.api = Api(processes.base_url, token)
    yield processes
    processes.stop()


def test_reset_to_timestamp_replays_exactly_the_changes_after_it(platform, mongo_rs, unique_name, stack):
    api, bootstrap = platform.api, stack.kafka_bootstrap
    name = "rr" + unique_name.replace("-", "")[-12:]
    code, body = api("POST", "/api/connectors/", {
        "name": name, "topic_prefix": name, "connection_string": mongo_rs.uri,
        "config": {"database.include.list": name, "snapshot.mode": "never", "capture.mode": "change_streams",
                   "poll.interval.ms": 100, "topic.creation.default.partitions": 1,
                   "offset.storage.topic": f"{name}.offsets"},
    })
    assert code == 201, body
    client = pymongo.MongoClient(mongo_rs.uri)
    db = client[name]
    topic, probe_topic = f"{name}.{name}.docs", f"{name}.{name}.probe"

    # snapshot.mode=never streams from the moment the change stream opens: probe until it is open
    probes = iter(range(10_000))

    def streaming() -> bool:
        db.probe.insert_one({"_id": next(probes)})
        return topic_exists(bootstrap, probe_topic) and bool(read_topic(bootstrap, probe_topic))

    wait_for(streaming, 90, "the pipeline to stream (a probe document in Kafka)")

    with client.start_session() as session:
        # batch A: inserts, updates, deletes, and last a transaction committed at T
        for i in range(20):
            db.docs.insert_one({"_id": f"a{i}", "n": i}, session=session)
        for i in range(0, 20, 3):
            db.docs.update_one({"_id": f"a{i}"}, {"$inc": {"n": 100}}, session=session)
        for i in range(0, 20, 5):
            db.docs.delete_one({"_id": f"a{i}"}, session=session)
        with session.start_transaction():
            for i in range(3):
                db.docs.insert_one({"_id": f"a-txn{i}"}, session=session)
        cutoff = session.operation_time
        # batch B: a transaction first (the first changes after T), then inserts, updates, deletes
        with session.start_transaction():
            db.docs.insert_one({"_id": "b-txn0"}, session=session)
            db.docs.update_one({"_id": "a1"}, {"$set": {"by": "b"}}, session=session)
        assert session.operation_time > cutoff
        for i in range(15):
            db.docs.insert_one({"_id": f"b{i}", "n": i}, session=session)
        for i in range(0, 15, 2):
            db.docs.update_one({"_id": f"b{i}"}, {"$set": {"even": True}}, session=session)
        for i in range(0, 15, 4):
            db.docs.delete_one({"_id": f"b{i}"}, session=session)
        db.docs.delete_one({"_id": "a2"}, session=session)
    a_events = 20 + 7 + 4 * 2 + 3  # deletes are followed by a tombstone
    b_events = 2 + 15 + 8 + 4 * 2 + 2

    first = wait_for(lambda: (lambda r: r if len(r) >= a_events + b_events else None)(read_topic(bootstrap, topic)),
                     60, "batches A and B in Kafka")
    first = [(r.key, r.value) for r in first]
    assert len(first) == a_events + b_events, "more events than changes in the first pass"
    batch_a, batch_b = first[:a_events], first[a_events:]
    assert [doc_id(r) for r in batch_a[-3:]] == ["a-txn0", "a-txn1", "a-txn2"]
    assert doc_id(batch_b[0]) == "b-txn0"

    code, body = api("POST", f"/api/connectors/{name}/offsets/reset/?stop=true",
                     {"mode": "timestamp", "timestamp": {"t": cutoff.time, "i": cutoff.inc}})
    assert code == 200, body
    assert body["offsets"][0]["pending_reset"]["timestamp"] == {
        "t": cutoff.time, "i": cutoff.inc, "iso": body["offsets"][0]["pending_reset"]["timestamp"]["iso"]}
    marker = end_offsets(bootstrap, topic)
    code, shown = api("GET", f"/api/connectors/{name}/offsets/")
    assert code == 200 and shown["offsets"][0]["pending_reset"]["mode"] == "timestamp", shown

    code, body = api("POST", f"/api/connectors/{name}/resume/")
    assert code == 202, body
    # the replay must be complete before a change written now can be committed after it
    wait_for(lambda: len(read_from(bootstrap, topic, marker)) >= len(batch_b), 90, "the replay of batch B")
    db.docs.insert_one({"_id": "sentinel"})
    replay = wait_for(lambda: (lambda r: r if r and doc_id(r[-1]) == "sentinel" else None)(
        read_from(bootstrap, topic, marker)), 60, "the sentinel after the replay")

    replayed = [change(r) for r in replay[:-1]]
    assert replayed == [change(r) for r in batch_b], "the replay after the reset is not exactly batch B"
    assert not {doc_id(r) for r in replay} & {"a-txn0", "a-txn1", "a-txn2"}, "changes at T were replayed"
    code, shown = api("GET", f"/api/connectors/{name}/offsets/")
    assert code == 200 and shown["offsets"][0]["pending_reset"] is None, shown

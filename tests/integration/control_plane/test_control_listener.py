"""The pipeline's control listener (workers.managed) against the real Redis, Kafka and replica set: no command can
stop it from listening, every command with a request id gets an answer, snapshot requests end done with what they
read, and the supervisor revokes the lease of a pipeline that holds one without listening."""

from __future__ import annotations

import json
import queue
import threading
import time

import pymongo
import pytest
import redis

from connectors.mongodb.topology import discover
from tests.integration.pipeline_harness import connector_config
from workers import control, leases
from workers.managed import ManagedPipeline

pytestmark = pytest.mark.integration


@pytest.fixture
def redis_client(stack):
    client = redis.Redis.from_url(stack.redis_url)
    yield client
    client.close()


class Answers:
    """The acknowledge callback: answers arrive on a queue the test waits on (no sleeping)."""

    def __init__(self):
        self.queue: queue.Queue = queue.Queue()

    def __call__(self, kind, request_id, status, reason):
        self.queue.put((kind, request_id, status, reason))

    def next(self, timeout: float = 30) -> tuple:
        return self.queue.get(timeout=timeout)

    def until(self, status: str, timeout: float = 60) -> tuple:
        deadline = time.monotonic() + timeout
        while True:
            answer = self.next(max(0.1, deadline - time.monotonic()))
            if answer[2] == status:
                return answer


def start(config, stack, redis_client, answers, **extra) -> tuple[ManagedPipeline, threading.Thread, dict]:
    (replica_set,) = discover(config.mongo_client_options()).replica_sets
    managed = ManagedPipeline(config, replica_set, stack.kafka_bootstrap, redis_client, "worker-t",
                              lease_ttl_ms=3000, acknowledge=answers, **extra)
    outcome: dict = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("outcome", managed.run()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not (getattr(managed, "pipeline", None) and managed.pipeline.metrics.connected):
        assert time.monotonic() < deadline and thread.is_alive(), outcome
        time.sleep(0.05)
    return managed, thread, outcome


def send(redis_client, name: str, command: str, payload: dict) -> None:
    message = {"command": command, "connector": name, "replica_set": None, "payload": payload}
    assert redis_client.publish(control.control_channel(name), json.dumps(message)) >= 1


def test_a_refused_snapshot_does_not_stop_the_listener(stack, mongo_rs, redis_client, unique_name):
    name = "cl" + unique_name.replace("-", "")[-12:]
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__mode="never")
    answers = Answers()
    managed, thread, outcome = start(config, stack, redis_client, answers)
    assert redis_client.exists(control.listener_key(name, managed.partition.name))

    send(redis_client, name, "snapshot", {"request_id": 7, "collections": [f"{name}.docs"]})
    kind, request_id, status, reason = answers.next()
    assert (kind, request_id, status) == ("snapshot", 7, "failed")
    assert "signal.data.collection" in reason

    send(redis_client, name, "snapshot", {"collections": "not a list of names", "request_id": "x"})  # garbage
    redis_client.publish(control.control_channel(name), b"\xff not json")

    send(redis_client, name, "pause", {"request_id": 8})
    thread.join(10)
    assert not thread.is_alive(), "the pause was not heard"
    assert outcome["outcome"].status == "stopped" and outcome["outcome"].reason == "pause"
    assert answers.next() == ("control", 8, "done", f"{managed.partition.name} stopped after committing its position")
    assert not redis_client.exists(control.listener_key(name, managed.partition.name))


def test_a_snapshot_request_ends_done_with_the_documents_read(stack, mongo_rs, redis_client, unique_name):
    name = "cs" + unique_name.replace("-", "")[-12:]
    database = pymongo.MongoClient(mongo_rs.uri)[name]
    database.docs.insert_many([{"_id": i, "v": i} for i in range(30)])
    config = connector_config(name, mongo_rs.uri, database__include__list=name, snapshot__mode="never",
                              signal__data__collection=f"{name}.signals",
                              incremental__snapshot__chunk__size=10)
    answers = Answers()
    managed, thread, _ = start(config, stack, redis_client, answers, config_version="v1")
    try:
        # asked of a newer configuration: left to the restarted pipeline (no answer), the next one is taken
        send(redis_client, name, "snapshot", {"request_id": 10, "collections": [f"{name}.docs"],
                                              "config_version": "v2"})
        send(redis_client, name, "snapshot", {"request_id": 11, "collections": [f"{name}.docs"],
                                              "config_version": "v1"})
        assert answers.next()[:3] == ("snapshot", 11, "running")
        kind, request_id, status, reason = answers.until("done")
        assert (kind, request_id) == ("snapshot", 11)
        assert reason == f"snapshot done ({name}.docs: 30 documents)"

        send(redis_client, name, "snapshot", {"request_id": 12, "collections": [f"{name}.missing"]})
        assert answers.next()[:3] == ("snapshot", 12, "running")
        kind, request_id, status, reason = answers.next(timeout=60)
        assert (request_id, status) == (12, "failed") and "does it exist" in reason
    finally:
        managed.request_stop("test over")
        thread.join(10)


def test_the_supervisor_revokes_the_lease_of_a_pipeline_that_stopped_listening(redis_client, unique_name, db,
                                                                                settings, stack):
    from workers.supervisor import deaf_pipelines

    settings.REDIS_URL = stack.redis_url
    name = "deaf" + unique_name.replace("-", "")[-12:]
    lease = leases.Lease(redis_client, leases.lease_key(name, "rs0"), "worker-x", ttl_ms=60_000)
    assert lease.acquire()
    running = control.running_pipelines(name)
    assert running == {"rs0": "worker-x"}
    assert deaf_pipelines(name, running) == []  # first sighting: it may have just started
    redis_client.set(control.listener_key(name, "rs0"), "worker-x", px=5000)
    assert deaf_pipelines(name, running) == []  # listening: the suspicion is dropped
    assert deaf_pipelines(name, running) == []
    redis_client.delete(control.listener_key(name, "rs0"))
    assert deaf_pipelines(name, running) == []
    assert deaf_pipelines(name, running) == ["rs0"]
    assert control.running_pipelines(name) == {}
    assert not lease.renew()  # its keeper finds it lost and stops the pipeline

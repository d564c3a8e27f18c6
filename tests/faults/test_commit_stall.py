"""A broker that stalls in the middle of commit_transaction (SIGSTOP at the Nth commit, SIGCONT later): the commit's
outcome is unknown, and the batch must be neither lost nor written twice for read_committed consumers.

The sink keeps calling commit_transaction while librdkafka reports a retriable error; past its commit timeout it
fences its producer (a new one with the same transactional id completes or aborts the pending transaction) and
reads the offsets topic / chunk markers back to learn whether the batch committed, writing it again only if not.
"""

from __future__ import annotations

import itertools
import json
import threading
import time

import pymongo
import pytest
from confluent_kafka import Producer

from connectors.kafka.errors import (
    CommitOutcomeUnknownError,
    SinkError,
    SinkFatalError,
    SinkFencedError,
    SinkRetriableError,
)
from connectors.kafka.offset_record import OffsetRecord
from connectors.kafka.offsets import OffsetStore
from connectors.kafka.sink import PIPELINE_LANES, OutMessage, TransactionalSink
from devstack.private_kafka import private_kafka
from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import RunningConnector, connector_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FREEZE_SECONDS = 8.0


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with private_kafka(tmp_path_factory.mktemp("kafka")) as kafka:
        yield kafka


class FreezeAtCommit:
    """before_commit hook: the Nth commit (counted over every sink) starts with the broker frozen."""

    def __init__(self, broker, nth: int, seconds: float = FREEZE_SECONDS):
        self.broker, self.nth, self.seconds = broker, nth, seconds
        self.calls = itertools.count(1)
        self.frozen = threading.Event()
        self.timer: threading.Timer | None = None

    def __call__(self) -> None:
        if next(self.calls) == self.nth:
            self.timer = self.broker.freeze_for(self.seconds)
            self.frozen.set()

    def wait_resumed(self) -> None:
        if self.timer is not None:
            self.timer.join(self.seconds + 5)


@pytest.fixture
def stalled_sinks(monkeypatch):
    """Every TransactionalSink created from now on gives up calling commit again after 2 s and freezes the broker
    at the commit `install(broker, nth)` names."""
    hooks: list[FreezeAtCommit] = []
    original_init = TransactionalSink.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.commit_timeout = 2.0
        self.before_commit = hooks[0] if hooks else None

    monkeypatch.setattr(TransactionalSink, "__init__", init)

    def install(broker, nth: int) -> FreezeAtCommit:
        hooks.append(FreezeAtCommit(broker, nth))
        return hooks[0]

    return install


def _write_with_retries(sink: TransactionalSink, messages, offset) -> None:
    for _ in range(10):
        try:
            sink.write_batch(messages, offset)
            return
        except SinkRetriableError:
            continue
        except SinkFatalError:
            sink.open()
    raise AssertionError("the batch never committed")


@pytest.mark.parametrize("commit_timeout", [60.0, 2.0], ids=["commit-called-again", "fenced-and-read-back"])
def test_a_broker_stalled_during_commit_neither_loses_nor_duplicates_a_batch(broker, unique_name, commit_timeout):
    topic, offsets = f"stall.{unique_name}", f"stall.{unique_name}.offsets"
    store = OffsetStore(broker.bootstrap, offsets)
    sink = TransactionalSink(broker.bootstrap, unique_name, "rs0", offsets_topic=offsets, timeout=12.0,
                             commit_timeout=commit_timeout)
    sink.commit_check = lambda batch: store.committed_batch(unique_name, "rs0") == batch
    freezer = FreezeAtCommit(broker, nth=3)
    sink.before_commit = freezer
    with sink:
        for n in range(1, 7):
            offset = OffsetRecord(unique_name, "rs0", resume_token={"_data": f"82{n:04d}"})
            _write_with_retries(sink, [OutMessage(topic, str(n).encode(), f"event-{n}".encode())], offset)
    assert freezer.frozen.is_set()
    freezer.wait_resumed()
    values = [record.value for record in read_topic(broker.bootstrap, topic)]
    assert values == [f"event-{n}".encode() for n in range(1, 7)]
    assert store.get(unique_name, "rs0").resume_token == {"_data": "820006"}
    if commit_timeout < FREEZE_SECONDS:
        assert sink.stats.unknown_commits == 1


def _ids(bootstrap: str, topic: str) -> list[int]:
    return [json.loads(json.loads(r.value)["after"])["_id"] for r in read_topic(bootstrap, topic) if r.value]


def test_streaming_through_a_broker_stall_at_commit_is_exactly_once(broker, mongo_rs, unique_name, stalled_sinks):
    freezer = stalled_sinks(broker, nth=2)
    config = connector_config(unique_name, mongo_rs.uri, snapshot__mode="never", max__batch__size=20)
    running = RunningConnector(config, broker.bootstrap).start()
    running.wait_streaming()
    collection = pymongo.MongoClient(mongo_rs.uri)["stall"]["docs"]
    for group in range(4):
        collection.insert_many([{"_id": group * 50 + i} for i in range(50)])
        time.sleep(0.3)  # pacing only: the outcome is the same whatever the batches are
    topic = f"{unique_name}.stall.docs"
    deadline = time.monotonic() + 120
    while True:
        ids = []
        if freezer.frozen.is_set():
            freezer.wait_resumed()  # a frozen broker answers no metadata request: read the topic once it is back
            ids = _ids(broker.bootstrap, topic)
        if len(ids) >= 200 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    running.finish()
    assert freezer.frozen.is_set()
    assert sorted(ids) == list(range(200)), f"lost {set(range(200)) - set(ids)}, duplicated {len(ids) - len(set(ids))}"
    assert ids == sorted(ids)


def test_snapshot_through_a_broker_stall_at_commit_is_exactly_once(broker, mongo_rs, unique_name, stalled_sinks):
    collection = pymongo.MongoClient(mongo_rs.uri)[f"snap{unique_name[-8:]}"]["docs"]
    collection.insert_many([{"_id": i} for i in range(2_000)])
    freezer = stalled_sinks(broker, nth=3)
    config = connector_config(unique_name, mongo_rs.uri, snapshot__mode="initial_only",
                              snapshot__chunk__size=250, collection__include__list=collection.full_name)
    running = RunningConnector(config, broker.bootstrap).start()
    running.thread.join(180)
    assert not running.thread.is_alive(), "the snapshot did not finish"
    assert running.error is None, running.error
    assert freezer.frozen.is_set()
    ids = _ids(broker.bootstrap, f"{unique_name}.{collection.full_name}")
    assert sorted(ids) == list(range(2_000)), f"{len(ids)} events for 2000 documents ({len(set(ids))} distinct)"


def test_a_failed_commit_in_flight_stops_the_pipeline_at_once(stack, mongo_rs, unique_name, monkeypatch):
    """The commit thread's error ends the pipeline while nothing else happens (not at the next batch or at stop)."""
    original_init = TransactionalSink.__init__

    def fail_first_streaming_commit():
        raise SinkError("injected: Kafka refused the batch for good")

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.before_commit = fail_first_streaming_commit

    monkeypatch.setattr(TransactionalSink, "__init__", init)
    config = connector_config(unique_name, mongo_rs.uri, snapshot__mode="never")
    running = RunningConnector(config, stack.kafka_bootstrap).start()
    running.wait_streaming()
    pymongo.MongoClient(mongo_rs.uri)["inflight"]["docs"].insert_one({"_id": 1})
    running.thread.join(30)  # the pipeline must end by itself; the stop event is never set
    assert not running.thread.is_alive(), "the failed commit stayed hidden: the pipeline is still running"
    assert running.outcome == {"rs0": "failed"}, (running.outcome, running.error)
    metrics = running.pipeline().metrics
    assert metrics.phase == "failed" and "injected" in metrics.last_error


def test_kafka_unreachable_at_start_is_reported_once_and_a_stop_ends_the_wait(mongo_rs, unique_name, caplog):
    config = connector_config(unique_name, mongo_rs.uri, snapshot__mode="never")
    with caplog.at_level("WARNING"):
        running = RunningConnector(config, "127.0.0.1:1").start()
        pipeline = running.pipeline()
        deadline = time.monotonic() + 60
        while not (pipeline.metrics.last_error or "").startswith("Kafka not available at 127.0.0.1:1"):
            assert time.monotonic() < deadline, f"no Kafka error reported: {pipeline.metrics.last_error}"
            time.sleep(0.1)
        assert running.finish() == {"rs0": "stopped"}
    client_lines = [r for r in caplog.records if r.name == "connectors.kafka.librdkafka"]
    assert len(client_lines) <= 5, [r.getMessage() for r in client_lines]


def test_a_fence_by_a_late_request_of_a_dropped_producer_starts_again_instead_of_stopping(broker, unique_name):
    """A producer dropped while the broker was frozen may have a request on its way (an init_transactions, a commit)
    that the broker takes up once it is back, after the producer that replaced it started: the new one is fenced.
    That is not another worker taking over: the pipeline starts again from its committed offset. A fence with no
    producer dropped since the last commit is another worker: the pipeline stops."""
    topic, offsets = f"late.{unique_name}", f"late.{unique_name}.offsets"
    store = OffsetStore(broker.bootstrap, offsets)
    sink = TransactionalSink(broker.bootstrap, unique_name, "rs0", offsets_topic=offsets, timeout=3.0,
                             commit_timeout=2.0, lanes=PIPELINE_LANES)
    sink.commit_check = lambda batch: store.committed_batch(unique_name, "rs0") == batch
    freezer = FreezeAtCommit(broker, nth=2, seconds=10)
    sink.before_commit = freezer

    def batch(n: int):
        return ([OutMessage(topic, str(n).encode(), f"event-{n}".encode())],
                OffsetRecord(unique_name, "rs0", resume_token={"_data": f"82{n:04d}"}))

    def late_init(lanes=None) -> None:  # what a dropped producer's late init_transactions does when Kafka takes it up
        for lane in lanes or sink.lane_ids:
            Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": lane}).init_transactions(30)

    sink.open()
    sink.write_batch(*batch(1))
    with pytest.raises(CommitOutcomeUnknownError):
        sink.write_batch(*batch(2))  # the broker froze at its commit, and learning the outcome timed out too
    freezer.wait_resumed()
    sink.close()

    def next_batch() -> int:  # as a pipeline starting again does: after what the offsets topic says committed
        return int(store.get(unique_name, "rs0").resume_token["_data"][2:]) + 1

    sink.open()
    late_init()
    with pytest.raises(CommitOutcomeUnknownError, match="not another worker"):
        sink.write_batch(*batch(next_batch()))
    sink.close()
    sink.late_request_seconds = 4.0
    sink.open()
    for _ in sink.lane_ids:  # both lanes commit: a late request may still come (the broker takes them up late)
        sink.write_batch(*batch(next_batch()))
    late_init(sink.lane_ids[:1])
    with pytest.raises(CommitOutcomeUnknownError, match="not another worker"):
        sink.write_batch(*batch(next_batch()))
    sink.close()
    sink.open()
    time.sleep(sink.late_request_seconds)
    sink.write_batch(*batch(next_batch()))  # a commit past the window: no request of a dropped producer is left
    late_init()  # another worker took over
    with pytest.raises(SinkFencedError):
        sink.write_batch(*batch(next_batch()))
    values = [record.value for record in read_topic(broker.bootstrap, topic)]
    assert values == [f"event-{n}".encode() for n in range(1, len(values) + 1)] and len(values) in (4, 5), values

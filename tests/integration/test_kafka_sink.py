"""TransactionalSink against the real broker: atomic batches with their offset, fencing, size policy, topics."""

from __future__ import annotations

import gc
import json
import logging
import weakref
from types import SimpleNamespace

import pytest
from bson import Timestamp
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from connectors.kafka.errors import (
    MessageTooLargeError,
    SinkError,
    SinkFencedError,
    SinkRetriableError,
    TopicAdminError,
)
from connectors.kafka.offset_record import OffsetRecord
from connectors.kafka.offsets import OffsetStore, OffsetStoreError
from connectors.kafka.sink import PIPELINE_LANES, OutMessage, TransactionalSink, lane_transactional_ids
from connectors.kafka.topics import TopicAdmin, TopicSpec, ensure_topics, offsets_topic_spec
from tests.integration.kafka_reading import read_topic

pytestmark = pytest.mark.integration


class InjectedFailure(RuntimeError):
    pass


@pytest.fixture
def names(unique_name):
    class Names:
        connector = f"conn-{unique_name}"
        topic = f"it.sink.{unique_name}"
        offsets = f"it.offsets.{unique_name}"
        errors = f"it.sink.{unique_name}.errors"

    return Names


def make_sink(stack, names, **options) -> TransactionalSink:
    options.setdefault("offsets_topic", names.offsets)
    options.setdefault("errors_topic", names.errors)
    return TransactionalSink(stack.kafka_bootstrap, names.connector, "rs0", **options)


def offset(names, n: int) -> OffsetRecord:
    return OffsetRecord(names.connector, "rs0", resume_token={"_data": f"82{n:04d}"}, cluster_time=Timestamp(n, 1))


def values(stack, topic: str, isolation: str = "read_committed") -> list[bytes | None]:
    return [record.value for record in read_topic(stack.kafka_bootstrap, topic, isolation)]


def events(names, *numbers: int) -> list[OutMessage]:
    return [OutMessage(names.topic, f'{{"id":{n}}}'.encode(), f"event-{n}".encode()) for n in numbers]


def test_batch_commits_messages_tombstones_headers_and_offset_together(stack, names):
    with make_sink(stack, names) as sink:
        batch = [
            OutMessage(names.topic, b'{"id":1}', b"created", [("op", b"c")]),
            OutMessage(names.topic, b'{"id":1}', b"deleted", [("op", b"d")]),
            OutMessage(names.topic, b'{"id":1}', None),
        ]
        sink.write_batch(batch, offset(names, 1))
        stats = sink.stats.snapshot()
    records = read_topic(stack.kafka_bootstrap, names.topic)
    assert [(r.key, r.value, r.headers) for r in records] == [
        (b'{"id":1}', b"created", (("op", b"c"),)),
        (b'{"id":1}', b"deleted", (("op", b"d"),)),
        (b'{"id":1}', None, ()),
    ]
    assert OffsetStore(stack.kafka_bootstrap, names.offsets).load(names.connector) == {"rs0": offset(names, 1)}
    assert stats["messages"] == 3 and stats["offsets_written"] == 1 and stats["transactions_committed"] == 1
    assert stats["bytes"] == 3 * len(b'{"id":1}') + len(b"created") + len(b"deleted")
    assert stats["last_commit_latency_ms"] > 0


def test_failure_before_commit_aborts_events_and_offset_and_the_batch_can_be_retried(stack, names):
    store = OffsetStore(stack.kafka_bootstrap, names.offsets)
    with make_sink(stack, names) as sink:
        sink.write_batch(events(names, 1, 2), offset(names, 2))

        def fail():
            raise InjectedFailure("worker crashed between produce and commit")

        sink.before_commit = fail
        with pytest.raises(InjectedFailure):
            sink.write_batch(events(names, 3, 4), offset(names, 4))
        # The aborted records reached the log: only the isolation level hides them.
        assert values(stack, names.topic, "read_uncommitted") == [b"event-1", b"event-2", b"event-3", b"event-4"]
        assert values(stack, names.topic) == [b"event-1", b"event-2"]
        assert store.load(names.connector)["rs0"] == offset(names, 2)

        sink.before_commit = None
        sink.write_batch(events(names, 3, 4), offset(names, 4))
        assert sink.stats.transactions_aborted == 1 and sink.stats.transactions_committed == 2
    assert values(stack, names.topic) == [b"event-1", b"event-2", b"event-3", b"event-4"]
    assert store.load(names.connector)["rs0"] == offset(names, 4)


def test_failure_while_messages_are_still_queued_does_not_poison_the_next_batch(stack, names):
    with make_sink(stack, names, producer_config={"linger.ms": 2000}) as sink:
        sink.write_batch(events(names, 0), offset(names, 0))  # topics exist, the next failure is mid-produce
        produce = sink._produce

        def produce_once_then_fail(*args):
            produce(*args)
            raise InjectedFailure("crash while the first message still waits in the local queue")

        sink._produce = produce_once_then_fail
        with pytest.raises(InjectedFailure):
            sink.write_batch(events(names, 1, 2), offset(names, 2))
        sink._produce = produce
        sink.write_batch(events(names, 1, 2), offset(names, 2))
    assert values(stack, names.topic) == [b"event-0", b"event-1", b"event-2"]


def test_second_sink_with_the_same_id_fences_the_first_in_the_middle_of_a_batch(stack, names):
    zombie = make_sink(stack, names)
    zombie.open()
    zombie.write_batch(events(names, 1), offset(names, 1))
    successor = make_sink(stack, names)
    zombie.before_commit = successor.open  # the new worker starts while the zombie's batch is in flight
    with pytest.raises(SinkFencedError):
        zombie.write_batch(events(names, 2), offset(names, 2))
    with pytest.raises(SinkFencedError):
        zombie.write_batch(events(names, 3), offset(names, 3))
    with pytest.raises(SinkFencedError):
        zombie.open()
    successor.write_batch(events(names, 10), offset(names, 10))
    zombie.close()
    successor.close()
    assert values(stack, names.topic) == [b"event-1", b"event-10"]
    assert OffsetStore(stack.kafka_bootstrap, names.offsets).load(names.connector)["rs0"] == offset(names, 10)


def test_fenced_between_batches(stack, names):
    with make_sink(stack, names) as zombie, make_sink(stack, names) as successor:
        with pytest.raises(SinkFencedError, match="same transactional id"):
            zombie.write_batch(events(names, 1), offset(names, 1))
        successor.write_batch(events(names, 2), offset(names, 2))
    assert values(stack, names.topic) == [b"event-2"]


def test_a_pipelines_batches_take_turns_on_its_lanes(stack, names):
    with make_sink(stack, names, lanes=PIPELINE_LANES) as sink:
        sink.write_batch(events(names, 1), offset(names, 1))  # lane 0; the next batch is lane 1's
        other = Producer({"bootstrap.servers": stack.kafka_bootstrap,
                          "transactional.id": lane_transactional_ids(names.connector, "rs0")[1]})
        other.init_transactions(30)
        with pytest.raises(SinkFencedError):
            sink.write_batch(events(names, 2), offset(names, 2))
        other.flush(5)
    assert values(stack, names.topic) == [b"event-1"]


class WeakReferable(Producer):
    """A Producer a weak reference can follow (cimpl.Producer takes none)."""


def test_a_batch_fenced_mid_flush_keeps_nothing_of_its_callers_alive(stack, unique_name):
    """A lane fenced while its batch flushes: confluent-kafka reports the purged messages with its fatal error pending,
    and keeps for good whatever exception then leaves its callbacks; raised on, that exception would keep every frame
    above write_batch, with their locals (here the producer that fenced the lane). Three rounds: the delivery callback
    cold, then warm (specialised by the interpreter) after logging's level caches were cleared, then warm."""

    def fence_lane_1_then_write(round_: int):
        names = SimpleNamespace(connector=f"conn-{unique_name}-{round_}", topic=f"it.sink.{unique_name}-{round_}",
                                offsets=f"it.offsets.{unique_name}-{round_}",
                                errors=f"it.sink.{unique_name}-{round_}.errors")

        with make_sink(stack, names, lanes=PIPELINE_LANES) as sink:
            sink.write_batch(events(names, 1), offset(names, 1))  # lane 0; the next batch is lane 1's
            other = WeakReferable({"bootstrap.servers": stack.kafka_bootstrap,
                                   "transactional.id": lane_transactional_ids(names.connector, "rs0")[1]})
            other.init_transactions(30)
            if round_ == 1:
                logger = logging.getLogger("connectors.kafka.sink")
                logger.setLevel(logger.level)  # clears every logger's cache of enabled levels
            with pytest.raises(SinkFencedError):
                sink.write_batch(events(names, *range(2, 30)), offset(names, 2))
        return weakref.ref(other)

    for round_ in range(3):
        other = fence_lane_1_then_write(round_)
        gc.collect()
        assert other() is None, f"round {round_}: the fenced batch's error keeps its callers' frames alive"


def test_a_failed_batch_whose_abort_fails_keeps_nothing_of_its_failure_alive(stack, names):
    """The batch fails, then so does its abort (the producer was fenced meanwhile). confluent-kafka keeps the exception
    being handled when one of its calls raises, and with its traceback every frame above write_batch: the sink aborts
    outside its except clause."""

    def fail_once_fenced():
        with make_sink(stack, names) as sink:
            fencer = Producer({"bootstrap.servers": stack.kafka_bootstrap,
                               "transactional.id": lane_transactional_ids(names.connector, "rs0", lanes=1)[0]})

            def fence_then_fail():
                fencer.init_transactions(30)
                raise InjectedFailure("the worker fails once another one took over")

            sink.before_commit = fence_then_fail
            with pytest.raises(SinkFencedError, match="aborting a failed batch") as fenced:
                sink.write_batch(events(names, 1), offset(names, 1))
            failure = weakref.ref(fenced.value.__cause__)
            fencer.close()
        return failure

    failure = fail_once_fenced()
    gc.collect()
    assert failure() is None, "the failed batch's exception is kept alive, and with it its callers' frames"
    assert values(stack, names.topic) == []


@pytest.mark.parametrize("batches_before", [1, 2], ids=["lane-1-next", "lane-0-next"])
def test_a_successor_with_lanes_fences_every_lane_mid_batch(stack, names, batches_before):
    zombie = make_sink(stack, names, lanes=PIPELINE_LANES)
    zombie.open()
    for n in range(1, batches_before + 1):
        zombie.write_batch(events(names, n), offset(names, n))
    successor = make_sink(stack, names, lanes=PIPELINE_LANES)
    zombie.before_commit = successor.open
    for n in (5, 6, 7):  # whichever lane each would take
        with pytest.raises(SinkFencedError):
            zombie.write_batch(events(names, n), offset(names, n))
    successor.write_batch(events(names, 10), offset(names, 10))
    successor.write_batch(events(names, 11), offset(names, 11))
    zombie.close()
    successor.close()
    before = [f"event-{n}".encode() for n in range(1, batches_before + 1)]
    assert values(stack, names.topic) == [*before, b"event-10", b"event-11"]
    assert OffsetStore(stack.kafka_bootstrap, names.offsets).load(names.connector)["rs0"] == offset(names, 11)


def test_an_offset_reset_fences_a_running_pipeline_on_either_lane(stack, names):
    with make_sink(stack, names, lanes=PIPELINE_LANES) as running:
        running.write_batch(events(names, 1), offset(names, 1))  # the next batch is lane 1's
        store = OffsetStore(stack.kafka_bootstrap, names.offsets)
        store.reset_to_latest(names.connector, "rs0")
        with pytest.raises(SinkFencedError):
            running.write_batch(events(names, 2), offset(names, 2))
    assert values(stack, names.topic) == [b"event-1"]
    assert store.get(names.connector, "rs0").startup["mode"] == "latest"


def test_heartbeat_batches_carry_only_an_offset_and_an_optional_heartbeat(stack, names):
    heartbeat_topic = f"{names.topic}.heartbeat"
    with make_sink(stack, names) as sink:
        sink.write_batch([], None)  # nothing to do: no transaction at all
        sink.write_batch([], offset(names, 5))
        sink.write_batch([OutMessage(heartbeat_topic, b'{"id":"rs0"}', b'{"ts_ms":1}')], offset(names, 6))
        assert sink.stats.transactions_committed == 2
    assert values(stack, heartbeat_topic) == [b'{"ts_ms":1}']
    assert OffsetStore(stack.kafka_bootstrap, names.offsets).load(names.connector)["rs0"] == offset(names, 6)


def small_limit_topic(name: str) -> TopicSpec:
    return TopicSpec(name, 1, 1, {"max.message.bytes": "20000"})


def test_too_large_message_fails_the_whole_batch_by_default(stack, names):
    store = OffsetStore(stack.kafka_bootstrap, names.offsets)
    with make_sink(stack, names, new_topic=small_limit_topic) as sink:
        big = OutMessage(names.topic, b'{"id":"big"}', b"x" * 30_000)
        with pytest.raises(MessageTooLargeError, match=rf"{names.topic}.*'{{\"id\":\"big\"}}'.*20000") as caught:
            sink.write_batch([*events(names, 1), big, *events(names, 2)], offset(names, 2))
        assert caught.value.topic == names.topic and caught.value.key == b'{"id":"big"}'
        assert sink.stats.transactions_committed == 0
        sink.write_batch(events(names, 3), offset(names, 3))  # the sink stays usable
    assert values(stack, names.topic) == [b"event-3"]
    assert store.load(names.connector) == {"rs0": offset(names, 3)}


def test_too_large_message_skipped_with_a_warning_on_the_errors_topic(stack, names):
    with make_sink(stack, names, new_topic=small_limit_topic, too_large="skip") as sink:
        big = OutMessage(names.topic, b'{"id":"big"}', b"x" * 30_000, [("op", b"c")])
        sink.write_batch([*events(names, 1), big, *events(names, 2)], offset(names, 2))
        assert sink.stats.skipped_too_large == 1 and sink.stats.messages == 2
        assert sink.stats.bytes == payload_bytes(events(names, 1, 2))
    assert values(stack, names.topic) == [b"event-1", b"event-2"]
    [warning] = read_topic(stack.kafka_bootstrap, names.errors)
    assert warning.key == b'{"id":"big"}' and warning.headers == (("cdc.error", b"message_too_large"),)
    report = json.loads(warning.value)
    assert report["error"] == "message_too_large" and report["topic"] == names.topic
    assert report["key"] == '{"id":"big"}' and report["size"] > 30_000 and report["limit"] == 20_000
    assert report["headers"] == ["op"] and report["batch_offset"]["resume_token"] == {"_data": "820002"}


def payload_bytes(messages: list[OutMessage]) -> int:
    return sum(len(message.key or b"") + len(message.value or b"") for message in messages)


def test_a_message_over_the_producers_limit_is_skipped_and_the_rest_counted(stack, names):
    """The topic takes records larger than the producer sends (its default max.message.bytes): produce() refusing
    the message is what finds it."""
    with make_sink(stack, names, producer_config={"message.max.bytes": 50_000}, too_large="skip") as sink:
        big = OutMessage(names.topic, b'{"id":"big"}', b"y" * 60_000)
        tombstone = OutMessage(names.topic, b'{"id":1}', None)
        keyless = OutMessage(names.topic, None, b"event-3")
        kept = [*events(names, 1), tombstone, *events(names, 2), keyless]
        sink.write_batch([*kept[:2], big, *kept[2:]], offset(names, 2))
        assert sink.stats.skipped_too_large == 1 and sink.stats.messages == 4
        assert sink.stats.bytes == payload_bytes(kept)
    assert values(stack, names.topic) == [b"event-1", None, b"event-2", b"event-3"]
    [warning] = read_topic(stack.kafka_bootstrap, names.errors)
    report = json.loads(warning.value)
    assert report["key"] == '{"id":"big"}' and report["size"] > 60_000 and report["limit"] == 50_000


def test_producer_limit_applies_too(stack, names):
    store = OffsetStore(stack.kafka_bootstrap, names.offsets)
    with make_sink(stack, names, producer_config={"message.max.bytes": 50_000}) as sink:
        with pytest.raises(MessageTooLargeError, match="50000"):
            sink.write_batch([*events(names, 1), OutMessage(names.topic, b"k", b"y" * 60_000)], offset(names, 1))
        assert sink.stats.transactions_committed == 0
        sink.write_batch(events(names, 2), offset(names, 2))  # the sink stays usable
        assert sink.stats.bytes == payload_bytes(events(names, 2))
    assert values(stack, names.topic) == [b"event-2"]
    assert store.load(names.connector) == {"rs0": offset(names, 2)}


def test_an_offset_record_over_the_producers_limit_fails_the_batch_naming_the_record(stack, names):
    """Not a retriable 'Kafka failed' that comes back at every retry: a message saying which limits to raise."""
    store = OffsetStore(stack.kafka_bootstrap, names.offsets)
    large = OffsetRecord(names.connector, "rs0", resume_token={"_data": "82" + "0" * 60_000})
    with make_sink(stack, names, producer_config={"message.max.bytes": 50_000}) as sink:
        with pytest.raises(MessageTooLargeError, match="offset record is 6[0-9]{4} bytes, over the producer's limit"):
            sink.write_batch(events(names, 1), large)
        assert sink.stats.transactions_committed == 0
        sink.write_batch(events(names, 2), offset(names, 2))  # the sink stays usable
    assert values(stack, names.topic) == [b"event-2"]
    assert store.load(names.connector) == {"rs0": offset(names, 2)}


def test_a_batch_larger_than_the_producers_local_queue_waits_for_room_and_commits_whole(stack, names):
    with make_sink(stack, names, producer_config={"queue.buffering.max.messages": 10}) as sink:
        sink.write_batch(events(names, *range(100)), offset(names, 1))
        assert sink.stats.snapshot()["messages"] == 100
    assert values(stack, names.topic) == [f"event-{n}".encode() for n in range(100)]
    assert OffsetStore(stack.kafka_bootstrap, names.offsets).load(names.connector) == {"rs0": offset(names, 1)}


def topic_settings(stack, topic: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    [future] = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    return {name: entry.value for name, entry in future.result(10).items()}


def partition_count(stack, topic: str) -> int:
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    return len(admin.list_topics(topic, timeout=10).topics[topic].partitions)


def test_sink_creates_missing_topics_with_their_settings(stack, names):
    def event_topic(name: str) -> TopicSpec:
        return TopicSpec(name, partitions=3, replication_factor=1, config={"retention.ms": "3600000"})

    with make_sink(stack, names, new_topic=event_topic) as sink:
        sink.write_batch(events(names, 1, 2, 3), offset(names, 3))
    assert topic_settings(stack, names.offsets)["cleanup.policy"] == "compact"
    assert partition_count(stack, names.offsets) == 1
    assert topic_settings(stack, names.topic)["retention.ms"] == "3600000"
    assert topic_settings(stack, names.topic)["cleanup.policy"] == "delete"
    assert partition_count(stack, names.topic) == 3


def test_ensure_topics_is_idempotent_and_caches(stack, names):
    spec = TopicSpec(names.topic, 2, 1, {"cleanup.policy": "compact,delete"})
    assert ensure_topics(stack.kafka_bootstrap, [spec]) == [names.topic]
    assert ensure_topics(stack.kafka_bootstrap, [spec]) == []  # exists: fine
    admin = TopicAdmin(stack.kafka_bootstrap)
    admin.ensure([spec])
    admin.admin = None  # a cached topic needs no round trip
    assert admin.ensure([spec]) == []
    assert admin.max_message_bytes[names.topic] > 0
    assert topic_settings(stack, names.topic)["cleanup.policy"] == "compact,delete"


def test_existing_offsets_topic_that_is_not_compacted_is_refused(stack, names):
    ensure_topics(stack.kafka_bootstrap, [TopicSpec(names.offsets, 1, 1)])
    with pytest.raises(TopicAdminError, match=r"cleanup.policy=delete.*must have cleanup.policy=compact"):
        ensure_topics(stack.kafka_bootstrap, [offsets_topic_spec(names.offsets)])


def test_impossible_topic_settings_are_explained(stack, names):
    with pytest.raises(TopicAdminError, match=r"replication factor=3.*no larger than the number of brokers"):
        ensure_topics(stack.kafka_bootstrap, [TopicSpec(names.topic, 1, 3)])
    with pytest.raises(TopicAdminError, match=r"no.such.setting"):
        ensure_topics(stack.kafka_bootstrap, [TopicSpec(names.topic, 1, 1, {"no.such.setting": "1"})])


def test_unreachable_kafka_is_a_retriable_error_naming_the_step():
    sink = TransactionalSink("127.0.0.1:1", "conn", "rs0", timeout=1)
    with pytest.raises(SinkRetriableError, match="Could not list Kafka topics"):
        sink.open()
    with pytest.raises(SinkError, match="not open"):
        sink.write_batch([OutMessage("t", b"k", b"v")])
    with pytest.raises(OffsetStoreError, match="cdc.offsets"):
        OffsetStore("127.0.0.1:1", timeout=1).load("conn")


def test_a_payload_the_caller_counted_is_taken_as_it_is_less_what_was_skipped(stack, names):
    """write_batch's `payload` (the caller's count of its messages' key and value bytes, as it built them) is what
    the batch counts, less the messages skipped: the sink does not go over the messages to count them again."""
    with make_sink(stack, names, producer_config={"message.max.bytes": 50_000}, too_large="skip") as sink:
        big = OutMessage(names.topic, b'{"id":"big"}', b"y" * 60_000)
        kept = events(names, 1, 2)
        sink.write_batch([kept[0], big, kept[1]], offset(names, 2), payload=payload_bytes([*kept, big]) + 1000)
        assert sink.stats.bytes == payload_bytes(kept) + 1000 and sink.stats.messages == 2
    assert values(stack, names.topic) == [b"event-1", b"event-2"]

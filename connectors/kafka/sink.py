"""Transactional producers per pipeline: each batch's messages and its offset record commit together.

Commit succeeds => every message and the offset are durable and visible to read_committed readers; any
failure => the transaction is aborted and none of them is. The transactional ids `<connector>.<replica set>`
(and `….lane-1`, see PIPELINE_LANES) fence an older producer of the same pipeline (a zombie worker): its next
write raises SinkFencedError.

A pipeline's batches take turns on two producers ("lanes"), one batch at a time as before. Kafka answers a
transaction that starts before the previous one's commit markers are written, on the same transactional id, with
CONCURRENT_TRANSACTIONS, and librdkafka asks again only 20 ms later: on one producer that stalled 0.5-8% of
back-to-back batches. A batch starts only once the previous one's commit returned, so the order of records in
every partition, and what read_committed readers see, is the same as with one producer: a reader never reads past
a transaction whose markers are not yet written.

Messages over the size limit (key + value + headers + record framing, uncompressed, as the Java producer
counts) follow the policy: `fail` raises MessageTooLargeError naming the topic and key; `skip` drops the
message and writes a warning record to the errors topic in the same transaction, so nothing goes unrecorded.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TypeVar

from confluent_kafka import KafkaError, KafkaException, Producer

from connectors.kafka.client_log import client_logger
from connectors.kafka.errors import (
    FENCED_CODES,
    CommitOutcomeUnknownError,
    MessageTooLargeError,
    SinkError,
    SinkFatalError,
    SinkFencedError,
    SinkRetriableError,
    TopicAdminError,
    classify,
    describe,
)
from connectors.kafka.offset_record import OffsetRecord, OffsetTombstone
from connectors.kafka.topics import TopicAdmin, TopicSpec, offsets_topic_spec

log = logging.getLogger(__name__)
_T = TypeVar("_T")

TOO_LARGE_FAIL = "fail"
TOO_LARGE_SKIP = "skip"
# Upper bound of a record's framing: record batch header (61) + per-record varints and attributes (36).
RECORD_OVERHEAD = 97
HEADER_OVERHEAD = 10
# Header of the offset record naming the batch that wrote it: after a commit whose outcome is unknown, reading it
# back (read_committed) tells whether that batch committed, even when two batches carry the same position.
BATCH_HEADER = "cdc.batch"

PRODUCER_DEFAULTS = {
    "enable.idempotence": True,
    "acks": "all",
    "compression.type": "lz4",
    # Batches are flushed at commit anyway (_await_deliveries): the linger only has to outlast the drain before the
    # flush, so the messages still queued behind a request in flight do not count as due (see _drain).
    "linger.ms": 1000,
    # A batch's produce requests (its topics and the offsets topic) go out back to back on one connection: with
    # Nagle's algorithm the second waits for the first one's reply. Measured here: cycle p50 and p95 10-20% lower.
    "socket.nagle.disable": True,
    "batch.size": 1_000_000,  # stays under the broker's default max.message.bytes (1048588)
    "batch.num.messages": 10_000,
    "message.max.bytes": 1_000_000,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
    "transaction.timeout.ms": 60_000,
    "partitioner": "murmur2_random",  # same key -> same partition as Java clients (Kafka Connect, Debezium)
    # Only failures are reported to Python: a flush that leaves nothing queued means every other message was
    # acknowledged, and a callback per message costs the interpreter lock the transform needs.
    "delivery.report.only.error": True,
    "logger": client_logger,  # librdkafka's log through logging, not stderr
}


# One per Kafka message: not frozen=True, which sets each field through object.__setattr__ (550 ns a message against
# 170 ns); nothing assigns to its fields, and unsafe_hash keeps frozen's hash.
@dataclass(slots=True, unsafe_hash=True)
class OutMessage:
    topic: str
    key: bytes | None
    value: bytes | None  # None: tombstone
    headers: Sequence[tuple[str, bytes]] | None = None


_TOPIC, _KEY, _VALUE = attrgetter("topic"), attrgetter("key"), attrgetter("value")


def payload_size(message: OutMessage) -> int:
    """Its key's and value's bytes (what SinkStats.bytes counts)."""
    return len(message.key or b"") + len(message.value or b"")


def record_size(message: OutMessage) -> int:
    size = RECORD_OVERHEAD + payload_size(message)
    for name, value in message.headers or ():
        size += HEADER_OVERHEAD + len(name.encode()) + len(value or b"")
    return size


INIT_NUDGE_SECONDS = 0.05
DRAIN_POLL_SECONDS = 0.002  # how often _drain looks at what is left
DRAIN_STALL_SECONDS = 0.05  # a drain that has not moved for this long ends (the flush sends the rest)

# A producer dropped while Kafka did not answer it may still have a request on its way (an init_transactions, a
# commit) that Kafka takes up once it is back, after the producer that replaced it started: that fences the new one.
# A fence this soon after such a replacement is taken for that, not for another worker taking over: the pipeline
# starts again from its committed offset, once per dropped producer. Seen in the fault campaign: fences 0.03-0.3 s
# after the reopening, also after both lanes had committed (the broker takes such requests up as it resumes).
LATE_REQUEST_FENCE_SECONDS = 30.0

# Lanes of a partition pipeline's sink, and of every sink that must fence it (offset resets): all of them use this.
PIPELINE_LANES = 2


def transactional_id(connector: str, replica_set: str) -> str:
    return f"{connector}.{replica_set}"


def lane_transactional_ids(connector: str, replica_set: str, lanes: int = PIPELINE_LANES) -> list[str]:
    """The transactional id of each lane; fencing a pipeline means initialising every one of them."""
    first = transactional_id(connector, replica_set)
    return [first] + [f"{first}.lane-{lane}" for lane in range(1, lanes)]


@dataclass
class SinkStats:
    messages: int = 0
    bytes: int = 0
    offsets_written: int = 0
    skipped_too_large: int = 0
    transactions_committed: int = 0
    transactions_aborted: int = 0
    unknown_commits: int = 0  # commits whose outcome had to be learned by fencing and reading back
    last_commit_latency_ms: float | None = None  # flush + commit of the last committed batch
    last_batch_ms: float | None = None  # whole write_batch of the last committed batch

    def snapshot(self) -> dict:
        return dict(self.__dict__)


@dataclass
class _Deliveries:
    produced: int = 0
    failures: list[tuple[KafkaError, str, bytes | None]] = field(default_factory=list)
    skipped: set[int] = field(default_factory=set)  # indexes of oversized messages recorded as warnings


class TransactionalSink:
    def __init__(
        self,
        bootstrap_servers: str,
        connector: str,
        replica_set: str,
        *,
        offsets_topic: str | TopicSpec = "cdc.offsets",
        errors_topic: str | None = None,
        new_topic: Callable[[str], TopicSpec] = TopicSpec,
        too_large: str = TOO_LARGE_FAIL,
        producer_config: Mapping[str, object] | None = None,
        topic_admin: TopicAdmin | None = None,
        timeout: float = 30.0,
        commit_timeout: float | None = None,
        lanes: int = 1,
    ):
        if too_large not in (TOO_LARGE_FAIL, TOO_LARGE_SKIP):
            raise ValueError(f"too_large policy must be {TOO_LARGE_FAIL!r} or {TOO_LARGE_SKIP!r}, not {too_large!r}")
        self.connector, self.replica_set = connector, replica_set
        self.transactional_id = transactional_id(connector, replica_set)
        self.lane_ids = lane_transactional_ids(connector, replica_set, lanes)
        if not isinstance(offsets_topic, TopicSpec):
            offsets_topic = offsets_topic_spec(offsets_topic)
        self.offsets_topic = offsets_topic
        self.errors_topic = errors_topic or f"{connector}.errors"
        self.new_topic = new_topic
        self.too_large = too_large
        self.timeout = timeout
        # How long commit_transaction is called again while librdkafka reports a retriable error (a broker that
        # stalls and comes back): past it the outcome is settled by fencing and reading back (see _settle).
        self.commit_timeout = commit_timeout if commit_timeout is not None else max(timeout, 120.0)
        self.topics = topic_admin or TopicAdmin(bootstrap_servers, timeout)
        self.stats = SinkStats()
        self.before_commit: Callable[[], None] | None = None  # fault-injection seam for tests
        # commit_check(batch_id) -> did the batch with this id commit? Asked only after the producer was fenced
        # (so the batch's transaction is complete or aborted), by reading what it wrote (read_committed).
        self.commit_check: Callable[[str], bool] | None = None
        self.last_batch_id: str | None = None
        self._config = {
            **PRODUCER_DEFAULTS,
            **(producer_config or {}),
            "bootstrap.servers": bootstrap_servers,
            "on_delivery": self._on_delivery,
            # Only failures are reported (the flush counts what is still unacknowledged): a report per message is a
            # Python call per message, ~0.5 us of CPU and of the interpreter lock each.
            "delivery.report.only.error": True,
        }
        self._lanes: list[Producer] = []
        self._turn = 0  # the index of the lane whose turn it is
        self._state = "closed"  # closed | open | broken (open() again) | fenced (final)
        self._deliveries = _Deliveries()
        self._batch_payload = 0
        self._batch_topics: set[str] = set()
        # producers dropped broken, until a commit LATE_REQUEST_FENCE_SECONDS after the reopening
        self._dropped_unanswered = 0
        self.late_request_seconds = LATE_REQUEST_FENCE_SECONDS
        self._opened_at = 0.0

    # -- life cycle -------------------------------------------------------------------------------------------

    def open(self) -> None:
        """Starts the producer and fences any older producer of this pipeline (aborting its open transaction).

        Call it before reading the pipeline's offsets, so a reset written meanwhile either is read or fences us.
        """
        if self._state == "fenced":
            raise SinkFencedError(f"Pipeline {self.transactional_id} was fenced by another worker; it must not reopen.")
        self._discard_producers()
        self._ensure_topics([self.offsets_topic])
        for lane_id in self.lane_ids:
            producer = Producer({**self._config, "transactional.id": lane_id})
            self._lanes.append(producer)
            try:
                self._init_transactions(producer)
            except KafkaException as exception:
                self._state = "broken"
                raise classify(exception.args[0], f"starting the transactional producer {lane_id}",
                               "Starting it again is safe.") from None
        self._turn = 0
        self._state = "open"
        self._opened_at = time.monotonic()

    def _init_transactions(self, producer: Producer) -> None:
        """init_transactions, called again every INIT_NUDGE_SECONDS (or after a retriable error) until it completes
        or `timeout` passes.

        When a new producer asks for its id before its first connection is up, librdkafka waits for a 500 ms timer
        before asking again (about one init in four here); a call that timed out and is made again asks at once.
        Measured on the devstack broker: 15-17 ms most of the time either way, but no 505 ms inits any more.
        """
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                producer.init_transactions(max(0.01, min(INIT_NUDGE_SECONDS, deadline - time.monotonic())))
                return
            except KafkaException as exception:
                # e.g. CONCURRENT_TRANSACTIONS while the coordinator aborts a fenced producer's transaction
                if not exception.args[0].retriable() or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01 if exception.args[0].code() != KafkaError._TIMED_OUT else 0)

    def reachable(self, timeout: float = 1.0) -> bool:
        """Whether Kafka answers now (a metadata request), to end a wait before retrying once it is back."""
        return self.topics.answers(timeout)

    def close(self) -> None:
        if self._state == "open":
            for producer in self._lanes:
                self._served(producer.flush, self.timeout)
        self._discard_producers()
        if self._state != "fenced":
            self._state = "closed"

    def __enter__(self) -> TransactionalSink:
        self.open()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- writing ----------------------------------------------------------------------------------------------

    def write_batch(self, messages: Sequence[OutMessage], offset: OffsetRecord | OffsetTombstone | None = None,
                    payload: int | None = None) -> None:
        """Writes all messages and the offset record in one transaction, or raises a SinkError having written none.

        An empty `messages` with an offset is fine (a heartbeat commit). After SinkRetriableError writing the same
        batch again is safe; after SinkFatalError call open() first; after SinkFencedError the pipeline must stop.
        `payload`: the messages' key and value bytes (payload_size) when the caller counted them as it made them;
        the sink then does not go over the messages to count them (0.08 µs a message in a catch-up, their bytes out
        of the CPU's caches by then).
        """
        self._require_open()
        if not messages and offset is None:
            return
        started = time.monotonic()
        batch_id = self.last_batch_id = uuid.uuid4().hex
        oversized = self._prepare_topics(messages, offset)
        # reports of an aborted batch's purged messages must not count for this one
        self._served(self._producer.poll, 0)
        self._deliveries = _Deliveries()
        failure = None
        try:
            self._producer.begin_transaction()
            self._produce_all(messages, offset, oversized, batch_id, payload)
            commit_started = time.monotonic()
            self._await_deliveries()
            if self.before_commit is not None:
                self.before_commit()
            unknown = self._commit()
        except BaseException as exception:
            failure = exception
        if failure is not None:  # aborted outside the except clause, where no exception is being handled (_served)
            error = self._abort(failure)
            if error is failure:
                raise failure
            raise error from failure
        if unknown is not None and not self._settle(batch_id, unknown):
            raise SinkRetriableError(
                f"Committing a batch of {self.transactional_id} did not complete ({describe(unknown)}); the "
                "producer was fenced and the offsets topic shows the batch did not commit, so writing it again is safe."
            )
        finished = time.monotonic()
        self._take_turns()
        if self._dropped_unanswered and finished - self._opened_at > self.late_request_seconds:
            self._dropped_unanswered = 0
        self._count_committed(messages, offset)
        self.stats.last_commit_latency_ms = round((finished - commit_started) * 1000, 3)
        self.stats.last_batch_ms = round((finished - started) * 1000, 3)

    def _prepare_topics(self, messages: Sequence[OutMessage], offset) -> dict[int, int]:
        """Creates missing topics; returns {message index: limit} for the messages over their topic's limit.

        When every topic of the batch takes a record as large as the producer sends (the usual case: a topic's
        default max.message.bytes is above the producer's message.max.bytes), produce() refusing a message over
        the producer's limit is the only check left, and the messages are not looked at one by one here: in a
        catch-up that look cost 0.25 µs an event, each message's bytes being out of the CPU's caches by now."""
        topics = self._batch_topics = set(map(_TOPIC, messages))
        missing = [self.new_topic(topic) for topic in topics if not self.topics.is_known(topic)]
        if offset is not None and not self.topics.is_known(self.offsets_topic.name):
            missing.append(self.offsets_topic)
        self._ensure_topics(missing, "The batch was not written; writing it again is safe.")
        self._batch_payload = None  # counted once produced (_produce_all), unless counted here
        producer_limit = int(self._config["message.max.bytes"])
        if all(self._topic_limit(topic) >= producer_limit + RECORD_OVERHEAD for topic in topics):
            return {}
        limits = {topic: self._limit(topic) for topic in topics}
        smallest = min(limits.values(), default=0)
        oversized, payload = {}, 0
        for index, message in enumerate(messages):
            size = payload_size(message)
            payload += size
            # Cheap bound first: most batches have no message anywhere near a limit.
            if size + RECORD_OVERHEAD <= smallest and not message.headers:
                continue
            limit = limits[message.topic]
            if record_size(message) > limit:
                if self.too_large == TOO_LARGE_FAIL:
                    raise self._too_large_error(message, limit)  # before the transaction: nothing to abort
                oversized[index] = limit
                payload -= size
        self._batch_payload = payload
        if oversized:
            self._ensure_topics([self.new_topic(self.errors_topic)])
        return oversized

    def _produce_all(self, messages: Sequence[OutMessage], offset, oversized: dict[int, int], batch_id: str,
                     payload: int | None) -> None:
        produce = self._producer.produce
        deliveries = self._deliveries
        start = 0 if oversized else self._produce_run(messages)
        for index in range(start, len(messages)):
            message = messages[index]
            if oversized and index in oversized:
                self._handle_too_large(index, message, oversized[index], offset)
                continue
            queue_full = too_large = False
            headers = message.headers
            try:
                if headers:
                    produce(message.topic, message.value, message.key, headers=list(headers))
                else:  # a keyword argument costs 0.4 µs a call (a third of the call)
                    produce(message.topic, message.value, message.key)
                deliveries.produced += 1
            except BufferError:
                queue_full = True
            except KafkaException as exception:
                if exception.args[0].code() != KafkaError.MSG_SIZE_TOO_LARGE:
                    raise
                too_large = True
            # outside the except clauses: a call that serves callbacks there keeps the exception's frames alive
            if queue_full:
                self._produce(message.topic, message.key, message.value, message.headers)
            elif too_large:
                self._handle_too_large(index, message, int(self._config["message.max.bytes"]), offset)
        if self._batch_payload is None:
            skipped = self._deliveries.skipped
            if payload is None:
                payload = (sum(map(len, filter(None, map(_KEY, messages))))
                           + sum(map(len, filter(None, map(_VALUE, messages)))))
            self._batch_payload = payload - sum(payload_size(messages[index]) for index in skipped)
        if offset is not None:
            value = offset.to_value()
            try:
                self._produce(self.offsets_topic.name, offset.key, value, [(BATCH_HEADER, batch_id.encode())])
            except KafkaException as exception:
                if exception.args[0].code() != KafkaError.MSG_SIZE_TOO_LARGE:
                    raise
                limit = int(self._config["message.max.bytes"])
                raise MessageTooLargeError(
                    f"The pipeline's offset record is {len(value)} bytes, over the producer's limit of {limit} bytes; "
                    "the batch was not written. Raise the connector's producer.override.max.request.size and the "
                    f"max.message.bytes of the offsets topic {self.offsets_topic.name!r} above it.",
                    self.offsets_topic.name, offset.key, len(value), limit) from None

    def _produce_run(self, messages: Sequence[OutMessage]) -> int:
        """Produces messages from the first until one is refused (local queue full, too large, any other error);
        returns how many were queued. The caller's loop, which handles each refusal, takes it from that one again:
        a refused message was not queued. Batches with no oversized message go through here at about 0.1 µs a
        message less than that loop."""
        produce = self._producer.produce
        produced = 0
        try:
            for message in messages:
                headers = message.headers
                if headers:
                    produce(message.topic, message.value, message.key, headers=list(headers))
                else:  # a keyword argument costs 0.4 µs a call (a third of the call)
                    produce(message.topic, message.value, message.key)
                produced += 1
        except (BufferError, KafkaException):
            pass
        self._deliveries.produced += produced
        return produced

    def _produce(self, topic: str, key: bytes | None, value: bytes | None, headers) -> None:
        while not self._queued(topic, key, value, headers):  # local queue full: let deliveries drain it
            self._served(self._producer.poll, 0.05)
        self._deliveries.produced += 1

    def _queued(self, topic: str, key: bytes | None, value: bytes | None, headers) -> bool:
        try:
            if headers:
                self._producer.produce(topic, value, key, headers=list(headers))
            else:
                self._producer.produce(topic, value, key)
        except BufferError:
            return False
        return True

    def _too_large_error(self, message: OutMessage, limit: int) -> MessageTooLargeError:
        size = record_size(message)
        return MessageTooLargeError(
            f"Message for topic {message.topic!r} with key {_key_text(message.key)} is {size} bytes, over the limit "
            f"of {limit} bytes (the smaller of the producer's message.max.bytes and the topic's max.message.bytes). "
            "Raise both limits (the connector's producer.override.max.request.size, and the topic's "
            "max.message.bytes: topic.creation.default.max.message.bytes for the topics the connector creates), "
            "exclude or trim the field that makes it large, or set the too-large policy to 'skip' to record it on "
            "the errors topic instead.",
            message.topic, message.key, size, limit,
        )

    def _handle_too_large(self, index: int, message: OutMessage, limit: int, offset) -> None:
        if self.too_large == TOO_LARGE_FAIL:
            raise self._too_large_error(message, limit)
        size = record_size(message)
        self._deliveries.skipped.add(index)
        log.warning("Message for topic %r with key %s is %d bytes, over the limit of %d bytes: skipped, recorded "
                    "on %s", message.topic, _key_text(message.key), size, limit, self.errors_topic)
        if not self.topics.is_known(self.errors_topic):
            self._ensure_topics([self.new_topic(self.errors_topic)])
        warning = _too_large_warning(self.connector, self.replica_set, message, size, limit, offset)
        self._produce(self.errors_topic, message.key if len(message.key or b"") <= 4096 else None, warning,
                      [("cdc.error", b"message_too_large")])

    def _drain(self, deadline: float) -> None:
        """Waits while more than about one produce request per topic is left to acknowledge, so the flush that
        follows has only the last requests to send.

        An idempotent producer has one produce request in flight per partition (librdkafka counts the messages in
        flight against its limit of 5 requests). While a request is in flight and messages past their linger wait
        behind it, or any message at all during flush(), librdkafka's broker thread polls its socket without
        sleeping until the answer comes: a batch of 4,096 events of 2 KB (ten requests) kept a core busy for the
        whole of its round trips, 1-8 µs of CPU an event. With the linger longer than the drain, full requests go
        out as the previous one is answered, the broker thread sleeping in between. A drain that stops moving
        (what is left fits in fewer requests than estimated, so no request is due before the linger) ends after
        DRAIN_STALL_SECONDS."""
        producer = self._producer
        produced, payload = self._deliveries.produced, self._batch_payload
        if produced <= 1 or payload <= 0:
            return
        per_request = max(1, int(self._config["batch.size"]) * produced // payload)
        tail = per_request * len(self._batch_topics) + 1  # and the offset record, in a request of its own
        left = len(producer)
        moved = time.monotonic()
        while left > tail:
            self._served(producer.poll, DRAIN_POLL_SECONDS)
            now = time.monotonic()
            if now >= deadline:
                return
            count = len(producer)
            if count < left:
                left, moved = count, now
            elif now - moved >= DRAIN_STALL_SECONDS:
                return

    def _await_deliveries(self) -> None:
        """Every message must be acknowledged before committing (a failed one dooms the transaction)."""
        deadline = time.monotonic() + self.timeout
        self._drain(deadline)
        remaining = self._served(self._producer.flush, max(0.0, deadline - time.monotonic()))
        deliveries = self._deliveries
        if remaining:
            for topic in self._batch_topics:  # a topic deleted behind our back stalls; the retry re-checks them
                self.topics.forget(topic)
            reason = (f"Kafka acknowledged {deliveries.produced - remaining} of {deliveries.produced} messages "
                      f"within {self.timeout:g}s")
            raise SinkRetriableError(f"{reason}; the batch was aborted and writing it again is safe.", reason)
        if deliveries.failures:
            for error, topic, _ in deliveries.failures:
                if error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
                    self.topics.forget(topic)  # deleted behind our back: the retry creates it again
            error, topic, key = deliveries.failures[0]
            if error.code() == KafkaError.MSG_SIZE_TOO_LARGE:
                self._on_broker_too_large(topic, key)
                raise MessageTooLargeError(
                    f"The broker rejected a batch for topic {topic!r} (key {_key_text(key)}) as too large. The "
                    "topic's max.message.bytes is probably below the producer's batch.size: raise it, or lower "
                    "batch.size in the sink's producer settings.", topic, key, 0, self._limit(topic),
                )
            raise classify(error, f"delivering a message to topic {topic!r}")

    def _on_broker_too_large(self, topic: str, key: bytes | None) -> None:
        """The broker refused a record batch as too large: if the topic's limit was lowered while we ran, the
        retry checks each message against the new limit (the skip policy then skips it, as after a restart)."""
        before = self._limit(topic)
        self.topics.forget(topic)
        self._ensure_topics([self.new_topic(topic)])
        after = self._limit(topic)
        if after >= before:
            return
        if self.too_large == TOO_LARGE_SKIP:
            raise SinkRetriableError(
                f"Topic {topic!r} now accepts records of at most {after} bytes (it was {before}); the batch was "
                "aborted and is written again with the messages over the new limit skipped and recorded on "
                f"{self.errors_topic}."
            )
        raise MessageTooLargeError(
            f"Topic {topic!r} now accepts records of at most {after} bytes (it was {before} when the pipeline "
            f"started) and a message (key {_key_text(key)}) is larger. Raise the topic's max.message.bytes, or "
            "set the too-large policy to 'skip' to record such messages on the errors topic instead.",
            topic, key, 0, after,
        )

    def _commit(self) -> KafkaError | None:
        """Commits; returns None, or the error of a commit whose outcome is unknown (neither done nor aborted).

        librdkafka asks for commit_transaction to be called again while its error is retriable (a timed-out
        call resumes the same commit); an error that requires an abort raises (aborting then is safe); a fenced
        producer raises. Anything else leaves the outcome unknown: the batch may or may not have committed.
        """
        deadline = time.monotonic() + self.commit_timeout
        while True:
            try:
                self._served(self._producer.commit_transaction,
                             max(1.0, min(self.timeout, deadline - time.monotonic())))
                return None
            except KafkaException as exception:
                error = exception.args[0]
                if error.txn_requires_abort() or error.code() in FENCED_CODES:
                    raise
                if not error.retriable() or time.monotonic() >= deadline:
                    return error
                log.warning("committing a batch of %s: %s; calling commit again", self.transactional_id,
                            describe(error))

    def _settle(self, batch_id: str, cause: KafkaError) -> bool:
        """Learns whether a batch whose commit has an unknown outcome committed; never guesses.

        A new producer with the same transactional id (init_transactions) makes the coordinator finish the
        pending transaction, committing it if the commit had reached it and aborting it otherwise; only then is
        what it wrote read back (commit_check, read_committed). The old producer is dropped without an abort.
        """
        log.warning("The commit of a batch of %s has an unknown outcome (%s); fencing the producer to learn it",
                    self.transactional_id, describe(cause))
        self.stats.unknown_commits += 1
        self._state = "broken"
        self._discard_producers()
        if self.commit_check is None:
            raise CommitOutcomeUnknownError(
                f"Committing a batch of {self.transactional_id} did not complete ({describe(cause)}) and nothing "
                "tells whether it committed; start the pipeline again from its committed offset."
            )
        try:
            self.open()
            committed = self.commit_check(batch_id)
        except SinkFencedError:
            raise
        except Exception as error:  # noqa: BLE001 - any failure leaves the outcome unknown; say so, never guess
            self._state = "broken"
            learned = error.reason if isinstance(error, SinkError) else str(error)
            raise CommitOutcomeUnknownError(
                f"Committing a batch of {self.transactional_id} did not complete ({describe(cause)}) and whether it "
                f"committed could not be learned: {learned}. The pipeline starts again from its committed offset, "
                "which tells."
            ) from error
        log.warning("the batch of %s whose commit had an unknown outcome %s", self.transactional_id,
                    "committed" if committed else "did not commit; it is written again")
        return committed

    def _abort(self, exception: BaseException) -> BaseException:
        """Aborts the open transaction; returns the error to raise."""
        if isinstance(exception, KafkaException):
            exception = classify(exception.args[0], "writing a batch")
        if isinstance(exception, SinkFencedError):
            return self._fenced(exception)
        if isinstance(exception, SinkFatalError):
            self._state = "broken"
            return exception
        try:
            self._abort_transaction()
            self.stats.transactions_aborted += 1
        except KafkaException as abort_exception:
            abort_error = classify(abort_exception.args[0], "aborting a failed batch")
            if isinstance(abort_error, SinkFencedError):
                return self._fenced(abort_error)
            self._state = "broken"
            return SinkFatalError(abort_failed_text(abort_error.reason, exception))
        return exception

    def _fenced(self, error: SinkFencedError) -> SinkError:
        """The error of a fenced producer: final, unless the fence is likely a late request of a producer this
        sink dropped while Kafka did not answer (LATE_REQUEST_FENCE_SECONDS); then the pipeline starts again from
        its committed offset, which fences any other producer of it and reads what committed."""
        since_open = time.monotonic() - self._opened_at
        if not self._dropped_unanswered or since_open > self.late_request_seconds:
            log.info("%s fenced for good: %d dropped producers unanswered, %.1fs after opening",
                     self.transactional_id, self._dropped_unanswered, since_open)
            self._state = "fenced"
            return error
        self._dropped_unanswered -= 1
        self._state = "closed"  # a fenced producer has nothing on its way: dropping it is not counted
        self._discard_producers()
        self._state = "broken"
        return CommitOutcomeUnknownError(
            f"{error.reason}, right after it replaced a producer dropped while Kafka did not answer: a request of "
            "that producer which Kafka took up late is the likely cause, not another worker. The pipeline starts "
            "again from its committed offset, which tells what committed.", error.reason)

    def _abort_transaction(self) -> None:
        """abort_transaction, serving delivery reports meanwhile: librdkafka waits for the reports of the
        batch's undelivered (purged) messages, and they arrive only through poll()."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                self._served(self._producer.abort_transaction, min(1.0, max(0.1, deadline - time.monotonic())))
                return
            except KafkaException as exception:
                error = exception.args[0]
                if not error.retriable() or time.monotonic() >= deadline:
                    raise
            self._served(self._producer.poll, 0.1)  # outside the except clause (_served)

    # -- helpers ----------------------------------------------------------------------------------------------

    def _on_delivery(self, error: KafkaError | None, message) -> None:
        if error is not None and len(self._deliveries.failures) < 10:
            self._deliveries.failures.append((error, message.topic(), message.key()))
            if error.code() not in FENCED_CODES:
                log.debug("delivery failed: %s", describe(error))

    def _served(self, call: Callable[..., _T], *args) -> _T:
        """Calls a producer method that may serve delivery reports (poll, flush, close, the transaction calls), and
        raises what it raises as a new exception (_severed).

        confluent-kafka (2.16, on Python < 3.12) keeps some exceptions for good, and with them the traceback of every
        frame they pass, so those frames and their locals (this sink's callers, with their sources, sinks and
        producers) until the process exits:
        - an exception that left one of its callbacks, which the call then raises. This happens whenever a lane is
          fenced mid-flush: confluent-kafka raises the fatal _FENCED error from its error callback, then calls
          _on_delivery for the purged messages with that error still pending, and the error, or a SystemError caused
          by it, leaves the callback. So the exception the call raised is left holding nothing.
        - the exception being handled whenever it raises one of its own (its KafkaError takes the handled exception
          as context and never releases it). So the sink calls the producer outside its except clauses.
        """
        try:
            return call(*args)
        except BaseException as exception:
            raise _severed(exception) from None

    def _ensure_topics(self, specs: list[TopicSpec], if_retriable: str = "") -> None:
        """TopicAdmin.ensure, its failures as SinkErrors; `if_retriable` is a sentence added to a retriable one."""
        try:
            self.topics.ensure(specs)
        except TopicAdminError as error:
            if error.retriable:
                raise SinkRetriableError(f"{error} {if_retriable}".strip()) from None
            raise SinkError(str(error)) from None

    def _limit(self, topic: str) -> int:
        return min(int(self._config["message.max.bytes"]), self._topic_limit(topic))

    def _topic_limit(self, topic: str) -> int:
        return self.topics.max_message_bytes.get(topic) or int(self._config["message.max.bytes"])

    def _require_open(self) -> None:
        if self._state == "open":
            return
        if self._state == "fenced":
            raise SinkFencedError(f"Pipeline {self.transactional_id} was fenced by another worker; it must stop.")
        if self._state == "broken":
            raise SinkFatalError(f"The producer of {self.transactional_id} failed; call open() before writing.")
        raise SinkError(f"The sink of {self.transactional_id} is not open; call open() first.")

    def _count_committed(self, messages: Sequence[OutMessage], offset) -> None:
        stats, skipped = self.stats, self._deliveries.skipped
        stats.transactions_committed += 1
        stats.skipped_too_large += len(skipped)
        stats.messages += len(messages) - len(skipped)
        stats.bytes += self._batch_payload
        if offset is not None:
            stats.offsets_written += 1

    @property
    def _producer(self) -> Producer:
        return self._lanes[self._turn]

    def _take_turns(self) -> None:
        self._turn = (self._turn + 1) % len(self._lanes)

    def _discard_producers(self) -> None:
        """Drops the producers. What one still holds belongs to a transaction that is never committed: it is
        purged, and the next producer's init_transactions aborts that transaction on the broker. Producer.close()
        is not called: it aborts the open transaction and flushes, both without a time limit, so it never returns
        while Kafka is unreachable (and the pipeline could not stop). A producer's destruction, when its last
        reference goes here, ends its threads without either."""
        lanes, self._lanes = self._lanes, []
        if self._state == "broken":  # a request of these may still be on its way
            self._dropped_unanswered += len(lanes)
        while lanes:
            producer = lanes.pop()
            try:
                self._served(producer.purge, True, True, False)
            except KafkaException as exception:  # a fenced or failed producer reports its error once more
                log.debug("purging the producer of %s: %s", self.transactional_id, describe(exception.args[0]))
            del producer


def abort_failed_text(abort_failure: str, batch_failure: BaseException) -> str:
    """A batch failed and aborting it failed too: the producer is recreated, which aborts the batch."""
    failed = batch_failure.reason if isinstance(batch_failure, SinkError) else str(batch_failure)
    return (f"{abort_failure}. The producer is recreated, which aborts the batch (read_committed readers never see "
            f"it), and the batch is written again. The batch had failed because: {failed}")


def _severed(exception: BaseException) -> BaseException:
    """A new exception for `exception`: a KafkaException with the first Kafka error along its causes (a SystemError
    from a callback is caused by the error that was pending), else a copy. `exception` and its causes are left
    without traceback, cause or context, so that if confluent-kafka keeps one of them, it keeps nothing else."""
    reported, current, seen = None, exception, set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if reported is None and isinstance(current, KafkaException):
            reported = current
        following = current.__cause__
        current.__traceback__ = current.__cause__ = current.__context__ = None
        current = following
    if reported is not None:
        return KafkaException(*reported.args)
    try:
        return type(exception)(*exception.args)
    except Exception:  # noqa: BLE001 - an exception type that cannot be built from its args: raise the one we have
        return exception


def _key_text(key: bytes | None, limit: int = 200) -> str:
    if key is None:
        return "null"
    text = key.decode("utf-8", "replace")
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _too_large_warning(connector: str, replica_set: str, message: OutMessage, size: int, limit: int,
                       offset) -> bytes:
    key_text = (message.key or b"").decode("utf-8", "replace")
    position = json.loads(offset.to_value() or b"null") if offset is not None else None
    return json.dumps({
        "error": "message_too_large",
        "connector": connector,
        "rs": replica_set,
        "topic": message.topic,
        "key": key_text[:1000] if message.key is not None else None,
        "key_truncated": len(key_text) > 1000,
        "size": size,
        "limit": limit,
        "tombstone": message.value is None,
        "headers": [name for name, _ in message.headers or ()],
        "batch_offset": position,  # the source position this batch commits, to find the change again
        "ts_ms": int(time.time() * 1000),
    }, separators=(",", ":")).encode()

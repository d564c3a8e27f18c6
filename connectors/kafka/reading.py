"""Reading a topic up to the end it had when asked: its end offsets (asked again while partition leadership
settles), then a consume loop that stops once every partition's position has reached them. The offset store, the
snapshot chunk markers and the tests' reader all read this way."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, Consumer, IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from connectors.kafka.errors import LEADERSHIP_SETTLING_CODES, describe

log = logging.getLogger(__name__)

# consume() returns as soon as a message is there; with none it waits this long before the positions are checked
# again. The end is usually reached in one fetch, and a longer wait is added to every read of a small topic.
READ_POLL_SECONDS = 0.005
SETTLING_PAUSE_SECONDS = 0.2


class EndNotReached(Exception):
    """The read did not reach the ends within its time; `pending` are the partitions still short of theirs."""

    def __init__(self, pending: list[int]):
        super().__init__(f"partitions {pending} not read to their end")
        self.pending = pending


def end_offsets(admin: AdminClient, topic: str, partitions: list[int], timeout: float, *,
                stable_only: bool = False, fresh_admin: Callable[[], AdminClient] | None = None) -> dict[int, int]:
    """The end offset of each partition (with `stable_only`, its last stable offset: open transactions end it).

    A broker that was just resumed or restarted re-registers with its controller and meanwhile answers "no
    leader" or a stale leader epoch: those answers, and retriable ones, are asked again until `timeout`, on a
    client from `fresh_admin` when given (its metadata is new). Raises KafkaException otherwise."""
    if not partitions:
        return {}
    request = {TopicPartition(topic, p): OffsetSpec.latest() for p in partitions}
    isolation = IsolationLevel.READ_COMMITTED if stable_only else IsolationLevel.READ_UNCOMMITTED
    deadline = time.monotonic() + timeout
    while True:
        futures = admin.list_offsets(request, isolation_level=isolation, request_timeout=timeout)
        try:
            return {tp.partition: future.result().offset for tp, future in futures.items()}
        except KafkaException as exception:
            error: KafkaError = exception.args[0]
            settling = error.retriable() or error.code() in LEADERSHIP_SETTLING_CODES
            if not settling or time.monotonic() >= deadline:
                raise
            log.info("reading the end of %s: %s; asking again", topic, describe(error))
            time.sleep(SETTLING_PAUSE_SECONDS)
            if fresh_admin is not None:
                admin = fresh_admin()


def read_to_end(consumer: Consumer, topic: str, ends: dict[int, int], on_message: Callable, timeout: float,
                on_error: Callable[[KafkaError], None]) -> None:
    """Assigns the partitions of `ends` from their beginning and calls `on_message` for each record the consumer's
    isolation level delivers, until every position has reached its end (positions also move past commit markers
    and aborted records, which are never delivered). `on_error` gets each error message (it raises to stop).
    Raises EndNotReached after `timeout`."""
    pending = {p: end for p, end in ends.items() if end > 0}
    if not pending:
        return
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in pending])
    deadline = time.monotonic() + timeout
    while pending:
        for message in consumer.consume(num_messages=1000, timeout=READ_POLL_SECONDS):
            if message.error() is not None:
                on_error(message.error())
                continue
            on_message(message)
        for position in consumer.position([TopicPartition(topic, p) for p in list(pending)]):
            if position.offset >= pending[position.partition]:
                del pending[position.partition]
        if pending and time.monotonic() > deadline:
            raise EndNotReached(sorted(pending))

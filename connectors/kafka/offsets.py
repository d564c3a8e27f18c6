"""Reading pipeline offsets from the compacted offsets topic, and writing resets (schema: docs/offsets.md).

Loading reads every partition from its start to the end it had when loading began, with read_committed, so
offsets of aborted batches never count; the last value per key wins and a tombstone deletes. The end is the
read_uncommitted high watermark, not the last stable offset: another pipeline's open transaction can sit
before a committed record of ours, and stopping at it would miss that record.

Resets are written through a TransactionalSink with the pipeline's own transactional id, so a pipeline still
running somewhere is fenced (its next batch fails with SinkFencedError) and cannot overwrite the reset.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from datetime import datetime

from bson import Timestamp
from confluent_kafka import OFFSET_BEGINNING, Consumer, IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from connectors.errors import ConnectorError
from connectors.kafka.errors import describe
from connectors.kafka.offset_record import (
    STARTUP_LATEST,
    STARTUP_SNAPSHOT,
    STARTUP_TIMESTAMP,
    STARTUP_TOKEN,
    OffsetDecodeError,
    OffsetRecord,
    OffsetTombstone,
    decode_key,
)
from connectors.kafka.sink import TransactionalSink
from connectors.kafka.topics import TopicAdmin, TopicSpec, offsets_topic_spec

log = logging.getLogger(__name__)


class OffsetStoreError(ConnectorError):
    retriable = True


class OffsetStore:
    def __init__(
        self,
        bootstrap_servers: str,
        topic: str | TopicSpec = "cdc.offsets",
        *,
        timeout: float = 30.0,
        client_config: Mapping[str, object] | None = None,
    ):
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic if isinstance(topic, TopicSpec) else offsets_topic_spec(topic)
        self.timeout = timeout
        self.client_config = dict(client_config or {})
        self._topics = TopicAdmin(AdminClient({**self.client_config, "bootstrap.servers": bootstrap_servers}), timeout)

    # -- reading ----------------------------------------------------------------------------------------------

    def load(self, connector: str) -> dict[str, OffsetRecord]:
        """The committed offset of each replica set of `connector`, keyed by replica set name."""
        return {rs: record for (name, rs), record in self.load_all().items() if name == connector}

    def get(self, connector: str, replica_set: str) -> OffsetRecord | None:
        return self.load(connector).get(replica_set)

    def load_all(self) -> dict[tuple[str, str], OffsetRecord]:
        consumer = Consumer({
            **self.client_config,
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": "cdc-offsets-loader",  # required by librdkafka; no subscription, nothing is committed
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 50,  # the end is usually reached in one fetch; do not idle 500 ms after it
        })
        records: dict[tuple[str, str], OffsetRecord] = {}
        # Metadata first: assigning a partition whose leader is still unknown delays the first fetch by ~500 ms.
        ends = self._end_offsets(self._partitions(consumer))
        pending = {p: end for p, end in ends.items() if end > 0}
        if not pending:
            consumer.close()
            return records
        try:
            consumer.assign([TopicPartition(self.topic.name, p, OFFSET_BEGINNING) for p in pending])
            deadline = time.monotonic() + self.timeout
            while pending:
                for message in consumer.consume(num_messages=1000, timeout=0.05):
                    if message.error() is not None:
                        self._on_read_error(message.error())
                        continue
                    self._apply(records, message.key(), message.value())
                # The position also moves past commit markers and aborted records, which are never delivered.
                for position in consumer.position([TopicPartition(self.topic.name, p) for p in list(pending)]):
                    if position.offset >= pending[position.partition]:
                        del pending[position.partition]
                if pending and time.monotonic() > deadline:
                    raise OffsetStoreError(
                        f"Could not read topic {self.topic.name!r} to its end within {self.timeout}s (partitions "
                        f"{sorted(pending)}). A transaction of another producer may still be open; try again."
                    )
        finally:
            consumer.close()
        return records

    def _apply(self, records: dict, key: bytes | None, value: bytes | None) -> None:
        try:
            identity = decode_key(key or b"")
            if value is None:
                records.pop(identity, None)
            else:
                records[identity] = OffsetRecord.from_kafka(key, value)
        except OffsetDecodeError as error:
            log.warning("ignoring a record of %s that is not an offset record: %s", self.topic.name, error)

    def _on_read_error(self, error: KafkaError) -> None:
        if error.fatal() or not error.retriable():
            raise OffsetStoreError(f"Reading offsets topic {self.topic.name!r} failed ({describe(error)}).")
        log.warning("reading %s: %s (retrying)", self.topic.name, describe(error))

    def _partitions(self, client: Consumer) -> list[int]:
        name = self.topic.name
        try:
            metadata = client.list_topics(name, timeout=self.timeout)
        except KafkaException as error:
            raise OffsetStoreError(f"Could not read metadata of {name!r} ({describe(error.args[0])}).") from None
        topic = metadata.topics.get(name)
        if topic is None or (topic.error is not None and topic.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
            return []  # no pipeline has committed yet
        if topic.error is not None:
            raise OffsetStoreError(f"Could not read metadata of {name!r} ({describe(topic.error)}).")
        return sorted(topic.partitions)

    def _end_offsets(self, partitions: list[int]) -> dict[int, int]:
        if not partitions:
            return {}
        request = {TopicPartition(self.topic.name, p): OffsetSpec.latest() for p in partitions}
        futures = self._topics.admin.list_offsets(request, isolation_level=IsolationLevel.READ_UNCOMMITTED,
                                           request_timeout=self.timeout)
        try:
            return {tp.partition: future.result().offset for tp, future in futures.items()}
        except KafkaException as error:
            name = self.topic.name
            raise OffsetStoreError(f"Could not read the end of {name!r} ({describe(error.args[0])}).") from None

    # -- resets (the pipeline follows `startup` at its next start; see docs/offsets.md) -------------------------

    def reset_to_latest(self, connector: str, replica_set: str, requested_by: str | None = None) -> OffsetRecord:
        return self._reset(connector, replica_set, {"mode": STARTUP_LATEST}, requested_by)

    def reset_to_timestamp(self, connector: str, replica_set: str, timestamp: Timestamp | datetime,
                           requested_by: str | None = None) -> OffsetRecord:
        if isinstance(timestamp, datetime):
            timestamp = Timestamp(timestamp, 0)  # naive datetimes are taken as UTC (bson's rule)
        return self._reset(connector, replica_set, {"mode": STARTUP_TIMESTAMP, "timestamp": timestamp}, requested_by)

    def reset_to_token(self, connector: str, replica_set: str, token: dict,
                       requested_by: str | None = None) -> OffsetRecord:
        if not isinstance(token, dict) or not token:
            raise ValueError(f"a resume token is a non-empty document such as {{'_data': '82…'}}, not {token!r}")
        return self._reset(connector, replica_set, {"mode": STARTUP_TOKEN, "token": token}, requested_by)

    def request_resnapshot(self, connector: str, replica_set: str, requested_by: str | None = None) -> OffsetRecord:
        return self._reset(connector, replica_set, {"mode": STARTUP_SNAPSHOT}, requested_by)

    def delete(self, connector: str, replica_set: str) -> None:
        """Removes the offset: the pipeline then starts as on its first run (per its snapshot.mode)."""
        self.write(OffsetTombstone(connector, replica_set))

    def write(self, record: OffsetRecord | OffsetTombstone) -> None:
        """Writes one offset record in its own transaction, fencing the pipeline's producer if it still runs."""
        sink = TransactionalSink(self.bootstrap_servers, record.connector, record.replica_set,
                                 offsets_topic=self.topic, producer_config=self.client_config,
                                 topic_admin=self._topics, timeout=self.timeout)
        with sink:
            sink.write_batch([], record)

    def _reset(self, connector: str, replica_set: str, startup: dict, requested_by: str | None) -> OffsetRecord:
        startup = {**startup, "requested_by": requested_by, "requested_at_ms": int(time.time() * 1000)}
        record = OffsetRecord(connector, replica_set, startup=startup)
        self.write(record)
        return record

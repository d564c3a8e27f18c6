"""Reading pipeline offsets from the compacted offsets topic, and writing resets (schema: docs/offsets.md).

Loading reads partitions from their start to the end they had when loading began, with read_committed, so
offsets of aborted batches never count; the last value per key wins and a tombstone deletes. The end is the
read_uncommitted high watermark, not the last stable offset: another pipeline's open transaction can sit
before a committed record of ours, and stopping at it would miss that record. One pipeline's offset is read
from the one partition its key hashes to (murmur2, as the producer placed it), so other connectors' open
transactions in other partitions never hold it up; a read held up by one anyway is retriable (the coordinator
aborts a transaction left open after transaction.timeout.ms).

Resets are written through a TransactionalSink with the pipeline's own transactional id, so a pipeline still
running somewhere is fenced (its next batch fails with SinkFencedError) and cannot overwrite the reset.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from datetime import datetime

from bson import Timestamp
from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from connectors import ConnectorError
from connectors.kafka.client_log import with_client_logger
from connectors.kafka.errors import describe
from connectors.kafka.offset_record import (
    REPLICA_SET_KEY,
    STARTUP_LATEST,
    STARTUP_SNAPSHOT,
    STARTUP_TIMESTAMP,
    STARTUP_TOKEN,
    OffsetDecodeError,
    OffsetRecord,
    OffsetTombstone,
    decode_key,
    encode_key,
)
from connectors.kafka.partitioning import partition_for
from connectors.kafka.reading import EndNotReached, end_offsets, read_to_end
from connectors.kafka.sink import BATCH_HEADER, PIPELINE_LANES, TransactionalSink
from connectors.kafka.topics import TopicAdmin, TopicSpec, offsets_topic_spec

log = logging.getLogger(__name__)


def _key_connector(key: bytes) -> str | None:
    """The connector named by an offset key of any source's layout (`["<connector>", {…}]`, Kafka Connect's), or
    None when the key is not of that shape."""
    try:
        parsed = json.loads(key)
    except ValueError:
        return None
    if isinstance(parsed, list) and len(parsed) == 2 and isinstance(parsed[0], str):
        return parsed[0]
    return None


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
        self._topics = TopicAdmin(self._admin_client(), timeout)

    # -- reading ----------------------------------------------------------------------------------------------

    def load(self, connector: str) -> dict[str, OffsetRecord]:
        """The committed offset of each replica set of `connector`, keyed by replica set name. Records of other
        connectors (whatever their source's key layout) are skipped without being decoded."""
        return {rs: record for (_, rs), record in self._load(connector).items()}

    def get(self, connector: str, replica_set: str) -> OffsetRecord | None:
        record, _ = self.read(connector, replica_set)
        return record

    def committed_batch(self, connector: str, replica_set: str) -> str | None:
        """The batch id (TransactionalSink.last_batch_id) of the pipeline's last committed offset record."""
        _, batch_id = self.read(connector, replica_set)
        return batch_id

    def read(self, connector: str, replica_set: str) -> tuple[OffsetRecord | None, str | None]:
        """The pipeline's committed offset and the id of the batch that wrote it, from its key's partition."""
        key = encode_key(connector, replica_set)
        value, batch = self.read_value(key)
        try:
            record = OffsetRecord.from_kafka(key, value) if value is not None else None
        except OffsetDecodeError as error:
            raise OffsetStoreError(f"The offset of {connector}/{replica_set} is unreadable: {error}") from None
        return record, batch

    def read_value(self, key: bytes) -> tuple[bytes | None, str | None]:
        """The committed value of one offset key (None: none, or deleted) and the id of the batch that wrote it,
        read from the key's partition. Any source's key layout (its Position codec makes the key)."""
        found: dict[bytes, tuple[bytes | None, str | None]] = {}

        def keep(message) -> None:
            if message.key() == key:
                headers = dict(message.headers() or ())
                batch = headers.get(BATCH_HEADER)
                found[key] = (message.value(), batch.decode() if batch else None)

        consumer = self._consumer()
        try:
            partitions = self._partitions(consumer)
            if not partitions:
                return None, None
            own = partition_for(key, len(partitions))
            self._scan(consumer, [own], keep)
            if key not in found and len(partitions) > 1:
                # Not where it hashes now: the topic may have gained partitions since it was written.
                self._scan(consumer, [p for p in partitions if p != own], keep)
        finally:
            consumer.close()
        return found.get(key, (None, None))

    def load_all(self) -> dict[tuple[str, str], OffsetRecord]:
        """Every MongoDB-layout offset of the topic, keyed by (connector, replica set). Records of other layouts
        (PostgreSQL's and MySQL/MariaDB's keys share the topic) are skipped and counted in one debug line."""
        return self._load(None)

    def _load(self, connector: str | None) -> dict[tuple[str, str], OffsetRecord]:
        records: dict[tuple[str, str], OffsetRecord] = {}
        unreadable: list[OffsetDecodeError] = []

        def apply(message) -> None:
            key = message.key() or b""
            if connector is not None and _key_connector(key) != connector:
                return  # another connector's record: not ours to read, not worth a line
            try:
                self._apply(records, key, message.value())
            except OffsetDecodeError as error:
                unreadable.append(error)

        consumer = self._consumer()
        try:
            self._scan(consumer, self._partitions(consumer), apply)
        finally:
            consumer.close()
        if unreadable:
            # One line per read, not one per record: a shared topic holds many records of other sources.
            level = logging.WARNING if connector is not None else logging.DEBUG
            log.log(level, "ignored %d record(s) of %s that are not MongoDB offset records (first: %s)",
                    len(unreadable), self.topic.name, unreadable[0])
        return records

    def _admin_client(self) -> AdminClient:
        return AdminClient(with_client_logger({**self.client_config, "bootstrap.servers": self.bootstrap_servers}))

    def _consumer(self) -> Consumer:
        return Consumer(with_client_logger({
            **self.client_config,
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": "cdc-offsets-loader",  # required by librdkafka; no subscription, nothing is committed
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 50,  # the end is usually reached in one fetch; do not idle 500 ms after it
        }))

    def _scan(self, consumer: Consumer, partitions: list[int], on_message) -> None:
        """Calls on_message for every committed record of `partitions`, up to the ends they had at the start."""
        # Metadata first: assigning a partition whose leader is still unknown delays the first fetch by ~500 ms.
        ends = self._end_offsets(partitions)
        try:
            read_to_end(consumer, self.topic.name, ends, on_message, self.timeout, self._on_read_error)
        except EndNotReached as short:
            raise OffsetStoreError(
                f"Could not read topic {self.topic.name!r} to its end within {self.timeout}s (partitions "
                f"{short.pending}). A transaction of another producer may still be open; it is aborted "
                "at the latest after its transaction.timeout.ms, so trying again is safe."
            ) from None

    @staticmethod
    def _apply(records: dict, key: bytes, value: bytes | None) -> None:
        identity = decode_key(key)
        if value is None:
            records.pop(identity, None)
        else:
            records[identity] = OffsetRecord.from_kafka(key, value)

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
        try:
            return end_offsets(self._topics.admin, self.topic.name, partitions, self.timeout,
                               fresh_admin=self._renew_admin)
        except KafkaException as exception:
            name = self.topic.name
            raise OffsetStoreError(f"Could not read the end of {name!r} ({describe(exception.args[0])}).") from None

    def _renew_admin(self) -> AdminClient:
        # e.g. FENCED_LEADER_EPOCH after a broker stall: a new client starts from fresh metadata
        self._topics.admin = self._admin_client()
        return self._topics.admin

    # -- resets (the pipeline follows `startup` at its next start; see docs/offsets.md) -------------------------

    def reset_to_latest(self, connector: str, replica_set: str, requested_by: str | None = None, *,
                        key_field: str = REPLICA_SET_KEY) -> OffsetRecord:
        return self._reset(connector, replica_set, {"mode": STARTUP_LATEST}, requested_by, key_field)

    def reset_to_timestamp(self, connector: str, replica_set: str, timestamp: Timestamp | datetime,
                           requested_by: str | None = None, *, key_field: str = REPLICA_SET_KEY) -> OffsetRecord:
        if isinstance(timestamp, datetime):
            timestamp = Timestamp(timestamp, 0)  # naive datetimes are taken as UTC (bson's rule)
        return self._reset(connector, replica_set, {"mode": STARTUP_TIMESTAMP, "timestamp": timestamp}, requested_by,
                           key_field)

    def reset_to_token(self, connector: str, replica_set: str, token: dict,
                       requested_by: str | None = None, *, key_field: str = REPLICA_SET_KEY) -> OffsetRecord:
        if not isinstance(token, dict) or not token:
            raise ValueError(f"a resume token is a non-empty document such as {{'_data': '82…'}}, not {token!r}")
        return self._reset(connector, replica_set, {"mode": STARTUP_TOKEN, "token": token}, requested_by, key_field)

    def request_resnapshot(self, connector: str, replica_set: str, requested_by: str | None = None, *,
                           key_field: str = REPLICA_SET_KEY) -> OffsetRecord:
        return self._reset(connector, replica_set, {"mode": STARTUP_SNAPSHOT}, requested_by, key_field)

    def delete(self, connector: str, replica_set: str, *, key_field: str = REPLICA_SET_KEY) -> None:
        """Removes the offset: the pipeline then starts as on its first run (per its snapshot.mode)."""
        self.write(OffsetTombstone(connector, replica_set, key_field))

    def write(self, record: OffsetRecord | OffsetTombstone) -> None:
        """Writes one offset record in its own transaction, fencing the pipeline's producer if it still runs."""
        self.write_partition(record.connector, record.replica_set, record)

    def write_partition(self, connector: str, partition: str, record) -> None:
        """Writes one record of any source's layout (`key` and `to_value()`, None deleting it) in its own
        transaction under the partition pipeline's transactional id, fencing that pipeline if it still runs."""
        sink = TransactionalSink(self.bootstrap_servers, connector, partition,
                                 offsets_topic=self.topic, producer_config=self.client_config,
                                 topic_admin=self._topics, timeout=self.timeout, lanes=PIPELINE_LANES)
        with sink:
            sink.write_batch([], record)

    def _reset(self, connector: str, replica_set: str, startup: dict, requested_by: str | None,
               key_field: str) -> OffsetRecord:
        startup = {**startup, "requested_by": requested_by, "requested_at_ms": int(time.time() * 1000)}
        record = OffsetRecord(connector, replica_set, startup=startup, key_field=key_field)
        self.write(record)
        return record

"""Chunk markers: how a chunk committed by *another* producer is known to be done, exactly once.

A worker that reads a chunk as a separate task (a Celery task, another process) cannot write the pipeline's
offset record: that record is one value per pipeline, written by the coordinator. So the worker commits, in one
Kafka transaction of its own transactional id `<connector>.<partition>.chunk-<n>`, the chunk's events **and** a marker
record keyed by (connector, partition, snapshot id, chunk number) on the compacted topic
`<offset.storage.topic>.chunks`. Either both are visible to read_committed readers or neither is.

Before committing, the worker opens its producer (which fences any earlier producer of the same chunk: a zombie
attempt can no longer commit) and then looks for the marker: if it is there, an earlier attempt committed the
chunk and this one drops what it read and writes nothing. (The read itself goes on meanwhile: only the commit
needs the fence.) The coordinator folds markers into its offset record, and on restart
reads them for chunks its record does not show as done. When the snapshot completes, the coordinator deletes
the chunk markers in its final transaction and writes one "completed" record for the snapshot instead, so that a
late duplicate of a chunk task (a redelivered or resurrected task) still finds the snapshot done and writes nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from connectors import ConnectorError
from connectors.kafka.client_log import with_client_logger
from connectors.kafka.errors import describe
from connectors.kafka.reading import EndNotReached, end_offsets, read_to_end
from connectors.kafka.sink import OutMessage
from connectors.kafka.topics import TopicSpec, ensure_topics

COMPLETED = -1  # key in `ChunkMarkers.load()`'s result: the whole snapshot is done


class MarkerReadError(ConnectorError):
    retriable = True


def markers_topic(offsets_topic: str) -> str:
    return f"{offsets_topic}.chunks"


def markers_topic_spec(offsets_topic: str) -> TopicSpec:
    return TopicSpec(markers_topic(offsets_topic), 1, -1, {"cleanup.policy": "compact"},
                     required=frozenset({"cleanup.policy"}))


def marker_key(connector: str, partition: str, snapshot_id: str, number: int) -> bytes:
    # "rs": the name MongoDB, the first source, gave the partition field; kept so that existing markers stay valid
    fields = {"rs": partition, "snapshot": snapshot_id, "chunk": number if number != COMPLETED else "completed"}
    return json.dumps([connector, fields], separators=(",", ":"), ensure_ascii=False).encode()


class ChunkMarkers:
    def __init__(self, bootstrap_servers: str, offsets_topic: str, *, timeout: float = 30.0,
                 client_config: Mapping[str, object] | None = None, admin: AdminClient | None = None):
        """`admin`: a client to ask for the topic's end with (a worker's, kept across its chunk tasks); by default
        one is made for each load."""
        self.bootstrap_servers = bootstrap_servers
        self.spec = markers_topic_spec(offsets_topic)
        self.topic = self.spec.name
        self.timeout = timeout
        self.client_config = dict(client_config or {})
        self.admin = admin

    def ensure_topic(self) -> None:
        ensure_topics(self.bootstrap_servers, [self.spec])

    def message(self, connector: str, partition: str, snapshot_id: str, number: int, rows: int,
                read: dict | None = None) -> OutMessage:
        """`read`: what the source says about where the chunk was read (MySQL: its own binlog position)."""
        fields = {"rows": rows, "committed_ms": int(time.time() * 1000)}
        if read is not None:
            fields["read"] = read
        value = json.dumps(fields).encode()
        return OutMessage(self.topic, marker_key(connector, partition, snapshot_id, number), value)

    def tombstone(self, connector: str, partition: str, snapshot_id: str, number: int) -> OutMessage:
        return OutMessage(self.topic, marker_key(connector, partition, snapshot_id, number), None)

    def completed(self, connector: str, partition: str, snapshot_id: str, rows: int) -> OutMessage:
        """Replaces the snapshot's chunk markers (written with their tombstones, in the same transaction)."""
        return self.message(connector, partition, snapshot_id, COMPLETED, rows)

    def load(self, connector: str, partition: str, snapshot_id: str) -> dict[int, dict]:
        """{chunk number: marker} of the committed markers of one snapshot (empty when the topic is missing);
        `COMPLETED` is among the keys once the snapshot has completed."""
        found: dict[int, dict] = {}
        for key, value in self._read_all().items():
            try:
                name, fields = json.loads(key)
                if name != connector or fields.get("rs") != partition:
                    continue
                if fields.get("snapshot") != snapshot_id:
                    continue
                chunk = fields["chunk"]
                found[COMPLETED if chunk == "completed" else int(chunk)] = json.loads(value)
            except (ValueError, TypeError, KeyError, AttributeError):
                continue
        return found

    def _new_admin(self) -> AdminClient:
        return AdminClient(with_client_logger({**self.client_config, "bootstrap.servers": self.bootstrap_servers}))

    def _read_all(self) -> dict[bytes, bytes]:
        """The latest committed value of every key (tombstones delete), read to the end as of the call."""
        admin = self.admin or self._new_admin()
        try:
            metadata = admin.list_topics(self.topic, timeout=self.timeout)
        except KafkaException as error:
            raise MarkerReadError(f"could not read metadata of {self.topic!r}: {describe(error.args[0])}") from None
        topic = metadata.topics.get(self.topic)
        if topic is None or topic.error is not None and topic.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return {}
        partitions = sorted(topic.partitions)
        try:
            ends = end_offsets(admin, self.topic, partitions, self.timeout, fresh_admin=self._new_admin)
        except KafkaException as error:
            raise MarkerReadError(f"could not read the end of {self.topic!r}: {describe(error.args[0])}") from None
        values: dict[bytes, bytes] = {}
        if not any(ends.values()):
            return values

        def keep(message) -> None:
            if message.value() is None:
                values.pop(message.key(), None)
            else:
                values[message.key()] = message.value()

        def stop_on_fatal(error: KafkaError) -> None:
            if error.fatal():
                raise MarkerReadError(f"reading {self.topic!r}: {describe(error)}")

        consumer = Consumer(with_client_logger({
            **self.client_config,
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": "cdc-chunk-markers",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 50,
            "reconnect.backoff.ms": 10,
            "retry.backoff.ms": 20,
        }))
        try:
            consumer.list_topics(self.topic, timeout=self.timeout)  # a known leader spares assign() a 500 ms retry
            read_to_end(consumer, self.topic, ends, keep, self.timeout, stop_on_fatal)
        except EndNotReached:
            raise MarkerReadError(f"could not read {self.topic!r} to its end within {self.timeout}s") from None
        finally:
            consumer.close()
        return values

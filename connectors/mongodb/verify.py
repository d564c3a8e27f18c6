"""Verify's reads of a MongoDB replica set (connectors/core/verify.py, docs/verify.md).

A view is a transaction with `readConcern: snapshot`: every read in it sees the data at one cluster time, the
`operationTime` of its first reply. Collections are planned as the snapshot plans them, widened to MinKey and
MaxKey at both ends (a document inserted beyond the planned `_id`s before the view's time is read too), and read
in `_id` order, each document built into the snapshot's event by the connector's transformer. An event is
covered when its cluster time (`source.ts_ms` seconds and `source.ord`) is at or before the view's; the
connector has captured the whole view once its committed cluster time reaches it, or once a change stream opened
where the connector would resume shows no change to a captured collection up to the view's time: a quiet
connector without heartbeats commits no new position, however far the cluster's time moves on.
"""

from __future__ import annotations

import dataclasses
import logging
import time

from bson import MaxKey, MinKey, Timestamp
from pymongo.errors import OperationFailure, PyMongoError
from pymongo.read_concern import ReadConcern

from connectors import ConnectorError
from connectors.config.types import EventFormat
from connectors.core.snapshot.chunks import Chunk, Plan
from connectors.core.verify_events import SourceRow, key_text, rows_of_messages
from connectors.kafka.sink import OutMessage
from connectors.mongodb.client import open_client
from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.events import topic_name
from connectors.mongodb.position import MongoPosition
from connectors.mongodb.rawjson import raw_snapshot_options
from connectors.mongodb.records import ChangeRecord, Namespace
from connectors.mongodb.snapshots.chunks import document_bytes, plan_collection, range_query
from connectors.mongodb.snapshots.reader import MongoSnapshotReader
from connectors.mongodb.source import MongoEventBuilder, MongoSource, ReplicaSetSource
from connectors.mongodb.verify_events import read_event, read_key
from connectors.mongodb.verify_rows import rows_of_batch

log = logging.getLogger(__name__)

NO_SUCH_TRANSACTION = 251  # the server aborted the transaction (its lifetime limit) or no longer knows it


def token_cluster_time(token: dict | None) -> Timestamp | None:
    """The cluster time a resume token starts with: its `_data` (hex of a KeyString) opens with the type byte of a
    timestamp (0x82), then the seconds and the increment, 4 bytes each, big-endian."""
    data = (token or {}).get("_data")
    if not isinstance(data, str) or len(data) < 18 or data[:2] != "82":
        return None
    try:
        return Timestamp(int(data[2:10], 16), int(data[10:18], 16))
    except ValueError:
        return None


class MongoView:
    placeholder = None
    read_event = staticmethod(read_event)
    read_key = staticmethod(read_key)

    def __init__(self, config: ConnectorConfig, replica_set: ReplicaSetSource, client):
        self.config = config
        self.client = client
        self._reader = MongoSnapshotReader(config, client)
        self._tables = self._reader.collections()
        self._transformer = MongoEventBuilder(config, replica_set.name).transformer
        self._raw_options = raw_snapshot_options(client.codec_options)  # None: documents decoded as the client does
        self._session = client.start_session(causal_consistency=False)
        self._behind: MongoPosition | None = None  # a position found with captured changes after it
        self.runs_ahead = config.full_document == "updateLookup"
        try:
            if self._tables:
                self._session.start_transaction(read_concern=ReadConcern("snapshot"))
                first = Namespace.parse(self._tables[0])
                client[first.db][first.collection].find_one({}, session=self._session)
                self.cluster_time = self._session.operation_time
            else:  # nothing to read: only the topics' extra keys are looked for, at the current time
                self.cluster_time = client.admin.command("ping")["operationTime"]
        except BaseException:
            self.close()
            raise
        self.position = {"cluster_time": {"t": self.cluster_time.time, "i": self.cluster_time.inc}}
        self.idle_until_ms = self._idle_until_ms()

    def tables(self) -> list[str]:
        return self._tables

    def topic(self, table: str) -> str:
        return topic_name(self.config.topic_prefix, Namespace.parse(table))

    def row_bytes(self, table: str) -> int:
        return document_bytes(self.client, table)

    def plan(self, table: str, chunk_size: int) -> Plan:
        plan = plan_collection(self.client, table, chunk_size)
        if not plan.bounds:
            return Plan([MinKey(), MaxKey()], 0, "whole collection (empty when planned)")
        return dataclasses.replace(plan, bounds=[MinKey(), *plan.bounds[1:-1], MaxKey()])

    def read_rows(self, chunk: Chunk) -> list[SourceRow]:
        namespace = Namespace.parse(chunk.namespace)
        query = range_query(chunk.lower, chunk.upper, chunk.upper_inclusive)
        try:
            if self._written_as_stored(namespace):
                return self._rows_of_batches(namespace, query)
            return self._rows_built(namespace, query)
        except OperationFailure as error:
            if error.code != NO_SUCH_TRANSACTION:
                raise
            raise ConnectorError(
                f"the server ended Verify's snapshot transaction (at cluster time {self.position['cluster_time']}) "
                f"while it read {chunk.namespace}: a MongoDB transaction lasts at most the server's "
                "transactionLifetimeLimitSeconds (60 s by default), and this run's wait for the connector, topic "
                "reads and collection reads took longer; verify fewer collections at a time or raise that limit"
            ) from None

    def _written_as_stored(self, namespace: Namespace) -> bool:
        """Whether the collection's snapshot events are Debezium's envelope of each document as it is stored (no
        field rules), which `verify_rows` writes from the raw batches (as the snapshot's compiled writer does)."""
        transformer = self._transformer
        return (self._raw_options is not None and self.config.event_format is EventFormat.DEBEZIUM
                and transformer.filter.namespaces.includes(namespace)
                and transformer.field_rules.for_namespace(namespace).is_identity)

    def _rows_of_batches(self, namespace: Namespace, query: dict) -> list[SourceRow]:
        collection = self.client[namespace.db][namespace.collection]
        bare = self._transformer.events.context.bare_non_finite
        rows: list[SourceRow] = []
        with collection.find_raw_batches(query, session=self._session, batch_size=self.config.snapshot_fetch_size,
                                         sort=[("_id", 1)]) as batches:
            for batch in batches:
                rows.extend(rows_of_batch(batch, bare))
        return rows

    def _rows_built(self, namespace: Namespace, query: dict) -> list[SourceRow]:
        """The rows of the snapshot's events as the transformer builds them (field rules applied)."""
        collection = self.client[namespace.db][namespace.collection]
        if self._raw_options is not None:  # kept raw: written by the compiled module (rawjson)
            collection = collection.with_options(codec_options=self._raw_options)
        messages: list[OutMessage] = []
        rows: list[SourceRow] = []
        transform = self._transformer.transform
        snapshot_row = self._transformer.snapshot_row
        envelope = self.config.event_format is not EventFormat.FLATTENED  # whose `after` Verify reads
        for document in collection.find(query, session=self._session, batch_size=self.config.snapshot_fetch_size,
                                        sort=[("_id", 1)]):
            record = ChangeRecord.snapshot_read(namespace, document, cluster_time=self.cluster_time)
            if not envelope:
                messages.extend(transform(record))  # refused by rows_of_messages, with the reason
            elif (row := snapshot_row(record)) is not None and row[1] is not None:
                rows.append((key_text(row[0]), row[1]))
        return rows + rows_of_messages(messages, self.topic(f"{namespace.db}.{namespace.collection}"))

    def _idle_until_ms(self) -> int | None:
        """The wall-clock time (ms) up to which the replica set had written nothing after the view's cluster time
        (its primary's last write is the view's time): a snapshot read before it read the view's data. None when
        a write came after, or the server does not say (a mongos)."""
        now_ms = int(time.time() * 1000)
        try:
            last = self.client.admin.command("hello").get("lastWrite", {}).get("opTime", {}).get("ts")
        except PyMongoError:
            return None
        if isinstance(last, Timestamp) and (last.time, last.inc) <= (self.cluster_time.time, self.cluster_time.inc):
            return now_ms
        return None

    def covers(self, source: dict) -> bool:
        """An event at or before the view's cluster time (its `source.ts_ms` seconds and `ord`). A snapshot read's
        event carries the wall-clock time of the read instead, which on an idle replica set is past the cluster
        time of its last write: it is covered when read while nothing was written after the view's time."""
        ts_ms = int(source.get("ts_ms") or 0)
        if (ts_ms // 1000, int(source.get("ord") or 0)) <= (self.cluster_time.time, self.cluster_time.inc):
            return True
        snapshot = source.get("snapshot")
        return (self.idle_until_ms is not None and snapshot is not None and snapshot != "false"
                and ts_ms <= self.idle_until_ms)

    def reached(self, position: MongoPosition) -> bool:
        at = position.cluster_time or token_cluster_time(position.token)
        if at is not None and (at.time, at.inc) >= (self.cluster_time.time, self.cluster_time.inc):
            return True
        if self._behind is not None and self._behind == position:
            return False  # a captured change follows this position: the connector has it to catch up on
        quiet = self._quiet_since(position)
        if quiet is False:
            self._behind = position
        return bool(quiet)

    def _quiet_since(self, position: MongoPosition, seconds: float = 5.0) -> bool | None:
        """Whether no change to a captured collection (or its database) follows the connector's position up to the
        view's cluster time: read from a change stream opened where the connector resumes, until its first such
        change or its post-batch resume token passes the view's time. None: not found out (no position to resume
        from, the stream refused, or not read up to the view's time within `seconds`)."""
        start = position.start()
        if start.resume_after is None and start.start_after is None and start.start_at_operation_time is None:
            return None
        databases = sorted({Namespace.parse(table).db for table in self._tables})
        collections = set(self._tables)
        view = (self.cluster_time.time, self.cluster_time.inc)
        options = {name: value for name, value in dataclasses.asdict(start).items() if value is not None}
        match = {"$or": [{"ns.db": {"$in": databases}}, {"to.db": {"$in": databases}}]}
        deadline = time.monotonic() + seconds
        target = self.client[databases[0]] if len(databases) == 1 else self.client  # the narrowest the user may watch
        try:
            with target.watch([{"$match": match}], max_await_time_ms=200, **options) as stream:
                while time.monotonic() < deadline:
                    change = stream.try_next()
                    if change is not None:
                        at = change.get("clusterTime")
                        if at is None or (at.time, at.inc) <= view:
                            if self._captured(change, collections):
                                return False
                            continue
                        return True
                    resumed = token_cluster_time(stream.resume_token)
                    if resumed is not None and (resumed.time, resumed.inc) >= view:
                        return True
        except PyMongoError as error:
            log.info("verify %s: could not read the change stream after the connector's position (%s); waiting for "
                     "the connector", self.config.name, error)
        return None

    @staticmethod
    def _captured(change: dict, collections: set[str]) -> bool:
        """Whether a change touches a captured collection: its namespace or its rename's target is one, or it is a
        change to a whole captured database (no collection)."""
        for field in ("ns", "to"):
            namespace = change.get(field) or {}
            if "db" in namespace and ("coll" not in namespace or f"{namespace['db']}.{namespace['coll']}"
                                      in collections):
                return True
        return False

    def close(self) -> None:
        if self._session.in_transaction:
            self._session.abort_transaction()
        self._session.end_session()


class MongoPartitionVerifier:
    def __init__(self, config: ConnectorConfig, replica_set):
        self.config = config
        self.source = MongoSource(config).open(replica_set)
        self.name = self.source.name
        self.client = open_client(replica_set.client_options)

    def offset_key(self) -> bytes:
        return self.source.offset_key()

    def committed_position(self, value: bytes) -> MongoPosition | None:
        return self.source.decode_offset(value).position

    def open_view(self) -> MongoView:
        return MongoView(self.config, self.source, self.client)

    def close(self) -> None:
        self.client.close()


def partitions(config: ConnectorConfig) -> list[MongoPartitionVerifier]:
    found = MongoSource(config).partitions()
    if len(found) != 1:
        raise ConnectorError(
            f"Verify cannot compare connector {config.name}: it reads each shard of a sharded cluster directly "
            f"(mongodb.connection.mode=replica_set, {len(found)} shards), and each shard's position is its own, "
            "with no one cluster time to read every shard at; a connector reading through mongos "
            "(mongodb.connection.mode=sharded, the default) can be verified")
    return [MongoPartitionVerifier(config, found[0])]

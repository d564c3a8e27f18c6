"""PostgreSQL as a source of the core (connectors.core.source): one database and its replication slot is the one
partition; pgoutput through `ReplicationStream` is the change reader; Debezium's PostgreSQL connector the format.

Exactly once: every batch's offset record (Debezium's PostgreSQL offset, offsets.py) commits in the batch's Kafka
transaction; the slot is acknowledged (flush LSN) only once that transaction committed (`on_committed`, sent by the
reader thread), so a crash replays from the slot and the reader drops what the stored offset covers. While idle,
the keepalive position is committed as an offset-only transaction and then acknowledged, so a quiet (or fully
filtered) database's slot does not hold WAL.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

from connectors import AuthenticationFailed, ConnectorError, HistoryLost, SourceUnreachable
from connectors.core.metrics import StreamingMetrics
from connectors.core.pipeline import StopRequested
from connectors.core.snapshot.executors import SnapshotContext
from connectors.core.snapshot.incremental import IncrementalSnapshots
from connectors.core.snapshot.metrics import SnapshotMetrics
from connectors.core.source import Start, StoredOffset
from connectors.core.stream import Backoff, ChangeQueue, Idle
from connectors.postgres import chunk_tasks, offsets
from connectors.postgres.catalog import key_column_problems
from connectors.postgres.config import PostgresConfig
from connectors.postgres.errors import retriable
from connectors.postgres.events import PgEventBuilder, TableFilter
from connectors.postgres.incremental import PgWatermarks, signal_table_problem
from connectors.postgres.overlap import StreamOverlap
from connectors.postgres.pgoutput import Commit, Relation, lsn_from_text
from connectors.postgres.position import Position
from connectors.postgres.publication import (
    PublicationError,
    ensure_publication,
    slot_mismatch,
    slot_status,
    tables_without_replica_identity,
    user_tables,
)
from connectors.postgres.replication import ReplicationError, ReplicationStream, SlotCreated, with_session_settings
from connectors.postgres.slot_wait import create_slot_reporting
from connectors.postgres.snapshot import PgChunkTask, PgSnapshotProgress, PgSnapshotReader
from connectors.postgres.stream import Acknowledger, WalChange, WalReader

log = logging.getLogger(__name__)

SLOT_HELD = re.compile(r'replication slot "(?P<slot>[^"]+)" is active for PID (?P<pid>\d+)')  # SQLSTATE 55006


@dataclass(frozen=True)
class Database:
    name: str


def position_after(item, previous: Position | None) -> Position | None:
    if type(item) is WalChange:
        message = item.message
        if type(message) is Commit:
            return Position(item.commit_lsn, item.lsn, item.xid, item.commit_ts_us, True)
        if type(message) is Relation:
            return previous
        return Position(item.commit_lsn, item.lsn, item.xid, item.commit_ts_us, False)
    if isinstance(item, Idle) and item.position:
        return offsets.before(item.position, previous)
    return previous


def position_after_changes(changes: list, previous: Position | None) -> Position | None:
    """`position_after` folded over WAL changes: the last one's, unless it is a Relation (which keeps the one
    before it)."""
    for change in reversed(changes):
        if type(change.message) is not Relation:
            return position_after(change, previous)
    return previous


class SlotSource:
    progress_type = PgSnapshotProgress
    chunk_task_type = PgChunkTask
    commits_idle_positions = True

    def __init__(self, config: PostgresConfig, database: Database):
        self.config = config
        self.database = database
        self.name = database.name
        self.dsn = config.dsn()
        self.acks = Acknowledger()
        self.backoff = Backoff(config.connect_backoff_initial_delay_ms, config.connect_backoff_max_delay_ms,
                               config.connect_max_attempts)
        self.heartbeats_move_source = bool(config.heartbeat_action_query)  # its writes move the position
        self._sql: psycopg.Connection | None = None
        self._status_sql: psycopg.Connection | None = None  # status() runs on the reporting thread
        self._last_committed: Position | None = None
        self._replication: ReplicationStream | None = None  # holds the exported snapshot until streaming
        self.overlap = StreamOverlap()  # what chunks of a resumed snapshot read later already hold
        self._stop: threading.Event | None = None
        self._watermarks: PgWatermarks | None = None

    # -- offsets ------------------------------------------------------------------------------------------------

    def offset_key(self) -> bytes:
        return offsets.offset_key(self.config.name, self.config.topic_prefix)

    def decode_offset(self, value: bytes) -> StoredOffset:
        return offsets.decode_offset(value)

    def offset_record(self, position: Position | None, *, snapshot: dict | None = None, startup: dict | None = None,
                      extra: dict | None = None):
        overlap = None
        if position is not None:
            # a snapshot's stream start carries its filter; later positions keep the running stream's until passed
            overlap = position.overlap
            if overlap is None or overlap.passed(position.lsn_commit):
                overlap = self.overlap.kept_at(position.lsn_commit)
        return offsets.offset_record(self.config.name, self.config.topic_prefix, position, snapshot=snapshot,
                                     startup=startup, extra=extra, overlap=overlap)

    def position_after(self, item, previous: Position | None) -> Position | None:
        if previous is None and isinstance(item, Idle) and item.position:
            # an idle-only batch starts with no position: the last transaction's id comes from what is committed
            return offsets.before(item.position, self._last_committed)
        return position_after(item, previous)

    position_after_changes = staticmethod(position_after_changes)

    def on_committed(self, position: Position) -> None:
        self._last_committed = position
        self.acks.committed(position)

    # -- life cycle ---------------------------------------------------------------------------------------------

    def _connect(self) -> psycopg.Connection:
        """A SQL session for the catalog and the slot's checks, waiting while the server is away."""
        return connect_sql_waiting(self.dsn, self.backoff, self._stop, self.config.name)

    def sql(self) -> psycopg.Connection:
        if self._sql is None or self._sql.closed:
            self._sql = self._connect()
        return self._sql

    def connect(self, metrics: StreamingMetrics, stop: threading.Event | None = None) -> None:
        self._stop = stop  # a slot's creation is cancelled when the pipeline stops
        with self.sql().cursor() as cursor:
            cursor.execute("SHOW wal_level")
            if cursor.fetchone()[0] != "logical":
                raise ConnectorError("PostgreSQL runs with wal_level other than logical; set wal_level = logical "
                                     "(ALTER SYSTEM SET wal_level = logical) and restart the server")
            captured = TableFilter(self.config)
            tables = []
            if self.config.publication_autocreate_mode == "filtered":
                signal = self.config.signal_data_collection
                tables = [(s, t) for s, t in user_tables(cursor) if captured(s, t) or f"{s}.{t}" == signal]
            try:
                outcome = ensure_publication(cursor, self.config.publication_name,
                                             self.config.publication_autocreate_mode, tables)
            except PublicationError as error:
                raise ConnectorError(str(error)) from None
            log.info("publication %s: %s", self.config.publication_name, outcome)
            cursor.execute("SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s",
                           (self.config.publication_name,))
            published = [(s, t) for s, t in cursor.fetchall() if captured(s, t)]
            for schema, table, why in tables_without_replica_identity(cursor, published):
                log.warning("table %s.%s is published with %s: PostgreSQL refuses its UPDATEs and DELETEs; give it "
                            "a primary key or ALTER TABLE … REPLICA IDENTITY FULL", schema, table, why)
            key_problems = key_column_problems(cursor, self.config.column_rules, published)
            if key_problems:
                raise ConnectorError("; ".join(key_problems))
            if self.config.signal_data_collection:
                problem = signal_table_problem(cursor, self.config)
                if problem:
                    raise ConnectorError(problem)
        metrics.record_connected()

    def close(self) -> None:
        if self._watermarks is not None:
            self._watermarks.close()
        if self._replication is not None:
            self._replication.close()
            self._replication = None
        if self.config.slot_drop_on_stop and self._sql is not None and not self._sql.closed:
            self._drop_slot(wait=10)
        if self._sql is not None:
            self._sql.close()
            self._sql = None
        if self._status_sql is not None:
            self._status_sql.close()
            self._status_sql = None

    # -- the slot -----------------------------------------------------------------------------------------------

    def status(self) -> dict:
        """The slot as the server sees it (for reports and /metrics), on a connection of the reporting thread's."""
        try:
            if self._status_sql is None or self._status_sql.closed:
                self._status_sql = connect_sql(self.dsn)
            slot = slot_status(self._status_sql.cursor(), self.config.slot_name)
        except psycopg.Error as error:
            if self._status_sql is not None:
                self._status_sql.close()
            raise ConnectorError(f"reading the state of slot {self.config.slot_name!r} failed: {error}") from None
        if slot is None:
            return {"slot": self.config.slot_name, "exists": False}
        return {"slot": slot.slot_name, "exists": True, "active": slot.active,
                "confirmed_flush_lsn": slot.confirmed_flush_lsn, "restart_lsn": slot.restart_lsn,
                "retained_wal_bytes": slot.retained_wal_bytes, "wal_status": slot.wal_status}

    def _drop_slot(self, wait: float = 30) -> None:
        deadline = time.monotonic() + wait
        while True:
            status = slot_status(self.sql().cursor(), self.config.slot_name)
            if status is None:
                return
            mismatch = slot_mismatch(status, self.config.slot_name, self.config.dbname, self.config.plugin_name)
            if mismatch:  # another database's or plugin's slot: never ours to drop
                raise ConnectorError(mismatch)
            if not status.active:
                self.sql().execute("SELECT pg_drop_replication_slot(%s)", (self.config.slot_name,))
                log.info("dropped replication slot %s", self.config.slot_name)
                return
            if time.monotonic() > deadline:
                raise ConnectorError(f"replication slot {self.config.slot_name!r} is in use by process "
                                     f"{status.active_pid}; stop that reader first")
            time.sleep(0.1)

    def open_stream(self) -> ReplicationStream:
        return ReplicationStream(self.dsn, self.config.slot_name, [self.config.publication_name],
                                 status_interval=self.config.status_update_interval_ms / 1000)

    def create_slot_with_snapshot(self) -> SlotCreated:
        """A new slot (an existing one is dropped: a snapshot makes it obsolete) whose exported snapshot the
        snapshot reads; its connection is kept idle until streaming starts on it."""
        self._drop_slot()
        if self._replication is not None:
            self._replication.close()
        self._replication = self.open_stream()
        try:
            created = create_slot_reporting(self._replication, self._connect, self._stop, export_snapshot=True)
        except ReplicationError as error:
            raise ConnectorError(str(error)) from None
        log.info("created replication slot %s at %s with snapshot %s", created.slot_name,
                 created.consistent_point, created.snapshot_name)
        return created

    def export_view(self) -> tuple[ReplicationStream, SlotCreated] | None:
        """A snapshot exported by a temporary slot, for the chunks a resumed snapshot has left (its exported one
        died with its connection): the slot's consistent point says exactly which transactions it holds. The
        returned stream keeps it alive and drops the slot when closed. None when the server cannot make one (no
        free replication slot or WAL sender): those chunks are then read in fresh transactions."""
        name = f"{self.config.slot_name[:40]}_view_{uuid.uuid4().hex[:8]}"
        try:
            stream = ReplicationStream(self.dsn, name, [self.config.publication_name])
        except ReplicationError as error:
            log.warning("%s: %s; the resumed snapshot reads in fresh transactions", self.config.name, error)
            return None
        try:
            return stream, create_slot_reporting(stream, self._connect, self._stop, export_snapshot=True,
                                                 temporary=True)
        except ReplicationError as error:
            stream.close()
            log.warning("%s: %s; the resumed snapshot reads in fresh transactions", self.config.name, error)
            return None
        except BaseException:
            stream.close()
            raise

    def _check_slot(self, position: Position | None) -> None:
        status = slot_status(self.sql().cursor(), self.config.slot_name)
        if status is None:
            if position is None:
                with self.open_stream() as stream:
                    create_slot_reporting(stream, self._connect, self._stop, export_snapshot=False)
                log.info("created replication slot %s (no snapshot)", self.config.slot_name)
                return
            raise HistoryLost(
                f"replication slot {self.config.slot_name!r} does not exist, but the stored offset is at LSN "
                f"{position.lsn_proc}: the changes since then are gone. Take a new snapshot: set snapshot.mode="
                "when_needed (it re-snapshots by itself) or reset the connector's offset (re-snapshot)")
        mismatch = slot_mismatch(status, self.config.slot_name, self.config.dbname, self.config.plugin_name)
        if mismatch:
            raise ConnectorError(mismatch)
        if position is not None and status.confirmed_flush_lsn:
            flushed = lsn_from_text(status.confirmed_flush_lsn)
            if flushed > offsets.acknowledgeable(position):
                raise HistoryLost(
                    f"replication slot {self.config.slot_name!r} is at LSN {flushed}, past the stored offset (LSN "
                    f"{position.lsn_proc}): the slot was recreated or moved by another reader, so changes in "
                    "between are missing. Take a new snapshot: set snapshot.mode=when_needed or reset the offset")

    # -- where to start -----------------------------------------------------------------------------------------

    def start_from_startup(self, startup: dict) -> Start | None:
        return None

    def resume_start(self, position: Position) -> Start:
        self._last_committed = position
        return Start(position, f"resuming after LSN {position.lsn_proc} (commit {position.lsn_commit})")

    def start_from_config(self) -> Start | None:
        return None

    # -- streaming ----------------------------------------------------------------------------------------------

    def event_builder(self, transaction_state: dict | None = None) -> PgEventBuilder:
        return PgEventBuilder(self.config, self._connect, transaction_state=transaction_state, overlap=self.overlap)

    def open_reader(self, position: Position | None, queue: ChangeQueue, metrics: StreamingMetrics,
                    backoff: Backoff, stop: threading.Event) -> WalReader:
        self.overlap.current = position.overlap if position is not None else None
        if self.overlap.current is not None:
            log.info("%s: streaming from LSN %s drops the changes that snapshot chunks read later (up to LSN %s) "
                     "hold", self.config.name, position.lsn_proc, self.overlap.current.until)
        stream, self._replication = self._replication, None
        if stream is None:
            self._check_slot(position)
        return WalReader(self.open_stream, position, queue, self.acks, metrics, backoff, stop,
                         self.config.poll_interval_ms / 1000, stream=stream, server_answers=self._server_answers,
                         take_over=self.take_over_slot)

    def take_over_slot(self, message: str) -> bool:
        """When `message` (a refused START_REPLICATION) says the slot is held by a server process of this very
        connector (its application name): a pipeline of it that stopped answering, such as a frozen worker whose
        lease went to this one, ends that process (pg_terminate_backend) so the slot is taken over now rather than
        when the server's wal_sender_timeout notices. This pipeline fenced that one's Kafka producers before it
        started streaming, so the old one could not commit anything more anyway. A process of anything else is
        left alone. True when one was ended."""
        match = SLOT_HELD.search(message)
        if match is None or match["slot"] != self.config.slot_name:
            return False
        pid = int(match["pid"])
        try:
            with connect_sql(self.dsn) as conn:
                holder = conn.execute("SELECT application_name FROM pg_stat_activity WHERE pid = %s",
                                      (pid,)).fetchone()
                if holder is None or holder[0] != self.config.application_name:
                    return False
                ended = conn.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,)).fetchone()[0]
        except (psycopg.Error, ConnectorError) as error:
            log.debug("%s: could not end the slot's holder %d: %s", self.config.name, pid, error)
            return False
        if ended:
            log.warning("%s: replication slot %s was held by server process %d of this connector, which no longer "
                        "answered (a previous pipeline of it); ended it to take the slot over", self.config.name,
                        self.config.slot_name, pid)
        return bool(ended)

    def _server_answers(self) -> bool:
        """Whether the server accepts a TCP connection (or its socket file exists) now."""
        info = psycopg.conninfo.conninfo_to_dict(self.dsn)
        host = (info.get("host") or "localhost").split(",")[0]
        port = int(str(info.get("port") or 5432).split(",")[0])
        if host.startswith("/"):
            return os.path.exists(f"{host}/.s.PGSQL.{port}")
        try:
            socket.create_connection((host, port), timeout=1).close()
        except OSError:
            return False
        return True

    # -- snapshots ----------------------------------------------------------------------------------------------

    def snapshot_reader(self) -> PgSnapshotReader:
        return PgSnapshotReader(self, self.event_builder)

    def snapshot_context(self, config, bootstrap_servers: str, reader, stop: threading.Event,
                         metrics: SnapshotMetrics) -> SnapshotContext:
        return SnapshotContext(config, self.database, bootstrap_servers, reader, stop, metrics, self.event_builder)

    def self_committing_executor(self, context: SnapshotContext):
        return chunk_tasks.self_committing_executor(context)

    def incremental(self, pipeline, metrics: SnapshotMetrics) -> IncrementalSnapshots:
        # its chunks are read as text in the walsender's output settings, as the initial snapshot's
        self._watermarks = PgWatermarks(self.config, lambda: connect_sql(with_session_settings(self.dsn)), pipeline)
        return IncrementalSnapshots(pipeline, self._watermarks, metrics, self.config.name, self.name,
                                    self.config.incremental_snapshot_chunk_size, self.config.snapshot_chunk_max_bytes)


def connect_sql(dsn: str) -> psycopg.Connection:
    """A SQL session; SourceUnreachable when the server is away for now (errors.retriable: down, starting up,
    shutting down), AuthenticationFailed or ConnectorError when waiting would not help."""
    try:
        return psycopg.connect(dsn, autocommit=True)
    except psycopg.OperationalError as error:
        text = str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__
        if retriable(error):
            raise SourceUnreachable(f"cannot connect to PostgreSQL: {text}") from None
        if "authentication" in text:
            raise AuthenticationFailed(f"PostgreSQL refused the login: {text}") from None
        raise ConnectorError(f"cannot connect to PostgreSQL: {text}") from None


def connect_sql_waiting(dsn: str, backoff: Backoff, stop: threading.Event | None, name: str) -> psycopg.Connection:
    """`connect_sql`, tried again with `backoff` while the server is away (a restart, a failover), up to
    connect.max.attempts; StopRequested when the pipeline stops meanwhile."""
    attempt = 0
    while True:
        try:
            return connect_sql(dsn)
        except SourceUnreachable as error:
            attempt += 1
            if attempt > backoff.max_attempts:
                raise SourceUnreachable(f"{error} (gave up after {backoff.max_attempts} attempts, "
                                        "connect.max.attempts)") from None
            delay = backoff.delay(attempt)
            log.warning("%s: %s; retry %d in %.1fs", name, error, attempt, delay)
            if stop is not None and stop.wait(delay):
                raise StopRequested("for PostgreSQL to accept connections") from None
            if stop is None:
                time.sleep(delay)


class PostgresSource:
    def __init__(self, config: PostgresConfig):
        self.config = config

    def partitions(self) -> Sequence[Database]:
        return [Database(self.config.dbname)]

    def open(self, partition: Database) -> SlotSource:
        return SlotSource(self.config, partition)

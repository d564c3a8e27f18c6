"""MySQL / MariaDB as a source of the core (connectors.core.source): one server is one partition, its binlog the
change reader, Debezium's MySQL / MariaDB connector the event format.

Offset record (Kafka Connect's layout for these connector classes): key `["<name>",{"server":"<topic.prefix>"}]`,
value `{"file", "pos", "gtids", "event", "row", "ts_sec", "server_id"}` plus the core's `snapshot`, `startup`,
`transaction` and `incremental_snapshot`. `file`/`pos`/`gtids` name the start of a source transaction and
`event`/`row` how much of it is committed, so a restart inside a transaction skips exactly what Kafka has.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any

import pymysql

from connectors import ConnectorError, HistoryLost, SourceUnreachable
from connectors.core.metrics import StreamingMetrics
from connectors.core.snapshot.executors import ChunkTask, SnapshotContext
from connectors.core.snapshot.incremental import IncrementalSnapshots
from connectors.core.source import BuiltChanges, ChangeSummary, Start, StoredOffset
from connectors.core.stream import Backoff, ChangeQueue, Idle, ReaderFailed
from connectors.events import json_converter
from connectors.events import schema as s
from connectors.events.transaction_metadata import TransactionMessages
from connectors.kafka.sink import OutMessage, payload_size
from connectors.mysql import catalog, chunk_tasks
from connectors.mysql.binlog import (
    BinlogPosition,
    BinlogReader,
    Heartbeat,
    RowChange,
    RowsRun,
    RowsSpan,
    SchemaStatement,
    TableSchema,
    TransactionCommit,
    current_position,
    resume_position,
    row_change,
)
from connectors.mysql.checks import check_source, failures
from connectors.mysql.config import MySqlConfig
from connectors.mysql.connection import connect, with_reconnects
from connectors.mysql.envelope import SourceInfo, TableEvents
from connectors.mysql.incremental import MySqlWatermarks, check_signal_table
from connectors.mysql.overlap import ActiveOverlap
from connectors.mysql.position import OVERLAP_FIELD, MySqlPosition, MySqlSnapshotProgress
from connectors.mysql.schema_changes import SchemaChanges, affected_tables, truncated_table
from connectors.mysql.snapshot_reader import MySqlSnapshotReader
from connectors.mysql.status import binlog_files, bytes_behind, show_binlog_status

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OffsetRecord:
    key: bytes
    document: dict

    def to_value(self) -> bytes:
        return json.dumps(self.document, separators=(",", ":")).encode()


BINLOG_LAG_BASIS = "binlog time (whole seconds; the end of the change's second)"
ARRIVAL_LAG_BASIS = "arrival at the connector's binlog reader (within the change's binlog second, which is whole)"


def lag_source_time(ts_sec: int | None, arrived_ms: int | None = None) -> tuple[int | None, str | None]:
    """The source time the lag is measured from, and its basis. Binlog times are whole seconds: measured from them the
    lag of a caught-up connector saws between 0 and 1 s. The change happened within [ts, ts + 1 s) and before the
    binlog reader read it (`arrived_ms`; None: unknown, now is taken), so the latest time it can have happened is
    taken: its arrival while still in that second (sub-second: the lag is then the connector's own latency, its time
    in the change queue and in Kafka included), else the end of the second."""
    if not ts_sec:
        return None, None
    arrived_ms = int(time.time() * 1000) if not arrived_ms else arrived_ms
    second_end = ts_sec * 1000 + 999
    if arrived_ms <= second_end:
        return arrived_ms, ARRIVAL_LAG_BASIS
    return second_end, BINLOG_LAG_BASIS


class MySqlEventBuilder:
    """Binlog changes (and snapshot rows) → Debezium MySQL/MariaDB events. One per thread."""

    def __init__(self, config: MySqlConfig, transaction_state: dict | None = None,
                 overlap: ActiveOverlap | None = None):
        self.config = config
        self.overlap = overlap or ActiveOverlap()  # what chunks read in views of their own already hold
        self.transactions = (TransactionMessages(config.transaction_topic_name, config.key_schemas,
                                                 config.value_schemas, transaction_state)
                             if config.provide_transaction_metadata else None)
        self._tables: dict[TableSchema, TableEvents] = {}
        self._last_table: tuple[TableSchema | None, TableEvents | None] = (None, None)  # the reader reuses schemas
        self._captured: dict[tuple[str, str], bool] = {}
        # (database, table) -> {column: its DEFAULT and the type of a UUID, INET4 or INET6} as information_schema shows
        # them (a binlog table map has neither): read when a table is first seen, and again as each DDL statement on it
        # is handled
        self._catalogs: dict[tuple[str, str], dict[str, catalog.CatalogColumn]] = {}
        # the row number of the last row of a captured table (skipped operations too): Debezium's offset context
        # keeps it, and its schema change and truncate events carry it as source.row
        self._last_row = 0
        self._skipped = frozenset(config.skipped_operations)
        self.schema_changes = SchemaChanges(config) if config.include_schema_changes else None

    def table_events(self, schema: TableSchema) -> TableEvents:
        last, events = self._last_table
        if last is schema:
            return events
        events = self._tables.get(schema)
        if events is None:
            events = TableEvents(self.config, self._with_catalog(schema))
            self._tables[schema] = events
        self._last_table = (schema, events)
        return events

    def _with_catalog(self, schema: TableSchema) -> TableSchema:
        if schema.defaults_known:
            return schema
        key = (schema.database, schema.table)
        known = self._catalogs.get(key)
        if known is None:
            known = self._catalogs[key] = with_reconnects(
                self.config.connection, lambda connection: catalog.column_catalog(connection, *key))
        return catalog.with_catalog(schema, known)

    def _refresh_catalogs(self, statement: SchemaStatement) -> None:
        """The catalog (column_catalog: defaults, UUID/INET types) of the captured tables a DDL statement creates,
        alters or renames, read as it is handled: when the connector is caught up, before any later DDL changes them
        again (docs/mariadb.md)."""
        changed = [(kind, database, table) for kind, database, table in
                   affected_tables(statement.ddl, statement.database) if self._captures(database, table)]
        for _, database, table in changed:
            self._catalogs.pop((database, table), None)
        kept = [(database, table) for kind, database, table in changed if kind != "DROP"]
        if not kept:
            return
        read = with_reconnects(self.config.connection, lambda connection: {
            key: catalog.column_catalog(connection, *key) for key in kept})
        self._catalogs.update(read)

    def _captures(self, database: str, table: str) -> bool:
        key = (database, table)
        captured = self._captured.get(key)
        if captured is None:
            captured = self._captured[key] = self.config.captures_table(database, table)
        return captured

    def build(self, change: Any):
        if type(change) is tuple:
            change = row_change(change)
        if type(change) is RowChange:
            change = self.overlap.apply(change)
            if change is None:
                return None
            schema = change.schema
            if not self._captures(schema.database, schema.table) or not self.config.captures_gtid(change.gtid):
                return None
            self._last_row = change.row
            if change.op in self._skipped:
                return None
            source = self._source(change)
            if self.transactions is None:
                return change.op, self.table_events(schema).messages(change.op, change.before, change.after, source)
            # Debezium's id: the GTID, or where the transaction starts in the binlog when GTIDs are off
            start = change.position
            block = self.transactions.block(change.gtid or f"{start.file}:{start.pos}",
                                            f"{schema.database}.{schema.table}", change.ts_sec * 1000)
            return change.op, [*self.transactions.take(), *self.table_events(schema).messages(
                change.op, change.before, change.after, source, block)]
        if type(change) is SchemaStatement:
            self._tables.clear()
            self._last_table = (None, None)
            self._refresh_catalogs(change)
            messages = [] if self.schema_changes is None else self.schema_changes.messages(change, row=self._last_row)
            truncated = self._truncate_messages(change)
            if truncated:
                return "t", messages + truncated
            return None, messages
        if type(change) is TransactionCommit and self.transactions is not None:
            return None, self.transactions.end(change.ts_sec * 1000)
        return None, []  # a transaction's commit (or a heartbeat): moves the position only

    def build_changes(self, changes: list, messages: list) -> BuiltChanges:
        """`build` of each change (core.source.EventBuilder.build_changes). A row change is written from its rows
        event's parts (TableEvents.streamed_parts), made once per event; the queued rows of a binlog.RowsRun that
        follow one another are written in one compiled call (TableEvents.append_run); with transaction metadata, or
        while a snapshot's filter still applies, every change goes through `build`. Events built in one call share
        their `ts_ms`. The messages' bytes are counted as they are written (BuiltChanges.payload)."""
        built = BuiltChanges()
        payload = 0
        streamed = self.transactions is None and not self.overlap.filtering
        skipped = self._skipped
        captures_gtid = self.config.captures_gtid
        # (file, pos) -> the rows event's table and parts (None: its rows are not written): a rows event is one
        # table's and one operation's, before and after any DDL, so what is decided for its first row holds for all
        parts_of: dict[tuple[str, int], tuple[TableEvents, tuple[str, str, str, str]] | None] = {}
        at = made = None  # the previous row's rows event and what was decided for it
        run_counts = {"c": 0, "u": 0, "d": 0}  # the streamed rows since `first`, counted into `built` before any other
        first = last = None
        now = time.time_ns()
        index, total = 0, len(changes)
        while index < total:
            change = changes[index]
            kind = type(change)
            if streamed and (kind is RowsSpan or kind is tuple):
                if kind is RowsSpan:
                    run, row, end = change.run, change.first, change.end
                    index += 1
                    run_first, run_last = (run, row), (run, end - 1)
                else:  # rows row..end-1 of the run are queued one after another from here
                    run, row = change
                    end = min(run.count, row + total - index)
                    if changes[index + end - row - 1] != (run, end - 1):  # the reader queues a run's rows together
                        end = row + 1
                        while (end < run.count and index + end - row < total
                               and changes[index + end - row] == (run, end)):
                            end += 1
                    index += end - row
                    run_first, run_last = change, changes[index - 1]
                first_row = row
                if at is None or run.pos != at[1] or run.file != at[0]:
                    at = (run.file, run.pos)
                    if at in parts_of:
                        made = parts_of[at]
                    else:
                        made = parts_of[at] = self._streamed_parts(run, row, captures_gtid, skipped, now)
                if made is None or made is _FILTERED:
                    if made is None:
                        self._last_row = end - 1
                    built.filtered += end - row
                    continue
                self._last_row = end - 1
                events, parts = made
                while row < end:
                    row, size = events.append_run(messages, parts, run, row, end)
                    payload += size
                    if row < end:  # an update that moves its key
                        moved = run.row_change(row)
                        out = events.messages("u", moved.before, moved.after, self._source(moved), now_ns=now)
                        payload += sum(map(payload_size, out))
                        messages.extend(out)
                        row += 1
                run_counts[run.op] += end - first_row
                if first is None:
                    first = run_first
                last = run_last
                continue
            index += 1
            if kind is RowsSpan:  # with transaction metadata, or while a snapshot's filter applies: row by row
                if first is not None:
                    _count_run(built, run_counts, first, last)
                    first = None
                before = len(messages)
                for one in change:
                    built.add(self.build(one), one, messages)
                payload += sum(map(payload_size, messages[before:]))
                continue
            if streamed and kind is RowChange:
                if at is None or change.pos != at[1] or change.file != at[0]:
                    at = (change.file, change.pos)
                    if at in parts_of:
                        made = parts_of[at]
                    else:
                        made = parts_of[at] = self._streamed_parts(change, change.row, captures_gtid, skipped, now)
                if made is None or made is _FILTERED:
                    if made is None:
                        self._last_row = change.row
                    built.filtered += 1
                    continue
                self._last_row = change.row
                events, parts = made
                operation = change.op
                before = len(messages)
                if operation == "u" and events.moves_key(change.before, change.after):
                    messages.extend(events.messages(operation, change.before, change.after, self._source(change),
                                                    now_ns=now))
                else:
                    events.append_streamed(messages, parts, operation, change.before, change.after, change.row)
                payload += sum(map(payload_size, messages[before:]))
                run_counts[operation] += 1
                if first is None:
                    first = change
                last = change
            else:
                if first is not None:
                    _count_run(built, run_counts, first, last)
                    first = None
                before = len(messages)
                built.add(self.build(change), change, messages)
                payload += sum(map(payload_size, messages[before:]))
        if first is not None:
            _count_run(built, run_counts, first, last)
        built.payload = payload
        return built

    def _streamed_parts(self, change: RowChange | RowsRun, row: int, captures_gtid, skipped, now: int):
        """For a rows event's first row (a RowChange and its row, or a RowsRun and the row that stands for all):
        its table's TableEvents and the event's parts; _FILTERED when its table or GTID is not captured; None when
        captured but its operation is skipped."""
        schema = change.schema
        if not self._captures(schema.database, schema.table) or not captures_gtid(change.gtid):
            return _FILTERED
        if change.op in skipped:
            return None
        events = self.table_events(schema)
        return events, events.streamed_parts(change.op, self._source(change, row), now)

    def _truncate_messages(self, statement: SchemaStatement) -> list[OutMessage]:
        """The truncate event of a captured table (when skipped.operations lets "t" through)."""
        if "t" in self._skipped:
            return []
        truncated = truncated_table(statement.ddl, statement.database)
        if truncated is None or not self._captures(*truncated) or not self.config.captures_gtid(statement.gtid):
            return []
        database, table = truncated
        schema = with_reconnects(self.config.connection,
                                 lambda connection: catalog.table_schema(connection, database, table))
        events = TableEvents(self.config, schema)
        position = statement.start or statement.position
        source = SourceInfo(database, table, statement.ts_sec * 1000, statement.server_id, position.file or "",
                            position.pos or 0, self._last_row, "false", statement.gtid,
                            query=statement.ddl if self.config.include_query else None)
        return events.truncate_messages(source)  # a statement outside BEGIN/COMMIT: no transaction block

    def _source(self, change: RowChange | RowsRun, row: int | None = None) -> SourceInfo:
        """A row's source block: a RowChange's (`row` its own by default), or row `row` of a RowsRun's."""
        return SourceInfo(change.schema.database, change.schema.table, change.ts_sec * 1000, change.server_id,
                          change.file, change.pos, change.row if row is None else row, "false", change.gtid,
                          change.thread, change.query if self.config.include_query else None)

    def describe(self, change: Any) -> ChangeSummary:
        position = resume_position(change).to_offset()
        if type(change) is tuple:  # a RowsRun holds what is read below for all of its rows
            change = change[0]
        elif type(change) is RowsSpan:
            change = change.run
        ts = getattr(change, "ts_sec", None)
        summary = {"op": getattr(change, "op", None)}
        schema = getattr(change, "schema", None)
        if schema is not None:
            summary["table"] = f"{schema.database}.{schema.table}"
        source_ms, basis = lag_source_time(ts, getattr(change, "arrived_ms", None))
        return ChangeSummary(source_ms, basis, position, summary)

    def idle(self) -> list:
        return []

    def heartbeat(self) -> list:
        """Debezium's heartbeat record on `__debezium-heartbeat.<prefix>`, after `heartbeat.action.query`."""
        if self.config.heartbeat_action_query:
            with_reconnects(self.config.connection,
                            lambda connection: connection.cursor().execute(self.config.heartbeat_action_query))
        key = json_converter.envelope(_HEARTBEAT_KEY, {"serverName": self.config.topic_prefix},
                                      self.config.key_schemas)
        value = json_converter.envelope(_HEARTBEAT_VALUE, {"ts_ms": int(time.time() * 1000)},
                                        self.config.value_schemas)
        return [OutMessage(self.config.heartbeat_topic_name, key.encode(), value.encode())]

    def transaction_state(self) -> dict | None:
        return self.transactions.state() if self.transactions is not None else None


_HEARTBEAT_KEY = s.struct([("serverName", s.string())], name="io.debezium.connector.common.ServerNameKey")
_HEARTBEAT_VALUE = s.struct([("ts_ms", s.int64())], name="io.debezium.connector.common.Heartbeat")


# What one decoded column value holds in memory beyond its bytes in the binlog, roughly: its slot in the row's dict
# (which grows by a third ahead) and its Python object's header (an int 28 bytes, a str 49 + its text, a Decimal 104,
# a datetime 48). A 20-column row of ~200 binlog bytes (bench.wide_rows') is ~1.7 kB of objects (tracemalloc) and is
# counted 2.2 kB.
QUEUED_VALUE_BYTES = 100


def queued_row_bytes(row: RowChange, binlog_bytes: int) -> int:
    """What a row change waiting in the change queue is counted as for max.queue.size.in.bytes: its share of its rows
    event's bytes and QUEUED_VALUE_BYTES per column of each of its images."""
    images = (row.before is not None) + (row.after is not None)
    return binlog_bytes + images * len(row.schema.columns) * QUEUED_VALUE_BYTES


# What one queued row of a binlog.RowsRun is counted beyond its share of the event's bytes (what its (run, row) tuple
# and its slot in the queue's list held when each row was queued alone; its RowsSpan holds less).
QUEUED_RUN_ROW_BYTES = 72


def queued_run_row_bytes(binlog_bytes: int) -> int:
    """As queued_row_bytes, for a row of a RowsRun: its rows stay undecoded in the queue."""
    return binlog_bytes + QUEUED_RUN_ROW_BYTES


def queued_position(item) -> MySqlPosition:
    """The position after a queued change: a `(run, row)` or a RowsSpan of a binlog.RowsRun, or a change with its
    own."""
    kind = type(item)
    return MySqlPosition(resume_position(item),
                         (item[0] if kind is tuple else item.run if kind is RowsSpan else item).ts_sec)


class BinlogChangeReader(threading.Thread):
    """Reads the binlog from a position into the pipeline's queue; reopens after a dropped connection from the
    last position it queued (the library's own reconnect would replay from where it was opened).

    `report_start`: the start is "now" (no stored position); it is queued first as an `Idle` position, which the
    pipeline commits at once, so a restart resumes there."""

    def __init__(self, config: MySqlConfig, start: BinlogPosition, changes: ChangeQueue,
                 metrics: StreamingMetrics, backoff: Backoff, stop: threading.Event, report_start: bool = False):
        super().__init__(name=f"binlog-{config.name}", daemon=True)
        self.config, self.changes, self.metrics, self.backoff, self.stop = config, changes, metrics, backoff, stop
        self.position = start
        self.report_start = report_start

    def _put(self, item) -> bool:
        while not self.stop.is_set():
            try:
                self.changes.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def _put_span(self, span: RowsSpan, size: int) -> bool:
        """Queues a RowsRun's rows as one item (split where the queue has no room for all); False when stopped first.
        `size`: each row's bytes."""
        rest: RowsSpan | None = span
        while rest is not None:
            if self.stop.is_set():
                return False
            try:
                rest = self.changes.put_span(rest, timeout=0.2, change_bytes=size)
            except queue.Full:
                continue
        self.position = resume_position(span)
        return True

    def _put_rows(self, rows: list, event_bytes: int) -> bool:
        """Queues a rows event's rows (under one lock for as many as there is room for); False when stopped first."""
        done = 0
        size = queued_row_bytes(rows[0], event_bytes // len(rows)) if self.changes.max_bytes else 0
        while done < len(rows):
            if self.stop.is_set():
                return False
            try:
                done += self.changes.put_many(rows[done:] if done else rows, timeout=0.2, item_bytes=size)
            except queue.Full:
                continue
        self.position = resume_position(rows[-1])
        return True

    def run(self) -> None:
        if self.report_start and not self._put(Idle(MySqlPosition(self.position, int(time.time())))):
            return
        attempt = 0
        while not self.stop.is_set():
            reader = BinlogReader(self.config.connection, self.config.server_id, start=self.position,
                                  heartbeat_seconds=1.0, wanted=self.config.reads_rows_of,
                                  annotations=self.config.include_query, runs=True)
            rows: list[RowChange] = []  # a rows event's rows, queued together once its last is read
            try:
                for item in reader:
                    attempt = 0
                    if type(item) is RowChange:
                        rows.append(item)
                        if item.position.row:  # not its rows event's last: the others are decoded already
                            continue
                        if not self._put_rows(rows, reader.rows_event_bytes):
                            return
                        rows = []
                    elif type(item) is RowsRun:
                        size = (queued_run_row_bytes(reader.rows_event_bytes // item.count)
                                if self.changes.max_bytes else 0)
                        if not self._put_span(RowsSpan(item, item.first, item.count), size):
                            return
                    elif type(item) is Heartbeat:
                        if not self._put(Idle(MySqlPosition(item.position, int(time.time())))):
                            return
                    else:
                        if not self._put(item):
                            return
                        self.position = item.position
                    if self.stop.is_set():
                        return
                return
            except HistoryLost as error:
                self._put(ReaderFailed(error))
                return
            except SourceUnreachable as error:
                attempt += 1
                if attempt > self.backoff.max_attempts:
                    self._put(ReaderFailed(error))
                    return
                self.metrics.record_error(str(error))
                log.warning("%s: %s; reopening the binlog (attempt %d)", self.config.name, error, attempt)
                if self.stop.wait(self.backoff.delay(attempt)):
                    return
            except BaseException as error:  # noqa: BLE001 - handed to the pipeline
                self._put(ReaderFailed(error if isinstance(error, Exception) else ConnectorError(str(error))))
                return
            finally:
                reader.close()


@dataclass(frozen=True)
class ServerPartition:
    name: str


class ServerSource:
    """One MySQL / MariaDB server as the partition one pipeline reads."""

    progress_type = MySqlSnapshotProgress
    chunk_task_type = ChunkTask

    def __init__(self, config: MySqlConfig, partition: ServerPartition):
        self.config = config
        self.partition = partition
        self.name = partition.name
        self.overlap = ActiveOverlap(lambda: connect(config.connection))
        self.heartbeats_move_source = bool(config.heartbeat_action_query)  # its writes move the position
        self._last_committed: MySqlPosition | None = None
        self._watermarks: MySqlWatermarks | None = None
        self._stop: threading.Event | None = None  # the pipeline's (connect)

    # -- offsets ------------------------------------------------------------------------------------------------

    def offset_key(self) -> bytes:
        return json.dumps([self.config.name, {"server": self.config.topic_prefix}], separators=(",", ":")).encode()

    def decode_offset(self, value: bytes) -> StoredOffset:
        try:
            document = json.loads(value)
        except ValueError as error:
            raise ValueError(f"not JSON: {error}") from None
        if not isinstance(document, dict):
            raise ValueError("not a JSON object")
        position = None
        if document.get("file") or document.get("gtids"):
            position = MySqlPosition.from_json(document)
        return StoredOffset(position, document.get("snapshot"), document.get("startup"),
                            document.get("transaction"), document.get("incremental_snapshot"))

    def offset_record(self, position: MySqlPosition | None, *, snapshot: dict | None = None,
                      startup: dict | None = None, extra: dict | None = None) -> OffsetRecord:
        document: dict[str, Any] = {}
        if position is not None:
            document.update(position.binlog.to_offset())
            document["ts_sec"] = position.ts_sec
            document["server_id"] = self.config.server_id
            binlog = position.binlog
            overlap = position.overlap
            overlap = (overlap if overlap is not None and not overlap.passed(binlog.file, binlog.pos)
                       else self.overlap.kept_at(binlog.file, binlog.pos))
            if overlap is not None:
                document[OVERLAP_FIELD] = overlap.to_json()
        if snapshot is not None:
            document["snapshot"] = snapshot
        if startup is not None:
            document["startup"] = startup
        document.update(extra or {})
        return OffsetRecord(self.offset_key(), document)

    @staticmethod
    def position_after(item: Any, previous: MySqlPosition | None) -> MySqlPosition | None:
        if isinstance(item, Idle):
            return item.position if item.position is not None else previous
        return queued_position(item)

    @staticmethod
    def position_after_changes(changes: list, previous: MySqlPosition | None) -> MySqlPosition | None:
        """`position_after` folded over changes (no markers): each change carries the position after it."""
        return queued_position(changes[-1]) if changes else previous

    def on_committed(self, position: MySqlPosition) -> None:
        self._last_committed = position

    def status(self) -> dict:
        """The server's binlog end against what Kafka has (for reports and /metrics); one short connection, on
        the reporting thread, every few seconds."""
        connection = connect(self.config.connection)  # a ConnectorError that says what failed
        try:
            with connection.cursor() as cursor:
                end = show_binlog_status(cursor)
                files = binlog_files(cursor)
        except pymysql.err.MySQLError as error:
            raise ConnectorError(f"reading the binlog status failed: {error}") from None
        finally:
            connection.close()
        captured = self._last_committed.binlog if self._last_committed is not None else None
        return {"binlog_file": end.file, "binlog_position": end.position, "server_gtids": end.gtids or None,
                "binlog_files": len(files), "binlog_bytes": sum(size for _, size in files),
                "captured_file": captured.file if captured else None,
                "captured_position": captured.pos if captured else None,
                "captured_gtids": captured.gtids if captured else None,
                "behind_bytes": bytes_behind(files, captured.file, captured.pos, end) if captured else None}

    # -- life cycle ---------------------------------------------------------------------------------------------

    def connect(self, metrics: StreamingMetrics, stop: threading.Event | None = None) -> None:
        """Checks what the source needs (binlog settings, privileges) before anything is written."""
        self._stop = stop  # a wait for MySQL's global read lock ends when the pipeline stops
        problems = failures(check_source(self.config.connection, self.config.snapshot_locking_mode))
        if problems:
            raise ConnectorError(f"{self.config.name}: MySQL/MariaDB at {self.config.connection.describe()} is not "
                                 "ready for change capture: " + "; ".join(p.message() for p in problems))
        problem = check_signal_table(self.config)
        if problem:
            raise ConnectorError(f"{self.config.name}: {problem}")
        metrics.record_connected()

    def close(self) -> None:
        if self._watermarks is not None:
            self._watermarks.close()

    # -- where to start -----------------------------------------------------------------------------------------

    def resume_start(self, position: MySqlPosition) -> Start:
        b = position.binlog
        return Start(position, f"resuming at gtids={b.gtids} file={b.file} pos={b.pos} event={b.event} row={b.row}")

    def start_from_startup(self, startup: dict) -> Start | None:
        if startup.get("mode") == "position" and isinstance(startup.get("position"), dict):
            return Start(MySqlPosition.from_json(startup["position"]), "offset reset to a binlog position")
        return None

    def start_from_config(self) -> Start | None:
        """snapshot.mode=never: Debezium reads the binlog from its beginning (the oldest file the server has)."""
        if self.config.snapshot_mode != "never":
            return None
        connection = connect(self.config.connection)
        try:
            with connection.cursor() as cursor:
                cursor.execute("SHOW BINARY LOGS")
                first = cursor.fetchone()
        finally:
            connection.close()
        if first is None:
            return None
        return Start(MySqlPosition(BinlogPosition(file=first[0], pos=4)),
                     f"snapshot.mode=never: from the oldest binlog, {first[0]}")

    # -- streaming ----------------------------------------------------------------------------------------------

    def event_builder(self, transaction_state: dict | None = None) -> MySqlEventBuilder:
        return MySqlEventBuilder(self.config, transaction_state, self.overlap)

    def open_reader(self, position: MySqlPosition | None, queue: ChangeQueue, metrics: StreamingMetrics,
                    backoff: Backoff, stop: threading.Event) -> BinlogChangeReader:
        self.overlap.current = position.overlap if position is not None else None
        if self.overlap.current is not None:
            until = self.overlap.current.until
            log.info("%s: streaming from %s:%s drops the changes that snapshot chunks read later (up to %s:%s) hold",
                     self.config.name, position.binlog.file, position.binlog.pos, until.file, until.pos)
        # no position (streaming from now): "now" is taken here, before the pipeline shows it streams
        start = position.binlog if position is not None else current_position(self.config.connection)
        return BinlogChangeReader(self.config, start, queue, metrics, backoff, stop, report_start=position is None)

    # -- snapshots ----------------------------------------------------------------------------------------------

    def snapshot_reader(self) -> MySqlSnapshotReader:
        return MySqlSnapshotReader(self.config, self._stop)

    def snapshot_context(self, config, bootstrap_servers: str, reader, stop: threading.Event,
                         metrics) -> SnapshotContext:
        return SnapshotContext(config, self.partition, bootstrap_servers, reader, stop, metrics, self.event_builder,
                               adapt_remote=chunk_tasks.routed_executor)

    def self_committing_executor(self, context: SnapshotContext):
        return chunk_tasks.self_committing_executor(context)

    def incremental(self, pipeline, metrics) -> IncrementalSnapshots:
        self._watermarks = MySqlWatermarks(self.config, pipeline)
        return IncrementalSnapshots(pipeline, self._watermarks, metrics, self.config.name, self.name,
                                    self.config.incremental_snapshot_chunk_size, self.config.snapshot_chunk_max_bytes)


class MySqlSource:
    """A MySQL / MariaDB server: one partition, named after `topic.prefix`."""

    def __init__(self, config: MySqlConfig):
        self.config = config

    def partitions(self) -> list[ServerPartition]:
        return [ServerPartition(self.config.topic_prefix)]

    def open(self, partition: ServerPartition) -> ServerSource:
        return ServerSource(self.config, partition)


_FILTERED = object()  # build_changes: a rows event whose table or GTID is not captured


def _count_run(built: BuiltChanges, counts: dict[str, int], first: Any, last: Any) -> None:
    """Counts a run of streamed rows into `built` (first and last change, by operation) and zeroes `counts`."""
    built.captured_run({operation: count for operation, count in counts.items() if count}, first, last)
    for operation in counts:
        counts[operation] = 0

"""The core's EventBuilder for PostgreSQL: WAL changes and snapshot rows → Debezium PostgreSQL events (envelope.py)
through Kafka Connect's JsonConverter encoding, keys `{<primary key columns>}` (null without a primary key).

A Relation message (sent before a table's first change of a session and again after its schema changed) gives the
table's row schema from that change on. Replica identity: with DEFAULT, `before` of a delete holds the key columns
only (required non-key columns get Debezium's fallback for their type, RowMapper.fallback: its struct cannot
leave them null); with FULL, the whole old row, and an unchanged TOASTed value of the new row is taken from it
(else it becomes `unavailable.value.placeholder`). An update that changes the key is a delete (+ tombstone) and a
create, as Debezium emits it.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from connectors.core.source import BuiltChanges, ChangeSummary
from connectors.events import json_converter
from connectors.events import schema as s
from connectors.events.json_converter import envelope as encode
from connectors.events.schema import Field
from connectors.events.transaction_metadata import TransactionMessages
from connectors.events.version import SOURCE_VERSION
from connectors.kafka.sink import OutMessage
from connectors.postgres import envelope as env
from connectors.postgres import pgoutput as p
from connectors.postgres.catalog import describe_type, published_columns, table_columns
from connectors.postgres.compiled import compiled, slots_maker
from connectors.postgres.config import PostgresConfig
from connectors.postgres.errors import retriable
from connectors.postgres.overlap import StreamOverlap
from connectors.postgres.rows import RowColumn, RowMapper

log = logging.getLogger(__name__)

VERSION = SOURCE_VERSION
_CATALOG_ATTEMPTS = 5  # catalog reads on fresh connections that each failed (each connection waits for the server)
_ZERO = {"int8": 0, "int16": 0, "int32": 0, "int64": 0, "float32": 0.0, "float64": 0.0, "boolean": False,
         "string": "", "bytes": b""}


_make_message = slots_maker(OutMessage)


def now_ns() -> int:
    return time.time_ns()


class TableFilter:
    def __init__(self, config: PostgresConfig):
        self.schema_include = [re.compile(x) for x in config.schema_include_list]
        self.schema_exclude = [re.compile(x) for x in config.schema_exclude_list]
        self.table_include = [re.compile(x) for x in config.table_include_list]
        self.table_exclude = [re.compile(x) for x in config.table_exclude_list]
        self.signal = config.signal_data_collection  # published for its signals and watermarks, never captured

    def __call__(self, schema: str, table: str) -> bool:
        name = f"{schema}.{table}"
        if name == self.signal:
            return False
        if self.schema_include and not any(r.fullmatch(schema) for r in self.schema_include):
            return False
        if any(r.fullmatch(schema) for r in self.schema_exclude):
            return False
        if self.table_include and not any(r.fullmatch(name) for r in self.table_include):
            return False
        return not any(r.fullmatch(name) for r in self.table_exclude)


@dataclass
class Table:
    schema: str
    name: str
    topic: str
    rows: RowMapper
    key_names: list[str]  # primary key columns in key order (empty: no key)
    key_text: Callable[[dict], str] | None  # writes the table's keys (None: no key)
    key_of_tuple: Callable[[Sequence], str] | None  # writes them from a tuple's texts
    key_bytes_of_tuple: Callable[[Sequence], bytes] | None  # the same as the message key's bytes
    row_of_tuple: Callable[[Sequence], str]  # a tuple's row JSON (RowMapper.text_writer)
    event_of_tuple: Callable[[tuple, Sequence, int], bytes]  # a streamed change's value (RowMapper.event_writer)
    zero: dict  # non-key required columns' zero values (key-only `before`)
    columns: list[RowColumn]  # every column, in table order (what a tuple holds)
    envelopes: env.EnvelopeWriter  # writes the table's envelopes
    # what compiled.write_run takes for a run of the table's changes: the value's columns, the tuple's column count
    # and the key's (head, columns, tail) or None (no key); None without the compiled module
    run: tuple | None = None


class PgEventBuilder:
    def __init__(self, config: PostgresConfig, connect_catalog, captured: TableFilter | None = None,
                 transaction_state: dict | None = None, overlap: StreamOverlap | None = None):
        self.config = config
        self.overlap = overlap or StreamOverlap()  # what chunks of a resumed snapshot read later already hold
        self._connect_catalog = connect_catalog  # () -> an autocommit DB-API connection, opened when first needed
        self._catalog = None
        self.captured = captured or TableFilter(config)
        self.tables: dict[int, Table | None] = {}  # relation id → table (None: not captured)
        self.skipped = set(config.skipped_operations)
        # compiled.write_run, or None: build_changes then writes each change by itself (identical bytes)
        self.write_run = compiled.write_run if compiled is not None else None
        # compiled.write_rows, or None: snapshot_rows then writes each row by itself (identical bytes)
        self.write_rows = compiled.write_rows if compiled is not None else None
        self.transactions = (TransactionMessages(config.transaction_topic_name, config.key_schemas,
                                                 config.value_schemas, transaction_state)
                             if config.provide_transaction_metadata else None)

    @property
    def cursor(self):
        if self._catalog is None or self._catalog.closed:
            self._catalog = self._connect_catalog()
        return self._catalog.cursor()

    def close(self) -> None:
        if self._catalog is not None:
            self._catalog.close()

    def _read_catalog(self, read):
        """read(cursor), on a catalog connection the server may have ended since its last use (a server restart, a
        terminated backend): an error that says the server went away (errors.retriable) opens it again, and
        `connect_catalog` waits while the server is down, starting up or shutting down. The replication connection
        reconnects by itself, and the Relation messages that follow must not fail on the old session."""
        for attempt in range(1, _CATALOG_ATTEMPTS + 1):
            try:
                return read(self.cursor)
            except psycopg.Error as error:
                if not retriable(error) or attempt == _CATALOG_ATTEMPTS:
                    raise
                log.warning("reading the catalog failed (%s); reconnecting", str(error).strip() or type(error).__name__)
                if self._catalog is not None:
                    self._catalog.close()  # `cursor` opens a new connection

    # -- tables -------------------------------------------------------------------------------------------------

    def table(self, relation_id: int, schema: str, name: str, columns: list[tuple[str, int, int]] | None = None,
              ) -> Table | None:
        """Builds a table's schemas from the catalog (`columns`: the Relation message's name, type OID, typmod —
        they win over the catalog's, which may have moved on since the change was written). Without them (snapshots)
        the columns are those the publication sends, as a Relation message would list them."""
        if not self.captured(schema, name):
            self.tables[relation_id] = None
            return None

        def read(cursor) -> tuple[dict, list[RowColumn]]:
            catalog = {c.name: c for c in table_columns(cursor, relation_id)}
            if columns is not None:
                wanted = columns
            else:
                published = set(published_columns(cursor, self.config.publication_name, relation_id))
                wanted = [(c.name, c.type.oid, c.type.type_modifier) for c in catalog.values() if c.name in published]
            row_columns = []
            for column, oid, typmod in wanted:
                known = catalog.get(column)
                column_type = known.type if known is not None and known.type.oid == oid else describe_type(
                    cursor, oid, typmod)
                row_columns.append(RowColumn(column, column_type, not (known is not None and known.not_null),
                                             known.default if known is not None and column_type is known.type
                                             else None))
            return catalog, row_columns

        catalog, row_columns = self._read_catalog(read)
        topic = env.topic_name(self.config.topic_prefix, schema, name)
        if topic != f"{self.config.topic_prefix}.{schema}.{name}":
            log.warning("table %s.%s is written to topic %s: Kafka refuses some characters of its name in topic "
                        "names", schema, name, topic)
        rules = self.config.column_rules
        rows = RowMapper(f"{topic}.Value", row_columns, self.config.types, self.config.unavailable_value_placeholder,
                         rules, f"{schema}.{name}")
        fields = {f.name: f for f in rows.schema.fields}
        chosen = rules.key_of(f"{schema}.{name}", list(fields))
        if chosen is not None:
            key_names = list(chosen)
        else:
            keyed = sorted((c for c in catalog.values() if c.primary_key_position),
                           key=lambda c: c.primary_key_position)
            key_names = [c.name for c in keyed if c.name in fields]
        key_schema = (env.key_schema(self.config.topic_prefix, schema, name, [fields[n] for n in key_names],
                                     required=chosen is None) if key_names else None)
        zero = {f.name: rows.fallback(f.name) if rows.fallback(f.name) is not None else _ZERO.get(f.schema.type)
                for f in rows.schema.fields  # (a field with a default: JsonConverter writes that for a null)
                if not f.schema.optional and f.name not in key_names and f.schema.default is s.NO_DEFAULT}
        value_schema = env.envelope_schema(self.config.topic_prefix, schema, name, rows.schema)
        after = value_schema.field("after").schema
        key_text = key_of_tuple = key_bytes_of_tuple = None
        run = rows.compiled_columns(after)
        if key_schema is not None:
            key_text = json_converter.writer(key_schema, self.config.key_schemas)
            key_of_tuple = json_converter.writer(key_schema, self.config.key_schemas, rows.text_writer(key_schema))
            head, tail = ((f'{{"schema":{json_converter.schema_json(key_schema)},"payload":', "}")
                          if self.config.key_schemas else ("", ""))
            key_bytes_of_tuple = rows.bytes_writer(key_schema, head, tail)
            if run is not None:
                run = (*run, (head, rows.compiled_columns(key_schema)[0], tail))
        elif run is not None:
            run = (*run, None)
        table = Table(schema, name, topic, rows, key_names, key_text, key_of_tuple, key_bytes_of_tuple,
                      rows.text_writer(after), rows.event_writer(after), zero, row_columns,
                      env.EnvelopeWriter(value_schema, self.config.value_schemas), run)
        self.tables[relation_id] = table
        return table

    def relation(self, message: p.Relation) -> None:
        self.table(message.relation_id, message.namespace, message.name,
                   [(c.name, c.type_oid, c.type_modifier) for c in message.columns])

    # -- messages -----------------------------------------------------------------------------------------------

    def _key(self, table: Table, row: dict) -> bytes | None:
        if table.key_text is None:
            return None
        return table.key_text({n: row.get(n) for n in table.key_names}).encode()

    def _event(self, table: Table, op: str, before: dict | None, after: dict | None, source: env.SourceInfo,
               key_row: dict | None) -> OutMessage:
        value = table.envelopes.text(op, before, after, source, now_ns(), self._block(source))
        key = self._key(table, key_row) if key_row is not None else None
        return OutMessage(table.topic, key, value.encode())

    @staticmethod
    def tuple_texts(table: Table, values: Sequence) -> tuple[str | None, str]:
        """A whole tuple's key JSON (None: a table without a key) and row JSON, as its event carries them."""
        return table.key_of_tuple(values) if table.key_of_tuple is not None else None, table.row_of_tuple(values)

    def _event_of_tuple(self, table: Table, op: str, values: Sequence, source: env.SourceInfo) -> OutMessage:
        """`_event` of a row that is a whole tuple and has no `before` (insert, update without the old row,
        snapshot read), written from the tuple's texts: no row dict is made."""
        key, row = self.tuple_texts(table, values)
        value = table.envelopes.text_of_rows(op, "null", row, source, now_ns(), self._block(source))
        return OutMessage(table.topic, key.encode() if key is not None else None, value.encode())

    def _tombstone(self, table: Table, key_row: dict) -> list[OutMessage]:
        """A delete's tombstone; a table without a key gets one too, with a null key, as Debezium writes it."""
        if not self.config.tombstones_on_delete:
            return []
        return [OutMessage(table.topic, self._key(table, key_row), None)]

    def snapshot_row(self, table: Table, values: list, source: env.SourceInfo) -> OutMessage:
        return self._event_of_tuple(table, "r", values, source)

    def snapshot_rows(self, table: Table, rows: list, start: int, end: int, source: env.SourceInfo,
                      messages: list) -> None:
        """`snapshot_row` of each of rows[start:end], appended to `messages`; the events share their `ts_ms` (this
        call's time). The value is written from the read's parts (EnvelopeWriter.streamed_parts: a read's source
        block has no previous commit, and `source.lsn` in its sequence and its `lsn`), the key by
        `key_bytes_of_tuple`, as a streamed insert's; the compiled module writes them in one call (`write_rows`),
        and a row it leaves (or every row, without it) goes through the table's writers one by one."""
        if source.lsn is None or source.previous_commit is not None or source.snapshot == "false":
            for values in rows[start:end]:
                messages.append(self.snapshot_row(table, values, source))
            return
        parts = table.envelopes.streamed_parts("r", source, now_ns())
        lsn, topic, run = source.lsn, table.topic, table.run
        key_of, event_of = table.key_bytes_of_tuple, table.event_of_tuple
        write_rows = self.write_rows if run is not None else None
        append = messages.append
        index = start
        while index < end:
            if write_rows is not None:
                index = write_rows(rows, index, end, parts, run[0], run[1], run[2], lsn, topic, _make_message,
                                   messages)
                if index >= end:
                    return
            values = rows[index]
            append(_make_message(topic, key_of(values) if key_of is not None else None, event_of(parts, values, lsn),
                                 None))
            index += 1

    def _block(self, source: env.SourceInfo) -> dict | None:
        """The event's `transaction` block: `<txId>:<commit LSN>` (snapshot reads have none)."""
        if self.transactions is None or source.snapshot != "false":
            return None
        return self.transactions.block(f"{source.tx_id}:{source.lsn_commit}", f"{source.schema}.{source.table}",
                                       source.commit_ts_us // 1000)

    def build(self, change: Any) -> tuple[str | None, list[OutMessage]] | None:
        built = self._build(change)
        if self.transactions is None:
            return built
        if type(change.message) is p.Commit:
            return None, self.transactions.end(change.commit_ts_us // 1000)
        begun = self.transactions.take()  # the BEGIN goes before the transaction's first event
        return (built[0], [*begun, *built[1]]) if begun else built

    def build_changes(self, changes: list, messages: list) -> BuiltChanges:
        """`build` of each change (core.source.EventBuilder.build_changes). An insert, or an update that sends no
        old row, is written from its transaction's parts (EnvelopeWriter.streamed_parts), made once per table,
        transaction and operation; the compiled module writes a run of them (same table, transaction and operation)
        into messages in one call (`write_run`: the bytes of `key_bytes_of_tuple` and `event_of_tuple`, which write
        a change it leaves to them). The rest goes through `build`, and so does everything while transaction metadata
        is on or a resumed snapshot's filter applies. Events built in one call share their `ts_ms`."""
        built = BuiltChanges()
        streamed = self.transactions is None and not self.overlap.filtering
        inserts, updates = "c" not in self.skipped, "u" not in self.skipped
        tables = self.tables
        parts_of: dict[tuple[int, int, str], tuple[str, str, str, str]] = {}  # (relation, commit LSN, op) -> parts
        at = parts = None  # the last change's (relation, commit LSN, op) and its parts: most changes share them
        run_counts = {"c": 0, "u": 0}  # the streamed changes since `first`, counted into `built` before any other
        first = last = None
        append = messages.append
        now = now_ns()
        write_run = self.write_run
        index, end = 0, len(changes)
        while index < end:
            change = changes[index]
            index += 1
            message = change.message
            kind = type(message)
            if streamed and ((kind is p.Insert and inserts) or (kind is p.Update and message.old is None and updates)):
                table = tables.get(message.relation_id)
                if table is None:
                    built.filtered += 1
                    continue
                operation = "c" if kind is p.Insert else "u"
                if at is None or at[0] != message.relation_id or at[1] != change.commit_lsn or at[2] != operation:
                    at = (message.relation_id, change.commit_lsn, operation)
                    parts = parts_of.get(at)
                    if parts is None:
                        parts = parts_of[at] = table.envelopes.streamed_parts(operation, self._source(table, change),
                                                                              now)
                run = table.run
                if write_run is not None and run is not None:
                    # this change and those after it of the same table, transaction and operation, in one call
                    written_to = write_run(changes, index - 1, kind, message.relation_id, change.commit_lsn, parts,
                                           run[0], run[1], run[2], table.topic, _make_message, messages,
                                           kind is p.Update)
                    if written_to >= index:
                        run_counts[operation] += written_to - index + 1
                        if first is None:
                            first = change
                        last = changes[written_to - 1]
                        index = written_to
                        continue
                values = message.new
                key = table.key_bytes_of_tuple(values) if table.key_bytes_of_tuple is not None else None
                append(_make_message(table.topic, key, table.event_of_tuple(parts, values, change.lsn), None))
                run_counts[operation] += 1
                if first is None:
                    first = change
                last = change
            else:
                if first is not None:
                    _count_run(built, run_counts, first, last)
                    first = None
                if kind is p.Relation:
                    parts_of.clear()  # the table's schemas may have changed
                    at = None
                built.add(self.build(change), change, messages)
        if first is not None:
            _count_run(built, run_counts, first, last)
        return built

    def _build(self, change: Any) -> tuple[str | None, list[OutMessage]] | None:
        message = change.message
        kind = type(message)
        if kind is p.Relation:
            self.relation(message)
            return None, []
        if kind is p.Commit:
            return None, []
        if kind is p.Truncate:
            if "t" in self.skipped:
                return None
            if self.overlap.filtering:  # the event empties the table: what the chunks read later hold comes again
                self.overlap.truncate([f"{t.schema}.{t.name}" for t in map(self.tables.get, message.relation_ids)
                                       if t is not None], change.commit_lsn)
            out = []
            for relation_id in message.relation_ids:
                table = self.tables.get(relation_id)
                if table is not None:
                    source = self._source(table, change)
                    value = table.envelopes.text("t", None, None, source, now_ns(), self._block(source))
                    out.append(OutMessage(table.topic, None, value.encode()))
            return ("t", out) if out else None
        table = self.tables.get(message.relation_id)
        if table is None:
            return None
        passing = None
        if self.overlap.filtering:
            passing = self._passing(table, message, change.commit_lsn)
            if passing is None:
                return None  # the chunks a resumed snapshot read later hold it
        source = self._source(table, change)
        if kind is p.Insert:
            if "c" in self.skipped:
                return None
            return "c", [self._event_of_tuple(table, "c", message.new, source)]
        if kind is p.Delete:
            if "d" in self.skipped:
                return None
            return "d", self._deleted(table, message, source)
        # Update
        if "u" in self.skipped:
            return None
        new = message.new
        if message.old is None:
            return "u", [self._event_of_tuple(table, "u", new, source)]
        if message.old_kind == "O" and p.UNCHANGED_TOAST in new:
            new = tuple(o if v is p.UNCHANGED_TOAST and o is not p.UNCHANGED_TOAST else v
                        for v, o in zip(new, message.old, strict=True))
        if passing == "c":  # its old key's chunk was read later: only the new row is news
            return "u", [self._event_of_tuple(table, "c", new, source)]
        if passing == "d":  # its new key's chunk was read later: only the old row's end is news
            return "u", self._deleted(table, message, source)
        after = table.rows.value(new)
        before = self._old_row(table, message.old, message.old_kind) if message.old is not None else None
        if before is not None and table.key_names and any(before.get(k) != after.get(k) for k in table.key_names):
            return "u", [self._event(table, "d", before, None, source, before), *self._tombstone(table, before),
                         self._event(table, "c", None, after, source, after)]
        return "u", [self._event(table, "u", before, after, source, after)]

    def _deleted(self, table: Table, message, source: env.SourceInfo) -> list[OutMessage]:
        before = self._old_row(table, message.old, message.old_kind)
        return [self._event(table, "d", before, None, source, before), *self._tombstone(table, before)]

    def _passing(self, table: Table, message, commit_lsn: int) -> str | None:
        """What the stream still sends of a row change (StreamOverlap.passing_op)."""
        kind = type(message)
        op = "c" if kind is p.Insert else "d" if kind is p.Delete else "u"
        old = getattr(message, "old", None)
        new = getattr(message, "new", None)
        names = [c.name for c in table.columns]

        def key_positions(key: tuple[str, ...]) -> list[int] | None:
            return [names.index(k) for k in key] if all(k in names for k in key) else None

        return self.overlap.passing_op(f"{table.schema}.{table.name}", op, old if old is not None else new,
                                       new, commit_lsn, key_positions, self._read_catalog)

    def _old_row(self, table: Table, old, old_kind: str) -> dict:
        row = table.rows.value(old)
        if old_kind == "K":
            for name, zero in table.zero.items():
                if row.get(name) is None:
                    row[name] = zero
        return row

    def _source(self, table: Table, change) -> env.SourceInfo:
        return env.SourceInfo(VERSION, self.config.topic_prefix, self.config.dbname, table.schema, table.name,
                              change.commit_ts_us, "false", change.xid, change.lsn, change.commit_lsn,
                              previous_commit=change.previous_commit)

    # -- the rest of the EventBuilder protocol ------------------------------------------------------------------

    def describe(self, change: Any) -> ChangeSummary:
        message = change.message
        table = self.tables.get(getattr(message, "relation_id", None))
        return ChangeSummary(change.commit_ts_us // 1000 if change.commit_ts_us else None, "commit time",
                             {"lsn": change.lsn, "lsn_commit": change.commit_lsn, "txId": change.xid},
                             {"op": type(message).__name__.lower(),
                              "table": f"{table.schema}.{table.name}" if table else None})

    def idle(self) -> list[OutMessage]:
        return []

    def heartbeat(self) -> list[OutMessage]:
        if self.config.heartbeat_action_query:
            self._read_catalog(lambda cursor: cursor.execute(self.config.heartbeat_action_query))
        key: dict = {"serverName": self.config.topic_prefix}
        value: dict = {"ts_ms": now_ns() // 1_000_000}
        key_text = encode(_HEARTBEAT_KEY, key, self.config.key_schemas)
        value_text = encode(_HEARTBEAT_VALUE, value, self.config.value_schemas)
        return [OutMessage(self.config.heartbeat_topic_name, key_text.encode(), value_text.encode())]

    def transaction_state(self) -> dict | None:
        return self.transactions.state() if self.transactions is not None else None


_HEARTBEAT_KEY = s.struct([Field("serverName", s.string())], name="io.debezium.connector.common.ServerNameKey")
_HEARTBEAT_VALUE = s.struct([Field("ts_ms", s.int64())], name="io.debezium.connector.common.Heartbeat")


def _count_run(built: BuiltChanges, counts: dict[str, int], first: Any, last: Any) -> None:
    """Counts a run of streamed changes into `built` (first and last change, by operation) and zeroes `counts`."""
    built.captured_run({operation: count for operation, count in counts.items() if count}, first, last)
    for operation in counts:
        counts[operation] = 0

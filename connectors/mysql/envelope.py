"""Debezium's MySQL / MariaDB change events (connector 3.x through JsonConverter): schemas and values.

Topic `<prefix>.<database>.<table>`; key struct `….Key` of the primary key (or `message.key.columns`); value struct
`….Envelope` (version 2): `before`, `after` (`….Value`), `source` (`io.debezium.connector.mysql.Source` or
`io.debezium.connector.mariadb.Source`), `transaction`, `op`, `ts_ms`, `ts_us`, `ts_ns` (Debezium's order).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from pymysqlreplication.constants import FIELD_TYPE

from connectors import ConnectorError
from connectors.events import json_converter, logical
from connectors.events import schema as s
from connectors.events.json_converter import string_json
from connectors.events.schema import Field, Schema
from connectors.events.version import SOURCE_VERSION
from connectors.kafka.sink import OutMessage
from connectors.kafka.topics import sanitize_topic
from connectors.mysql.binlog import TableSchema
from connectors.mysql.compiled_rows import (
    WRITE_CALL,
    WRITE_DATE,
    WRITE_DECIMAL,
    WRITE_DOUBLE,
    WRITE_FLOAT,
    WRITE_INTEGER,
    WRITE_LONG,
    WRITE_MICROS,
    WRITE_MICROTIME,
    WRITE_MILLIS,
    WRITE_MILLITIME,
    WRITE_NULL,
    WRITE_STRING,
    WRITE_YEAR,
    WRITE_ZONED,
    make_message,
    write_event,
    write_key,
    write_row,
    write_run,
)
from connectors.mysql.config import MySqlConfig
from connectors.mysql.types import (
    ColumnMapping,
    UnmappedType,
    declared_length,
    is_character,
    java_long,
    mapping,
    text_value,
)

VERSION = SOURCE_VERSION
SNAPSHOT_VALUES = ("true", "first", "first_in_data_collection", "last_in_data_collection", "last", "false",
                   "incremental")
ENVELOPE_VERSION = 2
NEW_KEY_HEADER = "__debezium.newkey"  # on the delete of an update that changed the key
OLD_KEY_HEADER = "__debezium.oldkey"  # on the create of that update


def topic_name(prefix: str, database: str, table: str) -> str:
    """`<prefix>.<database>.<table>`, each character Kafka refuses in a topic name replaced by `_` (as Debezium)."""
    return sanitize_topic(f"{prefix}.{database}.{table}")


@lru_cache(maxsize=4)
def source_schema(mariadb: bool) -> Schema:
    return s.struct(
        [
            ("version", s.string()), ("connector", s.string()), ("name", s.string()), ("ts_ms", s.int64()),
            ("snapshot", logical.enum(list(SNAPSHOT_VALUES), optional=True).with_default("false")),
            ("db", s.string()), ("sequence", s.string(optional=True)), ("ts_us", s.int64(optional=True)),
            ("ts_ns", s.int64(optional=True)), ("table", s.string(optional=True)), ("server_id", s.int64()),
            ("gtid", s.string(optional=True)), ("file", s.string()), ("pos", s.int64()), ("row", s.int32()),
            ("thread", s.int64(optional=True)), ("query", s.string(optional=True)),
        ],
        name="io.debezium.connector.mariadb.Source" if mariadb else "io.debezium.connector.mysql.Source",
        version=1,
    )


def transaction_block_schema() -> Schema:
    return s.struct([("id", s.string()), ("total_order", s.int64()), ("data_collection_order", s.int64())],
                    name="event.block", version=1, optional=True)


@dataclass(slots=True, unsafe_hash=True)  # one per event: see binlog.BinlogPosition
class SourceInfo:
    """The source block of one event."""

    database: str
    table: str
    ts_ms: int  # the event's time at the server (snapshot: when the snapshot read the row)
    server_id: int
    file: str
    pos: int
    row: int = 0
    snapshot: str = "false"
    gtid: str | None = None
    thread: int | None = None
    query: str | None = None


class TableEvents:
    """Key/value schemas and converters of one table as the binlog's table map (or the catalog) describes it."""

    def __init__(self, config: MySqlConfig, table: TableSchema):
        self.config = config
        self.database, self.table = table.database, table.table
        self.topic = topic_name(config.topic_prefix, table.database, table.table)
        options = config.type_options
        try:
            self.columns: list[ColumnMapping] = [
                mapping(c, options)
                for c in table.columns if config.captures_column(table.database, table.table, c.name)
            ]
        except UnmappedType as error:
            qualified = f"{table.database}.{table.table}.{error.column}"
            raise ConnectorError(
                f"column {qualified} has a type this connector does not map ({_declared_type(table, error.column)}); "
                f"leave it out with column.exclude.list={qualified}") from None
        rules = config.column_rules
        fields = []
        self.converters = []
        for m in self.columns:
            field_schema = m.schema.as_schema()
            convert = m.value
            if m.schema.type == "string":
                qualified = f"{table.database}.{table.table}.{m.column.name}"
                character = m.schema.name is None and is_character(m.column)  # not enums, sets, JSON
                rule = rules.string_rule(qualified, convert, hashable=character,
                                         length=declared_length(m.column) if character else None)
                if rule is not None:
                    if rule.kind == "mask":  # a mask's value is no longer the logical type's
                        field_schema = s.string(optional=m.schema.optional)
                    field_schema = field_schema.with_parameters(rule.parameters)
                    convert = rule.convert
            fields.append(Field(m.column.name, field_schema))
            self.converters.append((m.column.name, convert))
        named = rules.key_of(f"{table.database}.{table.table}", [f.name for f in fields])
        key_names = named or table.primary_key
        by_name = {f.name: f for f in fields}
        missing = [k for k in key_names if k not in by_name]
        if missing:
            raise ConnectorError(f"the primary key of {table.database}.{table.table} has {', '.join(missing)}, which "
                                 "column.include/exclude.list leave out: capture it or set message.key.columns")
        self.key_names = tuple(key_names)
        # a primary key's fields are required; message.key.columns keep their columns' optionality, as Debezium's do
        self.key_schema = (s.struct([Field(k, by_name[k].schema if named else by_name[k].schema.as_required())
                                     for k in key_names], name=f"{self.topic}.Key") if key_names else None)
        row = s.struct(fields, name=f"{self.topic}.Value", optional=True)
        self.row_schema = row
        self.value_schema = s.struct(
            [("before", row), ("after", row), ("source", source_schema(config.mariadb)),
             ("transaction", transaction_block_schema()), ("op", s.string()), ("ts_ms", s.int64(optional=True)),
             ("ts_us", s.int64(optional=True)), ("ts_ns", s.int64(optional=True))],
            name=f"{self.topic}.Envelope", version=ENVELOPE_VERSION,
        )
        self._encoders = [(f.name, string_json(f.name) + ":", _encoder(f.schema)) for f in fields]
        self._key_encoders = [(f.name, string_json(f.name) + ":", _encoder(f.schema))
                              for f in (self.key_schema.fields if self.key_schema else ())]
        converters = dict(self.converters)
        mapped = {m.column.name: m for m in self.columns}
        # (name, "name": with its comma, kind, writer of a binlog value): `messages` writes a row from the binlog's
        # values, by the compiled module where it is built (compiled_rows.write_row)
        self._writers = tuple((name, ("," if index else "") + prefix, *_writer(mapped[name], converters[name], encode))
                              for index, (name, prefix, encode) in enumerate(self._encoders))
        self._key_writers = tuple((name, ("," if index else "") + prefix,
                                   *_writer(mapped[name], converters[name], encode))
                                  for index, (name, prefix, encode) in enumerate(self._key_encoders))
        connector = "mariadb" if config.mariadb else "mysql"
        self._source_prefix = (f'{{"version":{string_json(VERSION)},"connector":"{connector}",'
                               f'"name":{string_json(config.topic_prefix)},')
        self._texts = _LastTexts()  # the source block's strings that repeat from event to event
        self._key_schema_json = json_converter.schema_json(self.key_schema) if self.key_schema else None
        # what _key_bytes writes around a key's payload
        self._key_around = ((f'{{"schema":{self._key_schema_json},"payload":', "}")
                            if config.key_schemas and self.key_schema else ("", ""))
        self._last_query, self._last_query_json = None, "null"
        self._value_schema_json = json_converter.schema_json(self.value_schema)
        self._run_tables: dict[tuple, tuple] = {}  # compiled layout -> what write_run takes (append_run)
        # streamed_parts': what a value starts and ends with, and the source block's parts kept from the last event
        schema_head, self._value_tail = ((f'{{"schema":{self._value_schema_json},"payload":', "}")
                                         if config.value_schemas else ("", ""))
        self._value_head = f'{schema_head}{{"before":'
        self._source_head_key: tuple | None = None
        self._source_head = ""
        self._source_tail_key: tuple | None = None
        self._source_tail = ""

    def row(self, values: dict | None) -> dict | None:
        if values is None:
            return None
        return {name: convert(values.get(name)) for name, convert in self.converters}

    def key(self, row: dict) -> bytes | None:
        """The key of a row converted by `row`."""
        if self.key_schema is None:
            return None
        return self._key_bytes(
            "{" + ",".join(prefix + encode(row[name]) for name, prefix, encode in self._key_encoders) + "}")

    def _key_bytes(self, payload: str) -> bytes:
        if not self.config.key_schemas:
            return payload.encode()
        return f'{{"schema":{self._key_schema_json},"payload":{payload}}}'.encode()

    def messages(self, op: str, before: dict | None, after: dict | None, source: SourceInfo,
                 transaction: dict | None = None, now_ns: int | None = None) -> list[OutMessage]:
        """The event (and a delete's tombstone) of one row change, `before`/`after` as the binlog gives them: written
        as `encode_value` writes `row(before)`, `row(after)`, without those rows (`now_ns`: the event's time, by
        default now)."""
        now_ns = time.time_ns() if now_ns is None else now_ns
        if op == "u" and self.moves_key(before, after):
            return self._key_change(before, after, source, transaction, now_ns)
        return self._event(op, before, after, source, transaction, now_ns)

    def truncate_messages(self, source: SourceInfo, transaction: dict | None = None,
                          now_ns: int | None = None) -> list[OutMessage]:
        """Debezium's truncate event: op "t", no key, before and after null."""
        payload = self._envelope_json("t", "null", "null", source, time.time_ns() if now_ns is None else now_ns,
                                      transaction)
        if self.config.value_schemas:
            payload = f'{{"schema":{self._value_schema_json},"payload":{payload}}}'
        return [OutMessage(self.topic, None, payload.encode())]

    def moves_key(self, before: dict, after: dict) -> bool:
        """An update changes the row's message key (its primary key, or message.key.columns)."""
        return any(before.get(name) != after.get(name) for name in self.key_names)

    def _event(self, op: str, before: dict | None, after: dict | None, source: SourceInfo,
               transaction: dict | None, now_ns: int, headers: list | None = None) -> list[OutMessage]:
        payload = self._envelope_json(op, self._row_json(before), self._row_json(after), source, now_ns, transaction)
        if self.config.value_schemas:
            payload = f'{{"schema":{self._value_schema_json},"payload":{payload}}}'
        key = self._key_json(after if after is not None else before)
        out = [OutMessage(self.topic, key, payload.encode(), headers)]
        if op == "d" and self.config.tombstones_on_delete:
            out.append(OutMessage(self.topic, key, None, headers))
        return out

    def _key_change(self, before: dict, after: dict, source: SourceInfo, transaction: dict | None,
                    now_ns: int) -> list[OutMessage]:
        """Debezium's events of an update that changes the key: a delete (and its tombstone) under the old key,
        headed `__debezium.newkey`, then a create under the new key, headed `__debezium.oldkey`; each header holds
        the other key as Kafka Connect's default header converter writes a struct."""
        old_key, new_key = _written(before, self._key_writers), _written(after, self._key_writers)
        return [*self._event("d", before, None, source, transaction, now_ns, [(NEW_KEY_HEADER, new_key.encode())]),
                *self._event("c", None, after, source, transaction, now_ns, [(OLD_KEY_HEADER, old_key.encode())])]

    def streamed_parts(self, op: str, source: SourceInfo, now_ns: int) -> tuple[str, str, str, str]:
        """The value `messages(op, before, after, source, now_ns=now_ns)` writes for any row of the rows event
        `source` names is `first + row_json(before) + second + row_json(after) + third + row + fourth` (`row`: the
        row's index in its event): what the event's rows share is written once. The builder's test compares the
        two byte for byte.

        The rows events of one transaction share all of it but their `pos`: the rest of the source block up to
        it and the part after the row are kept from the previous event while they are the same (a rows event's
        parts cost about a microsecond less)."""
        ms = source.ts_ms
        text = self._texts.json
        head_key = (ms, source.snapshot, source.database, source.table, source.server_id, source.gtid, source.file)
        if head_key != self._source_head_key:
            self._source_head_key = head_key
            self._source_head = (
                f',"source":{self._source_prefix}"ts_ms":{ms},"snapshot":{text(source.snapshot)},'
                f'"db":{text(source.database)},"sequence":null,"ts_us":{ms * 1000},"ts_ns":{ms * 1_000_000},'
                f'"table":{text(source.table)},"server_id":{source.server_id},"gtid":{text(source.gtid)},'
                f'"file":{text(source.file)},"pos":')
        tail_key = (source.thread, source.query, op, now_ns)
        if tail_key != self._source_tail_key:
            self._source_tail_key = tail_key
            self._source_tail = (
                f',"thread":{"null" if source.thread is None else source.thread},'
                f'"query":{self._query_json(source.query)}}}'
                f',"transaction":null,"op":{text(op)},"ts_ms":{now_ns // 1_000_000},"ts_us":{now_ns // 1000},'
                f'"ts_ns":{now_ns}}}{self._value_tail}')
        return self._value_head, ',"after":', f'{self._source_head}{source.pos},"row":', self._source_tail

    def append_streamed(self, messages: list, parts: tuple[str, str, str, str], op: str, before: dict | None,
                        after: dict | None, row: int) -> None:
        """Appends what `messages` gives for a row of the rows event `parts` (streamed_parts) were made for; the
        compiled module writes the value in one call where it is built (the same bytes)."""
        value = write_event(parts, before, after, row, self._writers) if write_event is not None else None
        if value is None:
            value = self.streamed_value(parts, before, after, row)
        key = self._key_json(after if after is not None else before)
        messages.append(OutMessage(self.topic, key, value))
        if op == "d" and self.config.tombstones_on_delete:
            messages.append(OutMessage(self.topic, key, None))

    def append_run(self, messages: list, parts: tuple[str, str, str, str], run, first: int,
                   end: int) -> tuple[int, int]:
        """Appends what `append_streamed` gives for rows `first`..`end - 1` of `run` (a binlog.RowsRun; `parts` made
        for it), written by the compiled module in one call from the event's bytes; returns the row it stopped before
        (`end`, or an update's row whose key moves, which `messages` writes) and the key and value bytes appended."""
        table = self._run_tables.get(run.layout)
        if table is None:
            table = self._run_tables[run.layout] = self._run_table(run.layout)
        return write_run(run.body, run.layout, run.present, run.present_after, first, end, _RUN_OPS[run.op], parts,
                         table, messages)

    def _run_table(self, layout: tuple) -> tuple:
        """What write_run takes of this table for rows of the compiled layout `layout` (compiled_rows.layout)."""
        at = {column[0]: index for index, column in enumerate(layout)}
        keyed = self.key_schema is not None
        return (self._writers, tuple(at.get(name, -1) for name, *_ in self._writers),
                self._key_writers if keyed else None,
                tuple(at.get(name, -1) for name, *_ in self._key_writers) if keyed else (), *self._key_around,
                tuple(at.get(name, -1) for name in self.key_names), self.topic, make_message,
                self.config.tombstones_on_delete)

    def streamed_value(self, parts: tuple[str, str, str, str], before: dict | None, after: dict | None,
                       row: int) -> bytes:
        """`append_streamed`'s value written by Python."""
        return f"{parts[0]}{self._row_json(before)}{parts[1]}{self._row_json(after)}{parts[2]}{row}{parts[3]}".encode()

    def value(self, op: str, before_row: dict | None, after_row: dict | None, source: SourceInfo, now_ns: int,
              transaction: dict | None = None) -> dict:
        """The envelope as a Connect value (rows already converted by `row`)."""
        source_value = {
            "version": VERSION, "connector": "mariadb" if self.config.mariadb else "mysql",
            "name": self.config.topic_prefix, "ts_ms": source.ts_ms, "snapshot": source.snapshot,
            "db": source.database, "sequence": None, "ts_us": source.ts_ms * 1000, "ts_ns": source.ts_ms * 1_000_000,
            "table": source.table, "server_id": source.server_id, "gtid": source.gtid, "file": source.file,
            "pos": source.pos, "row": source.row, "thread": source.thread, "query": source.query,
        }
        return {"before": before_row, "after": after_row, "source": source_value, "transaction": transaction,
                "op": op, "ts_ms": now_ns // 1_000_000, "ts_us": now_ns // 1000, "ts_ns": now_ns}

    # JsonConverter's output, written with per-column encoders chosen once per table (the generic value_json walks
    # the schema for every value); tests compare the two byte for byte.
    def _encode_row(self, row: dict | None) -> str:
        if row is None:
            return "null"
        return "{" + ",".join(prefix + encode(row[name]) for name, prefix, encode in self._encoders) + "}"

    def _row_json(self, values: dict | None) -> str:
        if values is None:
            return "null"
        return _written(values, self._writers)

    def _key_json(self, values: dict) -> bytes | None:
        if self.key_schema is None:
            return None
        if write_key is not None and type(values) is dict:
            key = write_key(values, self._key_writers, *self._key_around)
            if key is not None:
                return key
        return self._key_bytes(_written(values, self._key_writers))

    def _query_json(self, query: str | None) -> str:
        """The statement of a transaction's rows is one (possibly large) string for all of them: encoded once."""
        if query is not self._last_query:
            self._last_query, self._last_query_json = query, _text_or_null(query)
        return self._last_query_json

    def encode_value(self, op: str, before_row, after_row, source: SourceInfo, now_ns: int,
                     transaction: dict | None = None) -> str:
        return self._envelope_json(op, self._encode_row(before_row), self._encode_row(after_row), source, now_ns,
                                   transaction)

    def _envelope_json(self, op: str, before: str, after: str, source: SourceInfo, now_ns: int,
                       transaction: dict | None) -> str:
        ms = source.ts_ms
        text = self._texts.json
        source_json = (
            f'{self._source_prefix}"ts_ms":{ms},"snapshot":{text(source.snapshot)},'
            f'"db":{text(source.database)},"sequence":null,"ts_us":{ms * 1000},"ts_ns":{ms * 1_000_000},'
            f'"table":{text(source.table)},"server_id":{source.server_id},"gtid":{text(source.gtid)},'
            f'"file":{text(source.file)},"pos":{source.pos},"row":{source.row},'
            f'"thread":{"null" if source.thread is None else source.thread},"query":{self._query_json(source.query)}}}'
        )
        return (f'{{"before":{before},"after":{after},'
                f'"source":{source_json},"transaction":{_block_json(transaction)},"op":{text(op)},'
                f'"ts_ms":{now_ns // 1_000_000},"ts_us":{now_ns // 1000},"ts_ns":{now_ns}}}')


_INTS = ("int8", "int16", "int32", "int64")
_RUN_OPS = {"c": 0, "u": 1, "d": 2}  # write_run's operations


def _declared_type(table: TableSchema, name: str) -> str:
    column = next(c for c in table.columns if c.name == name)
    return column.type_name or column.data_type or f"binlog type {column.type_code}"


def _block_json(block: dict | None) -> str:
    if block is None:
        return "null"
    return (f'{{"id":{string_json(block["id"])},"total_order":{int(block["total_order"])},'
            f'"data_collection_order":{int(block["data_collection_order"])}}}')


def _text_or_null(value: str | None) -> str:
    return "null" if value is None else string_json(value)


class _LastTexts:
    """JSON of strings (or null) that mostly repeat: the source block's database, table, file, GTID, snapshot
    marker and the op, encoded once each (a few hundred at most are kept)."""

    def __init__(self) -> None:
        self._seen: dict[str | None, str] = {None: "null"}

    def json(self, value: str | None) -> str:
        text = self._seen.get(value)
        if text is None:
            text = string_json(value)
            if len(self._seen) >= 256:  # GTIDs change with each transaction
                self._seen = {None: "null"}
            self._seen[value] = text
        return text


def _written(values: dict, writers: tuple) -> str:
    """A row's JSON from the binlog's values (`writers`: TableEvents' (name, prefix, kind, write) of each column)."""
    if write_row is not None and type(values) is dict:
        text = write_row(values, writers)
        if text is not None:
            return text
    get = values.get
    return "{" + "".join([prefix + write(get(name)) for name, prefix, _, write in writers]) + "}"


def _writer(column: ColumnMapping, convert, encode) -> tuple[int, Callable]:
    """(kind, `encode(convert(value))` of a binlog value) with WRITE_NULL when it writes None as `null`."""
    kind, write = _kind_writer(column, convert, encode)
    try:
        null = write(None) == "null"
    except Exception:  # noqa: BLE001 - a required column's None: the writer says what is wrong, each time
        null = False
    return (kind | WRITE_NULL if null else kind), write


def _kind_writer(column: ColumnMapping, convert, encode) -> tuple[int, Callable]:
    """(kind, `encode(convert(value))` of a binlog value), in one call for the most common columns: integers and text
    (whose conversion keeps an int or a str as it is) written at once, anything else the long way. The kind tells
    the compiled row writer which values it writes itself (an int, a str, …), the same way."""
    schema = column.schema
    plain = convert == column.value and schema.name is None  # no column rule, no logical type
    if plain and column.convert_function is int and schema.type in _INTS:
        def integer(value):
            return str(value) if type(value) is int else encode(convert(value))
        return WRITE_INTEGER, integer
    if convert == column.value and schema.name is None and column.convert_function is java_long \
            and schema.type == "int64":
        def long(value):
            return str(java_long(value)) if type(value) is int else encode(convert(value))
        return WRITE_LONG, long
    if plain and column.convert_function is text_value and schema.type == "string":
        def text(value):
            return string_json(value) if type(value) is str else encode(convert(value))
        return WRITE_STRING, text
    kind = _compiled_kind(column) if convert == column.value else None
    return WRITE_CALL if kind is None else kind, lambda value: encode(convert(value))


_TEMPORAL_CODES = {FIELD_TYPE.NEWDATE: FIELD_TYPE.DATE, FIELD_TYPE.DATETIME: FIELD_TYPE.DATETIME2,
                   FIELD_TYPE.TIMESTAMP: FIELD_TYPE.TIMESTAMP2, FIELD_TYPE.TIME: FIELD_TYPE.TIME2}
# (type, logical name) -> (kind, Connect type) of the temporal columns the compiled writer writes
_TEMPORAL_KINDS = {
    (FIELD_TYPE.DATE, "io.debezium.time.Date"): (WRITE_DATE, "int32"),
    (FIELD_TYPE.DATE, "org.apache.kafka.connect.data.Date"): (WRITE_DATE, "int32"),
    (FIELD_TYPE.DATETIME2, "io.debezium.time.MicroTimestamp"): (WRITE_MICROS, "int64"),
    (FIELD_TYPE.DATETIME2, "io.debezium.time.Timestamp"): (WRITE_MILLIS, "int64"),
    (FIELD_TYPE.DATETIME2, "org.apache.kafka.connect.data.Timestamp"): (WRITE_MILLIS, "int64"),
    (FIELD_TYPE.TIME2, "io.debezium.time.MicroTime"): (WRITE_MICROTIME, "int64"),
    (FIELD_TYPE.TIME2, "org.apache.kafka.connect.data.Time"): (WRITE_MILLITIME, "int32"),
    (FIELD_TYPE.YEAR, "io.debezium.time.Year"): (WRITE_YEAR, "int32"),
}


def _compiled_kind(column: ColumnMapping) -> int | None:
    """The kind the compiled writer writes a column without a rule by, beside ints and strs: ENUM, DOUBLE, FLOAT,
    DECIMAL (precise), DATE, DATETIME, TIMESTAMP, TIME and YEAR (each kind's values as types.py converts them and
    JsonConverter writes them, other values by the column's writer); None: the column's writer writes them all."""
    schema, code = column.schema, column.column.type_code
    if code == FIELD_TYPE.ENUM and column.convert_function is str and schema.type == "string":
        return WRITE_STRING  # a str is its own value, its text written as a plain string's
    if code == FIELD_TYPE.DOUBLE and column.convert_function is float and schema.type == "float64" \
            and schema.name is None:
        return WRITE_DOUBLE
    if code == FIELD_TYPE.FLOAT and schema.type == "float32" and schema.name is None:
        return WRITE_FLOAT
    if code == FIELD_TYPE.NEWDECIMAL and schema.type == "bytes" and schema.name == logical.DECIMAL:
        return WRITE_DECIMAL | int(schema.parameters["scale"]) << 8
    code = _TEMPORAL_CODES.get(code, code)
    if code == FIELD_TYPE.TIMESTAMP2 and schema.name == "io.debezium.time.ZonedTimestamp" and schema.type == "string":
        return WRITE_ZONED | (column.column.fsp or 0) << 8
    kind = _TEMPORAL_KINDS.get((code, schema.name))
    return kind[0] if kind is not None and schema.type == kind[1] else None


def _encoder(schema: Schema):
    """The fastest correct JSON writer of one field's values (JsonConverter's output)."""
    if schema.default is not s.NO_DEFAULT or schema.name is not None and schema.type not in (*_INTS, "string"):
        return lambda value: json_converter.value_json(schema, value)
    if schema.type in _INTS:
        def integer(value):
            if value is None:
                return "null" if schema.optional else json_converter.value_json(schema, value)
            if type(value) is not int:
                return json_converter.value_json(schema, value)  # its error
            return str(value)
        return integer
    if schema.type == "string":
        def text(value):
            if type(value) is str:
                return string_json(value)
            return json_converter.value_json(schema, value)
        return text
    return lambda value: json_converter.value_json(schema, value)

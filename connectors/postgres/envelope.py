"""The schemas and values of Debezium's PostgreSQL change events (connector 3.x through JsonConverter).

Topic `<prefix>.<schema>.<table>`; key struct `<prefix>.<schema>.<table>.Key` of the primary key (or
message.key.columns) columns; value struct `<prefix>.<schema>.<table>.Envelope` (version 2): `before`, `after` (the
row struct `….Value`), `source` (`io.debezium.connector.postgresql.Source`), `transaction` (`event.block`), `op`,
`ts_ms`, `ts_us`, `ts_ns`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from connectors.events import json_converter, logical
from connectors.events import schema as s
from connectors.events.schema import Field, Schema
from connectors.kafka.topics import sanitize_topic

CONNECTOR = "postgresql"
SOURCE_SCHEMA_NAME = "io.debezium.connector.postgresql.Source"
ENVELOPE_VERSION = 2
SNAPSHOT_VALUES = ("true", "first", "first_in_data_collection", "last_in_data_collection", "last", "false",
                   "incremental")


def topic_name(prefix: str, schema: str, table: str) -> str:
    """`<prefix>.<schema>.<table>` with each character Kafka refuses in a topic name replaced by `_`, as Debezium's
    topic naming does (the schemas' names follow the topic's; `source` keeps the table's own name)."""
    return sanitize_topic(f"{prefix}.{schema}.{table}")


def snapshot_schema() -> Schema:
    return logical.enum(list(SNAPSHOT_VALUES), optional=True).with_default("false")


def source_schema() -> Schema:
    return s.struct(
        [
            ("version", s.string()), ("connector", s.string()), ("name", s.string()), ("ts_ms", s.int64()),
            ("snapshot", snapshot_schema()), ("db", s.string()), ("sequence", s.string(optional=True)),
            ("ts_us", s.int64(optional=True)), ("ts_ns", s.int64(optional=True)),
            ("schema", s.string()), ("table", s.string()), ("txId", s.int64(optional=True)),
            ("lsn", s.int64(optional=True)), ("xmin", s.int64(optional=True)),
            ("origin", s.string(optional=True)), ("origin_lsn", s.int64(optional=True)),
        ],
        name=SOURCE_SCHEMA_NAME,
        version=1,
    )


def transaction_block_schema() -> Schema:
    return s.struct(
        [("id", s.string()), ("total_order", s.int64()), ("data_collection_order", s.int64())],
        name="event.block",
        version=1,
        optional=True,
    )


def key_schema(prefix: str, schema: str, table: str, key_fields: Sequence[Field], required: bool = True) -> Schema:
    """A primary key's fields are required; `required=False` keeps the fields' own optionality (the columns of
    message.key.columns, which may be nullable, as Debezium's key schema says)."""
    return s.struct([Field(f.name, f.schema.as_required() if required else f.schema) for f in key_fields],
                    name=f"{topic_name(prefix, schema, table)}.Key")


def envelope_schema(prefix: str, schema: str, table: str, row_schema: Schema) -> Schema:
    """`row_schema` is the table's row struct (e.g. RowMapper.schema); it is named `….Value` and made optional."""
    row = s.struct(row_schema.fields, name=f"{topic_name(prefix, schema, table)}.Value", optional=True)
    return s.struct(
        [
            ("before", row), ("after", row), ("source", source_schema()), ("transaction", transaction_block_schema()),
            ("op", s.string()), ("ts_ms", s.int64(optional=True)), ("ts_us", s.int64(optional=True)),
            ("ts_ns", s.int64(optional=True)),
        ],
        name=f"{topic_name(prefix, schema, table)}.Envelope",
        version=ENVELOPE_VERSION,
    )


def sequence_text(lsn_commit: int | None, lsn: int | None) -> str:
    """source.sequence: a JSON array of the end LSN of the last transaction committed before this event's (null
    before the first one the connection streams: Debezium's "last commit LSN") and this event's LSN, as decimal
    strings (or null)."""
    items = ["null" if v is None else f'"{v}"' for v in (lsn_commit, lsn)]
    return f"[{items[0]},{items[1]}]"


@dataclass(slots=True, unsafe_hash=True)  # one per event: see pgoutput.Begin
class SourceInfo:
    """What the source block says about one event."""

    version: str
    name: str  # topic.prefix
    db: str
    schema: str
    table: str
    commit_ts_us: int  # the transaction's commit time (the snapshot's time for snapshot reads)
    snapshot: str = "false"
    tx_id: int | None = None
    lsn: int | None = None
    lsn_commit: int | None = None  # the transaction's commit LSN (the transaction block's id)
    xmin: int | None = None
    previous_commit: int | None = None  # sequence's first item (sequence_text)

    def value(self) -> dict:
        return {
            "version": self.version, "connector": CONNECTOR, "name": self.name,
            "ts_ms": self.commit_ts_us // 1000, "snapshot": self.snapshot, "db": self.db,
            "sequence": sequence_text(self.previous_commit, self.lsn),
            "ts_us": self.commit_ts_us, "ts_ns": self.commit_ts_us * 1000,
            "schema": self.schema, "table": self.table, "txId": self.tx_id, "lsn": self.lsn, "xmin": self.xmin,
            "origin": None, "origin_lsn": None,
        }


def envelope_value(
    op: str,
    before: dict | None,
    after: dict | None,
    source: SourceInfo,
    now_ns: int,
    transaction: dict | None = None,
) -> dict:
    """op: c (insert), u (update), d (delete), r (snapshot read), t (truncate: no before/after)."""
    return {
        "before": before, "after": after, "source": source.value(), "transaction": transaction, "op": op,
        "ts_ms": now_ns // 1_000_000, "ts_us": now_ns // 1000, "ts_ns": now_ns,
    }


def _sequence_json(lsn_commit: int | None, lsn: int | None) -> str:
    """`sequence_text` as a JSON string, written directly: escaping `sequence_text`'s result costs 0.86 µs an
    event (the writer's byte-for-byte test keeps the two the same)."""
    commit = "null" if lsn_commit is None else f'\\"{lsn_commit}\\"'
    this = "null" if lsn is None else f'\\"{lsn}\\"'
    return f'"[{commit},{this}]"'


def _int_or_null(value: int | None) -> str:
    return "null" if value is None else str(value)


class EnvelopeWriter:
    """JsonConverter's text of one table's envelopes (`json_converter.envelope(value_schema, envelope_value(...))`),
    written from a template: the source block's fields that are the same for every event of the table are encoded
    once, the rows by the row schema's compiled encoder. The generic walk spent most of its time on those fixed
    fields; tests compare the two byte for byte."""

    def __init__(self, value_schema: Schema, schemas_enable: bool):
        self._row = json_converter.compiled(value_schema.field("after").schema)
        self._snapshot = json_converter.compiled(snapshot_schema())
        self._block = json_converter.compiled(transaction_block_schema())
        self._head = f'{{"schema":{json_converter.schema_json(value_schema)},"payload":' if schemas_enable else ""
        self._tail = "}" if schemas_enable else ""
        self._fixed: dict[tuple, tuple[str, str, str]] = {}  # (version, name, db, schema, table) -> the fixed parts

    def _fixed_parts(self, source: SourceInfo) -> tuple[str, str, str]:
        key = (source.version, source.name, source.db, source.schema, source.table)
        parts = self._fixed.get(key)
        if parts is None:
            text = json_converter.string_json
            parts = self._fixed[key] = (
                f'{{"version":{text(source.version)},"connector":{text(CONNECTOR)},"name":{text(source.name)},"ts_ms":',
                f',"db":{text(source.db)},"sequence":',
                f',"schema":{text(source.schema)},"table":{text(source.table)},"txId":',
            )
        return parts

    def streamed_parts(self, op: str, source: SourceInfo, now_ns: int) -> tuple[str, str, str, str]:
        """`text_of_rows(op, "null", after, source, now_ns)` of the events of one transaction's changes to the
        table is `first + after + second + lsn + third + lsn + fourth` (`source.lsn` set to the change's own): a
        streamed change costs one string, not a source block. The builder's test compares the two byte for byte."""
        head, db, where = self._fixed_parts(source)
        ts_us = source.commit_ts_us
        commit = "null" if source.previous_commit is None else f'\\"{source.previous_commit}\\"'
        return (f'{self._head}{{"before":null,"after":',
                f',"source":{head}{ts_us // 1000},"snapshot":{self._snapshot(source.snapshot)}{db}"[{commit},\\"',
                f'\\"]","ts_us":{ts_us},"ts_ns":{ts_us * 1000}{where}{_int_or_null(source.tx_id)},"lsn":',
                f',"xmin":{_int_or_null(source.xmin)},"origin":null,"origin_lsn":null}},"transaction":null,'
                f'"op":{json_converter.string_json(op)},'
                f'"ts_ms":{now_ns // 1_000_000},"ts_us":{now_ns // 1000},"ts_ns":{now_ns}}}{self._tail}')

    def text(self, op: str, before: dict | None, after: dict | None, source: SourceInfo, now_ns: int,
             transaction: dict | None = None) -> str:
        return self.text_of_rows(op, self._row(before), self._row(after), source, now_ns, transaction)

    def text_of_rows(self, op: str, before: str, after: str, source: SourceInfo, now_ns: int,
                     transaction: dict | None = None) -> str:
        """`text` with the rows already written as JSON (e.g. by `RowMapper.text_writer`; "null" for none)."""
        head, db, where = self._fixed_parts(source)
        ts_us = source.commit_ts_us
        sequence = _sequence_json(source.previous_commit, source.lsn)
        source_text = (f'{head}{ts_us // 1000},"snapshot":{self._snapshot(source.snapshot)}{db}{sequence}'
                       f',"ts_us":{ts_us},"ts_ns":{ts_us * 1000}{where}{_int_or_null(source.tx_id)}'
                       f',"lsn":{_int_or_null(source.lsn)},"xmin":{_int_or_null(source.xmin)}'
                       ',"origin":null,"origin_lsn":null}')
        block = "null" if transaction is None else self._block(transaction)
        return (f'{self._head}{{"before":{before},"after":{after},"source":{source_text},"transaction":{block},'
                f'"op":{json_converter.string_json(op)},"ts_ms":{now_ns // 1_000_000},"ts_us":{now_ns // 1000},'
                f'"ts_ns":{now_ns}}}{self._tail}')

"""Parsing the connectors' Kafka records into typed columns (see docs/events.md for the formats).

`parse_events` takes the raw rows of Spark's Kafka source and returns one row per record, whatever
format the connector was configured with:

===================  ==========================================================================
``format``           what the record is
===================  ==========================================================================
``debezium``         the Debezium 2.x change-stream envelope (``before``/``after``/``updateDescription``)
``legacy``           the Debezium 1.x envelope (``after``/``patch``/``filter``)
``flattened``        the document itself (ExtractNewDocumentState), ``__op``/``__deleted``/... if added
``tombstone``        a null value following a delete
``transaction``      a BEGIN/END record of the transaction topic
``heartbeat``        a heartbeat record
``invalid``          a value that is not a JSON object
===================  ==========================================================================

Kafka Connect's ``{"schema": …, "payload": …}`` wrapping (``schemas.enable``) is removed from keys and
values first, so the columns never depend on it.

Columns: ``topic, partition, offset, kafka_timestamp`` (where the record is); ``key`` (the key text,
unwrapped), ``id`` (the document id as the key holds it: relaxed Extended JSON, e.g. ``1004`` or
``{"$oid": "…"}``); ``format, op, is_tombstone``; ``before, after, patch, filter`` (documents as
Extended JSON text; ``after`` is the whole document for the flattened format, envelope fields
included); ``update_description`` (``removed_fields``, ``updated_fields`` as JSON text,
``truncated_arrays``); the source block as ``connector_name, db, collection`` (a relational event's
``schema.table`` or ``table``), ``rs, source_ts_ms, ord,
snapshot, lsid, txn_number, wall_time_ms`` and ``source_ts`` (a timestamp of ``source_ts_ms``);
``ts_ms`` (when the connector built the event); ``transaction`` (``id, total_order,
data_collection_order``); ``txn_status, txn_id, txn_event_count, txn_data_collections`` (transaction
topic); ``schema_wrapped``, ``value`` (the payload text), ``value_schema`` (the Connect schema of a wrapped
change event, JSON text), ``connector`` (the source block's ``connector``: ``mongodb``, ``postgresql``,
``mysql``…); and parsed documents
``after_fields`` / ``before_fields`` / ``updated_fields`` as ``map<string,string>`` (top-level field →
its value: plain text for strings, JSON text for anything else). Spark prunes the columns a job does not
use, so the parsed maps cost nothing unless asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

FORMATS = ("debezium", "legacy", "flattened", "tombstone", "transaction", "heartbeat", "invalid")
CHANGE_FORMATS = ("debezium", "legacy", "flattened", "tombstone")


def _struct(*fields: tuple[str, object]) -> StructType:
    return StructType([StructField(name, kind, True) for name, kind in fields])


_WRAPPER_FIELDS = (("schema", _struct(("type", StringType()))), ("payload", StringType()))

SOURCE_SCHEMA = _struct(
    ("version", StringType()),
    ("connector", StringType()),
    ("name", StringType()),
    ("ts_ms", LongType()),
    ("snapshot", StringType()),
    ("db", StringType()),
    ("sequence", StringType()),
    ("rs", StringType()),
    ("collection", StringType()),
    ("schema", StringType()),  # PostgreSQL
    ("table", StringType()),  # PostgreSQL, MySQL/MariaDB
    ("ord", LongType()),
    ("lsid", StringType()),
    ("txnNumber", LongType()),
    ("wallTime", LongType()),
    ("stxnid", StringType()),
)
UPDATE_DESCRIPTION_SCHEMA = _struct(
    ("removedFields", ArrayType(StringType())),
    ("updatedFields", StringType()),
    ("truncatedArrays", ArrayType(_struct(("field", StringType()), ("size", IntegerType())))),
)
TRANSACTION_BLOCK_SCHEMA = _struct(
    ("id", StringType()), ("total_order", LongType()), ("data_collection_order", LongType())
)
DATA_COLLECTIONS_SCHEMA = ArrayType(_struct(("data_collection", StringType()), ("event_count", LongType())))

# A superset of every value payload: change envelopes (both eras), transaction and heartbeat records,
# and the Connect wrapper's two fields.
ENVELOPE_SCHEMA = _struct(
    ("before", StringType()),
    ("after", StringType()),
    ("patch", StringType()),
    ("filter", StringType()),
    ("updateDescription", UPDATE_DESCRIPTION_SCHEMA),
    ("source", SOURCE_SCHEMA),
    ("op", StringType()),
    ("ts_ms", LongType()),
    ("transaction", TRANSACTION_BLOCK_SCHEMA),
    ("status", StringType()),
    ("id", StringType()),
    ("event_count", LongType()),
    ("data_collections", DATA_COLLECTIONS_SCHEMA),
    *_WRAPPER_FIELDS,
)
KEY_SCHEMA = _struct(
    ("id", StringType()),
    ("serverName", StringType()),
    ("payload", _struct(("id", StringType()), ("serverName", StringType()))),
    ("schema", _struct(("type", StringType()))),
)
DOCUMENT_MAP = MapType(StringType(), StringType())
_JSON_OPTIONS = {"mode": "PERMISSIVE"}


def _flattened_schema(prefix: str) -> StructType:
    return _struct(
        (f"{prefix}op", StringType()),
        (f"{prefix}deleted", StringType()),
        (f"{prefix}ts_ms", LongType()),
        (f"{prefix}source_ts_ms", LongType()),
        (f"{prefix}ord", LongType()),
        (f"{prefix}db", StringType()),
        (f"{prefix}collection", StringType()),
        (f"{prefix}rs", StringType()),
        (f"{prefix}snapshot", StringType()),
    )


def parse_events(raw: DataFrame, *, flattened_prefix: str = "__") -> DataFrame:
    """Typed columns for raw Kafka rows (batch or streaming); see the module doc for the columns."""
    key_text = F.col("key").cast("string")
    value_text = F.col("value").cast("string")
    stage = raw.select(
        F.col("topic"),
        F.col("partition"),
        F.col("offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        key_text.alias("_key_raw"),
        value_text.alias("_value_raw"),
        F.from_json(key_text, KEY_SCHEMA, _JSON_OPTIONS).alias("_k"),
        F.from_json(value_text, ENVELOPE_SCHEMA, _JSON_OPTIONS).alias("_v0"),
    )
    value_wrapped = F.col("_v0.schema.type").isNotNull() & F.col("_v0.payload").isNotNull()
    key_wrapped = F.col("_k.schema.type").isNotNull() & F.col("_k.payload").isNotNull()
    stage = stage.select(
        "*",
        value_wrapped.alias("schema_wrapped"),
        F.when(value_wrapped, F.col("_v0.payload")).otherwise(F.col("_value_raw")).alias("value"),
        F.when(value_wrapped, F.from_json(F.col("_v0.payload"), ENVELOPE_SCHEMA, _JSON_OPTIONS))
        .otherwise(F.col("_v0"))
        .alias("_v"),
        F.when(key_wrapped, F.to_json(F.col("_k.payload"))).otherwise(F.col("_key_raw")).alias("key_text"),
        F.when(key_wrapped, F.col("_k.payload.id")).otherwise(F.col("_k.id")).alias("_key_id"),
        F.when(key_wrapped, F.col("_k.payload.serverName")).otherwise(F.col("_k.serverName")).alias("_server"),
    )

    is_tombstone = F.col("_value_raw").isNull()
    is_envelope = F.col("_v.op").isin("c", "u", "d", "r") & F.col("_v.source").isNotNull()
    is_legacy = is_envelope & (
        F.col("_v.patch").isNotNull() | F.col("_v.filter").isNotNull() | (F.instr(F.col("value"), '"patch":') > 0)
    )
    is_transaction = F.col("_v.op").isNull() & F.col("_v.status").isin("BEGIN", "END") & F.col("_v.id").isNotNull()
    is_heartbeat = F.col("_v.op").isNull() & F.col("_server").isNotNull() & F.col("_v.ts_ms").isNotNull()
    is_object = F.ltrim(F.col("value")).startswith("{")
    fmt = (
        F.when(is_tombstone, F.lit("tombstone"))
        .when(is_legacy, F.lit("legacy"))
        .when(is_envelope, F.lit("debezium"))
        .when(is_transaction, F.lit("transaction"))
        .when(is_heartbeat, F.lit("heartbeat"))
        .when(is_object & F.col("_v").isNotNull(), F.lit("flattened"))
        .when(is_object & F.from_json(F.col("value"), DOCUMENT_MAP, _JSON_OPTIONS).isNotNull(), F.lit("flattened"))
        .otherwise(F.lit("invalid"))
    )
    stage = stage.withColumn("format", fmt)
    flat = F.when(F.col("format") == "flattened", F.from_json(F.col("value"), _flattened_schema(flattened_prefix)))
    stage = stage.withColumn("_f", flat)
    p = flattened_prefix

    def fcol(name: str):
        return F.col("_f").getField(f"{p}{name}")

    is_flat = F.col("format") == "flattened"
    is_change = F.col("format").isin("debezium", "legacy")
    flat_deleted = F.lower(fcol("deleted")) == "true"
    op = (
        F.when(is_change, F.col("_v.op"))
        .when(is_flat, F.coalesce(fcol("op"), F.when(flat_deleted, F.lit("d"))))
        .otherwise(F.lit(None).cast("string"))
    )
    source_ts_ms = F.when(is_change, F.col("_v.source.ts_ms")).when(is_flat, fcol("source_ts_ms"))
    update_description = F.when(
        is_change & F.col("_v.updateDescription").isNotNull(),
        F.struct(
            F.col("_v.updateDescription.removedFields").alias("removed_fields"),
            F.col("_v.updateDescription.updatedFields").alias("updated_fields"),
            F.col("_v.updateDescription.truncatedArrays").alias("truncated_arrays"),
        ),
    )
    after = F.when(is_change, F.col("_v.after")).when(is_flat, F.col("value"))
    # a relational event's data collection: `schema.table` (PostgreSQL) or `table` (MySQL/MariaDB, `db` names
    # the database), as Debezium names it in transaction metadata
    relational_table = F.when(F.col("_v.source.table").isNotNull(),
                              F.concat_ws(".", F.col("_v.source.schema"), F.col("_v.source.table")))
    before = F.when(F.col("format") == "debezium", F.col("_v.before"))
    return stage.select(
        "topic",
        "partition",
        "offset",
        "kafka_timestamp",
        F.col("key_text").alias("key"),
        F.coalesce(F.col("_key_id"), F.col("key_text")).alias("id"),
        "format",
        op.alias("op"),
        is_tombstone.alias("is_tombstone"),
        before.alias("before"),
        after.alias("after"),
        F.when(is_change, F.col("_v.patch")).alias("patch"),
        F.when(is_change, F.col("_v.filter")).alias("filter"),
        update_description.alias("update_description"),
        F.when(is_change, F.col("_v.source.name")).alias("connector_name"),
        F.when(is_change, F.col("_v.source.db")).when(is_flat, fcol("db")).alias("db"),
        F.when(is_change, F.coalesce(F.col("_v.source.collection"), relational_table))
        .when(is_flat, fcol("collection")).alias("collection"),
        F.when(is_change, F.col("_v.source.rs")).when(is_flat, fcol("rs")).alias("rs"),
        source_ts_ms.alias("source_ts_ms"),
        F.when(is_change, F.col("_v.source.ord")).when(is_flat, fcol("ord")).alias("ord"),
        F.when(is_change, F.col("_v.source.snapshot")).when(is_flat, fcol("snapshot")).alias("snapshot"),
        F.when(is_change, F.col("_v.source.lsid")).alias("lsid"),
        F.when(is_change, F.col("_v.source.txnNumber")).alias("txn_number"),
        F.when(is_change, F.col("_v.source.wallTime")).alias("wall_time_ms"),
        F.timestamp_millis(source_ts_ms).alias("source_ts"),
        F.when(is_change | F.col("format").isin("heartbeat", "transaction"), F.col("_v.ts_ms"))
        .when(is_flat, fcol("ts_ms"))
        .alias("ts_ms"),
        F.when(is_change, F.col("_v.transaction")).alias("transaction"),
        F.when(F.col("format") == "transaction", F.col("_v.status")).alias("txn_status"),
        F.when(F.col("format") == "transaction", F.col("_v.id")).alias("txn_id"),
        F.when(F.col("format") == "transaction", F.col("_v.event_count")).alias("txn_event_count"),
        F.when(F.col("format") == "transaction", F.col("_v.data_collections")).alias("txn_data_collections"),
        "schema_wrapped",
        "value",
        F.when(F.col("schema_wrapped") & is_change, F.get_json_object(F.col("_value_raw"), "$.schema"))
        .alias("value_schema"),
        F.when(is_change, F.col("_v.source.connector")).alias("connector"),
        F.from_json(after, DOCUMENT_MAP, _JSON_OPTIONS).alias("after_fields"),
        F.from_json(before, DOCUMENT_MAP, _JSON_OPTIONS).alias("before_fields"),
        F.from_json(update_description.getField("updated_fields"), DOCUMENT_MAP, _JSON_OPTIONS).alias("updated_fields"),
    )


def change_events(events: DataFrame) -> DataFrame:
    """Only the records that describe document changes (tombstones included)."""
    return events.where(F.col("format").isin(*CHANGE_FORMATS))


def infer_document_schema(events: DataFrame, column: str = "after", sample: int = 10000):
    """A Spark schema inferred from up to ``sample`` JSON documents of ``column`` (for ``from_json``)."""
    spark = events.sparkSession
    texts = events.where(F.col(column).isNotNull()).select(column).limit(sample)
    return spark.read.json(texts.rdd.map(lambda row: row[0])).schema

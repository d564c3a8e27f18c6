"""Sync to Delta tables: one Delta Lake table per topic (a captured table or collection), kept equal to its source
by a ``MERGE`` per micro-batch.

Each micro-batch is reduced to the latest state of every key it touches (`sparkjobs.latest_state`: the events in
source order, duplicates folded), then merged into ``output_path/<table>`` (the topic's name with
non-alphanumerics as ``_``):

- a row whose batch state is newer than the table's (by *position*, ``_cdc_source_ts_ms, _cdc_ord,
  _cdc_txn_order, _cdc_partition, _cdc_offset``) replaces it; an older or equal one changes nothing, so a replayed
  or reordered batch cannot move a row backwards;
- a delete removes the row (``delete_mode: hard``, the default) or marks it (``soft``: ``_cdc_deleted = true``,
  ``_cdc_deleted_at`` = the delete's source time, the row's last values kept);
- each table's commit carries Delta's ``txnAppId`` (the stream's query id) and ``txnVersion`` (the batch id): a
  batch Spark runs again after a crash is skipped by Delta for the tables it already reached, so nothing is
  written twice; the commit's ``userMetadata`` records the batch and the highest Kafka offset per partition.

Columns. Relational sources (PostgreSQL, MySQL/MariaDB): one column per field of the row, typed from the Connect
schema when values carry it (`sparkjobs.connect_types`); a column added at the source is added to the table
(``ALTER TABLE … ADD COLUMNS``), a dropped one stays, null in rows written after the drop. MongoDB (and any
source without a row schema): ``document``, the Extended JSON text of the document. Always: ``_cdc_key`` (the key's
id, as `parse_events` gives it: the merge key), ``_cdc_op``, the position columns and, in soft mode,
``_cdc_deleted``/``_cdc_deleted_at``.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from sparkjobs import connect_types
from sparkjobs.events import CHANGE_FORMATS
from sparkjobs.latest_state import latest_state

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

DELETE_MODES = ("hard", "soft")
KEY = "_cdc_key"
POSITION = ("_cdc_source_ts_ms", "_cdc_ord", "_cdc_txn_order", "_cdc_partition", "_cdc_offset")
DOCUMENT = "document"
RELATIONAL_CONNECTORS = ("postgresql", "mysql", "mariadb")
_TXN_CONF = ("spark.databricks.delta.write.txnAppId", "spark.databricks.delta.write.txnVersion",
             "spark.databricks.delta.commitInfo.userMetadata")


def table_name(topic: str) -> str:
    """``shop.public.orders`` -> ``shop_public_orders``: the folder of the topic's table under ``output_path``."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", topic)
    return name if not name[:1].isdigit() else f"t_{name}"


def table_path(output_path: str, topic: str) -> str:
    return f"{output_path.rstrip('/')}/{table_name(topic)}"


def _describe_topics(changes: DataFrame) -> dict[str, dict[str, Any]]:
    """Per topic of the batch: whether its rows are relational, the newest Connect schema's row fields, and the
    row's field names seen."""
    rows = changes.groupBy("topic").agg(
        F.max(F.when(F.col("value_schema").isNotNull(), F.struct(F.col("offset"), F.col("value_schema"))))
        .getField("value_schema").alias("schema"),
        F.collect_set("value_schema").alias("schemas"),
        F.max("connector").alias("connector"),
        F.array_distinct(F.flatten(F.collect_list(F.coalesce(F.map_keys("after_fields"),
                                                             F.array().cast("array<string>"))))).alias("names"),
    ).collect()
    described = {}
    for row in rows:
        fields: list[dict[str, Any]] = []
        for text in [*(text for text in row["schemas"] if text != row["schema"]), row["schema"]]:  # newest last
            for field in connect_types.after_fields(text) or []:  # union; the newest schema's type wins
                fields = [known for known in fields if known.get("field") != field.get("field")] + [field]
        relational = (row["connector"] or "").lower() in RELATIONAL_CONNECTORS or bool(fields)
        names = [field["field"] for field in fields] or []
        names += sorted(name for name in row["names"] or [] if name not in names)
        described[row["topic"]] = {"relational": relational, "fields": fields or None, "names": names}
    return described


def _source_rows(state: DataFrame, info: dict[str, Any], soft: bool) -> tuple[DataFrame, dict[str, Any]]:
    """The batch's state rows of one topic in the table's columns, and those columns' types."""
    meta = [
        F.col("id").alias(KEY),
        F.col("last_op").alias("_cdc_op"),
        F.col("source_ts_ms").alias("_cdc_source_ts_ms"),
        F.col("ord").alias("_cdc_ord"),
        F.col("txn_order").alias("_cdc_txn_order"),
        F.col("kafka_partition").cast("long").alias("_cdc_partition"),
        F.col("kafka_offset").alias("_cdc_offset"),
        F.col("deleted").alias("_cdc_deleted"),
        F.when(F.col("deleted") & (F.col("source_ts_ms") >= 0), F.timestamp_millis(F.col("source_ts_ms")))
        .alias("_cdc_deleted_at"),
    ]
    if info["relational"]:
        data = connect_types.row_columns(F.col("document"), info["fields"], info["names"])
        types = connect_types.column_types(info["fields"], info["names"])
    else:
        data = [F.col("document").alias(DOCUMENT)]
        types = {DOCUMENT: connect_types.StringType()}
    rows = state.select(*meta, *data)
    if not soft:
        rows = rows.drop("_cdc_deleted_at")
    return rows, types


def _ensure_table(spark: SparkSession, path: str, rows: DataFrame, types: dict[str, Any]) -> StructType:
    """Creates the table from ``rows``'s columns, or adds the columns it lacks; returns the table's schema."""
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, path):
        schema = StructType([StructField(field.name, field.dataType, True) for field in rows.schema.fields])
        # deletion vectors: a MERGE marks the rows it replaces instead of rewriting every file that holds one, so a
        # batch of changes to keys spread over the table costs about the batch, not the table
        DeltaTable.createIfNotExists(spark).location(path).addColumns(schema) \
            .property("delta.enableDeletionVectors", "true").execute()
        return schema
    schema = DeltaTable.forPath(spark, path).toDF().schema
    known = {field.name.lower() for field in schema.fields}
    wanted = {**types, **{field.name: field.dataType for field in rows.schema.fields}}
    added = [(name, kind) for name, kind in wanted.items() if name.lower() not in known]
    if added:
        columns = ", ".join(f"`{name.replace('`', '``')}` {kind.simpleString()}" for name, kind in added)
        spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS ({columns})")
        schema = DeltaTable.forPath(spark, path).toDF().schema
    return schema


def _newer(source: str, target: str) -> str:
    def position(alias: str) -> str:
        return "struct(" + ", ".join(f"{alias}.{column}" for column in POSITION) + ")"

    return f"{position(source)} > {position(target)}"


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def merge_topic(spark: SparkSession, path: str, rows: DataFrame, types: dict[str, Any], *, soft: bool,
                txn: tuple[str, int, str] | None = None) -> int:
    """MERGE the batch rows of one topic into its table; returns the rows inserted, updated or deleted. ``txn``:
    (Delta's txnAppId, txnVersion, the commit's userMetadata) of the MERGE alone (a table created or altered first
    must not take the batch's txnVersion, or Delta would skip the MERGE as done)."""
    from delta.tables import DeltaTable

    schema = _ensure_table(spark, path, rows, types)
    present = {name.lower(): name for name in rows.columns}
    # in the table's columns and types; a dropped source column stays in the table, null in what this batch writes
    rows = rows.select(*[
        (F.col(_quoted(present[field.name.lower()])) if field.name.lower() in present else F.lit(None))
        .cast(field.dataType).alias(field.name)
        for field in schema.fields
    ])
    columns = [field.name for field in schema.fields]
    data = [name for name in columns if name not in (KEY, "_cdc_deleted", "_cdc_deleted_at")]
    newer = _newer("s", "t")
    merge = DeltaTable.forPath(spark, path).alias("t").merge(rows.alias("s"), f"t.{KEY} = s.{KEY}")
    if soft:
        marks = {name: f"s.{name}" for name in ("_cdc_deleted", "_cdc_deleted_at", "_cdc_op", *POSITION)}
        merge = merge.whenMatchedUpdate(condition=f"s._cdc_deleted AND {newer}", set=marks)
    else:
        merge = merge.whenMatchedDelete(condition=f"s._cdc_deleted AND {newer}")
    merge = merge.whenMatchedUpdate(condition=f"NOT s._cdc_deleted AND {newer}",
                                    set={**{_quoted(name): f"s.{_quoted(name)}" for name in data},
                                         "_cdc_deleted": "false",
                                         **({"_cdc_deleted_at": "null"} if soft else {})})
    merge = merge.whenNotMatchedInsert(condition=None if soft else "NOT s._cdc_deleted",
                                       values={_quoted(name): f"s.{_quoted(name)}" for name in columns})
    conf = spark.conf
    if txn is not None:
        for key, value in zip(_TXN_CONF, (txn[0], str(txn[1]), txn[2]), strict=True):
            conf.set(key, value)
    try:
        outcome = merge.execute()
    finally:
        if txn is not None:
            for key in _TXN_CONF:
                conf.unset(key)
    first = outcome.first() if outcome is not None else None
    return int((first.asDict() if first is not None else {}).get("num_affected_rows") or 0)


def sync_batch(spark: SparkSession, events: DataFrame, *, output_path: str, app_id: str, batch_id: int,
               soft: bool, flattened_prefix: str = "__", step=None) -> dict[str, Any] | None:
    """MERGE one micro-batch of parsed events into the tables; None when it holds no change event."""
    changes = events.where(F.col("format").isin(*CHANGE_FORMATS)).persist()
    try:
        topics = _describe_topics(changes)
        if not topics:
            return None
        offsets = {row["topic"]: {str(item["partition"]): int(item["offset"]) for item in row["offsets"]}
                   for row in changes.groupBy("topic", "partition").agg(F.max("offset").alias("offset"))
                   .groupBy("topic").agg(F.collect_list(F.struct("partition", "offset")).alias("offsets")).collect()}
        state = latest_state(changes, include_deleted=True, flattened_prefix=flattened_prefix).persist()
        try:
            rows_out = 0
            tables = {}
            for topic in sorted(topics):
                if step is not None:
                    step(f"batch {batch_id}: merge into {table_name(topic)}")
                rows, types = _source_rows(state.where(F.col("topic") == topic), topics[topic], soft)
                path = table_path(output_path, topic)
                metadata = json.dumps({"topic": topic, "batch_id": batch_id, "offsets": offsets.get(topic, {})},
                                      separators=(",", ":"))
                rows_out += merge_topic(spark, path, rows, types, soft=soft, txn=(app_id, batch_id, metadata))
                tables[topic] = path
        finally:
            state.unpersist()
        return {"rows_in": changes.count(), "rows_out": rows_out, "tables": tables}
    finally:
        changes.unpersist()


def table_summaries(spark: SparkSession, output_path: str, topics: list[str], *, soft: bool) -> dict[str, Any]:
    """Per topic with a table: its path, live rows and latest version."""
    from delta.tables import DeltaTable

    summaries = {}
    for topic in topics:
        path = table_path(output_path, topic)
        if not DeltaTable.isDeltaTable(spark, path):
            continue
        table = DeltaTable.forPath(spark, path)
        frame = table.toDF()
        if soft:
            frame = frame.where("NOT _cdc_deleted")
        version = table.history(1).select("version").first()
        summaries[topic] = {"path": path, "rows": frame.count(), "version": int(version[0]) if version else None}
    return summaries

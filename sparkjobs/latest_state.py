"""Latest state per document from change events: c/u/d/r, tombstones, patches, in source order.

Order. Events of a document are applied by *position* ``(source.ts_ms, source.ord,
transaction.total_order, Kafka partition, Kafka offset)``: the cluster time of the change first, so
events that arrive in another partition, or out of order, still apply in the order MongoDB made them;
the transaction's order next (every write of a MongoDB transaction shares one cluster time); the
record's place in Kafka last. A tombstone carries no position of its own: it takes the one of the record
before it in its partition (its delete), or sorts first when there is none (a compacted topic where only
the tombstone is left). Flattened events without ``__source_ts_ms`` are ordered by partition and
offset alone.

Actions. ``upsert`` (c, r, u with a full document, a legacy replace, a flattened document) sets the
whole document; ``delete`` (d, a tombstone, a flattened ``__deleted: true``) removes it; ``patch`` (u
without a full document: ``updateDescription`` or a legacy ``$set``/``$unset``/``$push`` patch) is
applied onto the state before it (`sparkjobs.docstate`).

Duplicates. A record read twice, or an event produced twice (a connector re-emitting from an earlier
offset), has the same position as its first copy, so the copies sort next to each other; every action is
idempotent (a full document, a delete, or absolute ``$set``/``$unset``/truncate values), so applying a
copy again changes nothing.

Cost. Only documents whose last events are patches need Python: for the others, the latest ``upsert``
or ``delete`` is the answer and is found with Spark's own aggregates. For the rest, only the patches after
the latest full document are folded, by a Python UDF.

Result columns: ``topic, id, db, collection, document`` (Extended JSON text, in the dialect of the
events: strict for the Debezium and legacy formats, relaxed for flattened), ``deleted``, ``complete``
(False when the document was rebuilt from updates alone because its earlier state was not read),
``last_op, source_ts_ms, ord, txn_order, kafka_partition, kafka_offset`` (the last event applied),
``events`` (how many were read for the document) and ``format``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, StringType, StructField, StructType

from sparkjobs import docstate
from sparkjobs.events import CHANGE_FORMATS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

STATE_COLUMNS = (
    "topic",
    "id",
    "db",
    "collection",
    "document",
    "deleted",
    "complete",
    "last_op",
    "source_ts_ms",
    "ord",
    "txn_order",
    "kafka_partition",
    "kafka_offset",
    "events",
    "format",
)

_FOLD_RESULT = StructType([StructField("document", StringType()), StructField("complete", BooleanType())])


def _fold(base, patches_json, id_hint):
    # The patches arrive as one JSON text (sorted by position in SQL): far cheaper to hand to Python than rows.
    if patches_json is None:
        return None
    document, complete = docstate.fold(base, docstate.loads(patches_json), id_hint=id_hint)
    return document, complete


def actions(events: DataFrame, *, previous_state: DataFrame | None = None) -> DataFrame:
    """One row per change event (and per previous-state row) with its action and position."""
    # No filter on `format` here: Spark would push it below the parsing and parse every value twice. Records
    # that are not changes (transaction, heartbeat, invalid) get no action and are ignored by the aggregation.
    changes = events
    legacy_operator = F.col("patch").rlike(r'^\s*\{\s*"\$')
    is_legacy_update = (F.col("format") == "legacy") & (F.col("op") == "u")
    action = (
        F.when(~F.col("format").isin(*CHANGE_FORMATS), F.lit(None).cast("string"))
        .when(F.col("is_tombstone"), F.lit("delete"))
        .when(F.col("format") == "flattened", F.when(F.col("op") == "d", "delete").otherwise("upsert"))
        .when(F.col("op") == "d", F.lit("delete"))
        .when(F.col("op").isin("c", "r"), F.when(F.col("after").isNotNull(), F.lit("upsert")))
        .when(
            is_legacy_update,
            F.when(F.col("patch").isNull(), F.when(F.col("after").isNotNull(), F.lit("upsert")))
            .when(legacy_operator, F.lit("patch"))
            .otherwise(F.lit("upsert")),
        )
        .when(F.col("after").isNotNull(), F.lit("upsert"))
        .when(F.col("update_description").isNotNull(), F.lit("patch"))
    )
    document = F.when(is_legacy_update & F.col("patch").isNotNull() & ~legacy_operator, F.col("patch")).otherwise(
        F.col("after")
    )
    rows = changes.select(
        "topic",
        "id",
        "partition",
        "offset",
        "is_tombstone",
        "db",
        "collection",
        F.coalesce(F.col("op"), F.when(F.col("is_tombstone"), F.lit("d"))).alias("op"),
        "format",
        action.alias("action"),
        document.alias("document"),
        F.lit(True).alias("complete"),
        F.col("source_ts_ms").alias("ts"),
        F.col("ord"),
        F.col("transaction.total_order").alias("txn_order"),
        F.col("update_description.updated_fields").alias("updated_fields"),
        F.col("update_description.removed_fields").alias("removed_fields"),
        F.col("update_description.truncated_arrays").alias("truncated_arrays"),
        F.when(F.col("format") == "legacy", F.col("patch")).alias("legacy_patch"),
        F.col("filter"),
    ).withColumn("events", F.when(F.col("action").isNotNull(), F.lit(1)).cast("long"))
    if previous_state is not None:
        rows = rows.unionByName(_state_as_actions(previous_state))

    # A tombstone takes the position of the record before it in its partition (its delete).
    preceding = Window.partitionBy("topic", "id").orderBy("partition", "offset").rowsBetween(
        Window.unboundedPreceding, -1
    )
    before = F.last(
        F.when(
            ~F.col("is_tombstone"),
            F.struct("partition", "ts", "ord", "txn_order", "db", "collection"),
        ),
        ignorenulls=True,
    ).over(preceding)
    rows = rows.withColumn("_before", before)
    inherit = F.col("is_tombstone") & (F.col("_before.partition") == F.col("partition"))
    rows = rows.select(
        *[c for c in rows.columns if c not in ("ts", "ord", "txn_order", "db", "collection", "_before")],
        F.when(inherit, F.col("_before.ts")).otherwise(F.col("ts")).alias("ts"),
        F.when(inherit, F.col("_before.ord")).otherwise(F.col("ord")).alias("ord"),
        F.when(inherit, F.col("_before.txn_order")).otherwise(F.col("txn_order")).alias("txn_order"),
        F.coalesce(F.col("db"), F.col("_before.db")).alias("db"),
        F.coalesce(F.col("collection"), F.col("_before.collection")).alias("collection"),
    )
    position = F.struct(
        F.coalesce(F.col("ts"), F.lit(-1)).alias("ts"),
        F.coalesce(F.col("ord"), F.lit(-1)).alias("ord"),
        F.coalesce(F.col("txn_order"), F.lit(-1)).alias("txn_order"),
        F.col("partition").cast("long").alias("partition"),
        F.col("offset").alias("offset"),
    )
    return rows.withColumn("pos", position)


def _state_as_actions(state: DataFrame) -> DataFrame:
    """Rows of a previous latest-state result as actions at the position of their last event."""
    return state.select(
        "topic",
        "id",
        F.col("kafka_partition").alias("partition"),
        F.col("kafka_offset").alias("offset"),
        F.lit(False).alias("is_tombstone"),
        "db",
        "collection",
        F.col("last_op").alias("op"),
        "format",
        F.when(F.col("deleted"), F.lit("delete")).otherwise(F.lit("upsert")).alias("action"),
        "document",
        "complete",
        F.col("source_ts_ms").alias("ts"),
        "ord",
        "txn_order",
        F.lit(None).cast("string").alias("updated_fields"),
        F.lit(None).cast("array<string>").alias("removed_fields"),
        F.lit(None).cast("array<struct<field:string,size:int>>").alias("truncated_arrays"),
        F.lit(None).cast("string").alias("legacy_patch"),
        F.lit(None).cast("string").alias("filter"),
        F.col("events").cast("long").alias("events"),
    )


def latest_state(
    events: DataFrame,
    *,
    previous_state: DataFrame | None = None,
    include_deleted: bool = False,
    flattened_prefix: str = "__",
) -> DataFrame:
    """The latest state of every document in ``events`` (parsed with `sparkjobs.events.parse_events`).

    ``previous_state``: an earlier result (with deleted rows) that ``events`` continue, for incremental runs.
    """
    rows = actions(events, previous_state=previous_state)
    is_anchor = F.col("action").isin("upsert", "delete")
    grouped = rows.groupBy("topic", "id").agg(
        F.max(
            F.when(is_anchor, F.struct("pos", "action", "document", "complete", "format", "op"))
        ).alias("anchor"),
        F.max(F.when(F.col("action") == "patch", F.col("pos"))).alias("last_patch"),
        F.collect_list(
            F.when(
                F.col("action") == "patch",
                F.struct("pos", "updated_fields", "removed_fields", "truncated_arrays", "legacy_patch", "filter"),
            )
        ).alias("patches"),
        F.max(F.when(F.col("action").isNotNull(), F.struct("pos", "op", "format"))).alias("last"),
        F.max(F.when(F.col("db").isNotNull(), F.struct("pos", "db", "collection"))).alias("where"),
        F.sum("events").alias("events"),
    ).where(F.col("last").isNotNull())
    needs_fold = F.col("last_patch").isNotNull() & (
        F.col("anchor").isNull() | (F.col("last_patch") > F.col("anchor.pos"))
    )
    base = F.when(F.col("anchor.action") == "upsert", F.col("anchor.document"))
    common = [
        "topic",
        "id",
        F.col("where.db").alias("db"),
        F.col("where.collection").alias("collection"),
    ]
    tail = [
        F.col("last.op").alias("last_op"),
        F.col("last.pos.ts").alias("source_ts_ms"),
        F.col("last.pos.ord").alias("ord"),
        F.col("last.pos.txn_order").alias("txn_order"),
        F.col("last.pos.partition").cast("int").alias("kafka_partition"),
        F.col("last.pos.offset").alias("kafka_offset"),
        F.col("events"),
        F.col("last.format").alias("format"),
    ]
    # One pass: the Python fold sees only the documents that need it (the others pass nulls and return at once).
    fold_udf = F.udf(_fold, _FOLD_RESULT)
    after_anchor = F.filter(
        "patches", lambda patch: F.col("anchor").isNull() | (patch.getField("pos") > F.col("anchor.pos"))
    )
    patches_json = F.to_json(F.array_sort(after_anchor))
    folded = fold_udf(F.when(needs_fold, base), F.when(needs_fold, patches_json), F.when(needs_fold, F.col("id")))
    state = grouped.select(
        *common,
        F.when(needs_fold, folded.getField("document")).otherwise(base).alias("document"),
        (~needs_fold & (F.col("anchor.action") == "delete")).alias("deleted"),
        F.when(
            needs_fold, folded.getField("complete") & F.coalesce(F.col("anchor.complete"), F.lit(False))
        ).otherwise(F.col("anchor.complete")).alias("complete"),
        *tail,
    )
    # Flattened documents end with the envelope fields the connector appended (``,"__op":"c"``...): drop them.
    trailing = f'(,"{re.escape(flattened_prefix)}[A-Za-z0-9_]+":("([^"\\\\]|\\\\.)*"|[^,{{}}\\[\\]"]*))+}}$'
    state = state.withColumn(
        "document",
        F.when(F.col("format") == "flattened", F.regexp_replace("document", trailing, "}")).otherwise(
            F.col("document")
        ),
    )
    if not include_deleted:
        state = state.where(~F.col("deleted"))
    return state.select(*STATE_COLUMNS)

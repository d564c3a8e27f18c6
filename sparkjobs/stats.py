"""Change statistics: events per collection and operation per time window.

Time (``time_field``): ``source`` (default: ``source.ts_ms``, when MongoDB made the change; for
flattened events without ``__source_ts_ms`` the Kafka record time stands in), ``capture`` (the
envelope's ``ts_ms``, when the connector built the event) or ``kafka`` (the Kafka record timestamp).
Windows are tumbling (``window``) or sliding (``window`` + ``slide``), Spark interval strings such as
``"1 minute"`` or ``"10 seconds"``.

Counted: change events (``c``, ``u``, ``d``, ``r``); tombstones only with ``include_tombstones`` (as
op ``tombstone``). Transaction and heartbeat records are never counted. Flattened events without an
``__op`` field count as op ``unknown``.

Result columns: ``window_start, window_end, topic, db, collection, op, events``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from sparkjobs.errors import InvalidArguments

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

STATS_COLUMNS = ("window_start", "window_end", "topic", "db", "collection", "op", "events")
TIME_FIELDS = ("source", "capture", "kafka")


def change_stats(
    events: DataFrame,
    *,
    window: str = "1 minute",
    slide: str | None = None,
    time_field: str = "source",
    include_tombstones: bool = False,
) -> DataFrame:
    if time_field not in TIME_FIELDS:
        raise InvalidArguments(f"`time_field` must be one of {', '.join(TIME_FIELDS)}, not {time_field!r}")
    formats = ["debezium", "legacy", "flattened"] + (["tombstone"] if include_tombstones else [])
    counted = events.where(F.col("format").isin(*formats))
    if time_field == "source":
        moment = F.coalesce(F.col("source_ts"), F.col("kafka_timestamp"))
    elif time_field == "capture":
        moment = F.coalesce(F.timestamp_millis(F.col("ts_ms")), F.col("kafka_timestamp"))
    else:
        moment = F.col("kafka_timestamp")
    op = F.coalesce(F.col("op"), F.when(F.col("is_tombstone"), F.lit("tombstone")), F.lit("unknown"))
    bucket = F.window(moment, window, slide) if slide else F.window(moment, window)
    return (
        counted.groupBy(bucket.alias("w"), "topic", "db", "collection", op.alias("op"))
        .agg(F.count(F.lit(1)).alias("events"))
        .select(
            F.col("w.start").alias("window_start"),
            F.col("w.end").alias("window_end"),
            "topic",
            "db",
            "collection",
            "op",
            "events",
        )
    )


def merge_stats(previous: DataFrame | None, batch: DataFrame) -> DataFrame:
    """Counts of an earlier result plus a batch's counts (for incremental, streaming runs)."""
    if previous is None:
        return batch
    keys = [c for c in STATS_COLUMNS if c != "events"]
    return (
        previous.select(*STATS_COLUMNS)
        .unionByName(batch.select(*STATS_COLUMNS))
        .groupBy(*keys)
        .agg(F.sum("events").alias("events"))
        .select(*STATS_COLUMNS)
    )


def ordered(stats: DataFrame) -> DataFrame:
    return stats.orderBy("window_start", "topic", "db", "collection", "op")

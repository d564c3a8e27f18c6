"""The job templates: latest_state, stats, delta_sync, delta_query, sql, script. Each takes a JobContext and
returns its outcome.

Arguments every template reading topics accepts (JSON; see docs/spark.md for the whole contract):
``topics`` or ``topic_pattern``, ``bootstrap_servers``, ``starting_offsets`` / ``ending_offsets``,
``starting_timestamp`` / ``ending_timestamp``, ``kafka_options``, ``flattened_prefix``, ``preview_rows``,
``output_path``. Streaming (``mode: "stream"``; latest_state and stats): ``checkpoint_path``,
``trigger`` (``"available_now"``: what is in the topics now, then stop — the default; or an interval
such as ``"10 seconds"``: run until cancelled), ``max_batches``, ``timeout_s``,
``max_offsets_per_trigger``.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparkjobs import delta_sync, output, sqlcheck
from sparkjobs.errors import InvalidArguments, JobCancelled, JobError
from sparkjobs.events import parse_events
from sparkjobs.latest_state import latest_state
from sparkjobs.sqlcheck import split_statements
from sparkjobs.stats import change_stats, merge_stats, ordered
from sparkjobs.topics import TopicSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass
class JobContext:
    spark: SparkSession
    args: dict[str, Any]
    reporter: output.Reporter
    source: TopicSource | None = None
    topics: list[str] = field(default_factory=list)
    cancelled: threading.Event = field(default_factory=threading.Event)

    @property
    def preview_rows(self) -> int:
        return int(self.args.get("preview_rows", output.PREVIEW_ROWS))

    @property
    def flattened_prefix(self) -> str:
        return str(self.args.get("flattened_prefix", "__"))

    def emit(self, **fields: Any) -> None:
        self.reporter.emit(**fields)

    def step(self, name: str, spark: SparkSession | None = None) -> None:
        """Name the Spark jobs that follow (stage lines carry it) and report the step."""
        context = (spark or self.spark).sparkContext
        context.setLocalProperty("callSite.short", name)
        context.setLocalProperty("callSite.long", name)
        context.setJobDescription(name)
        self.emit(event="step", name=name)

    def events(self, source: TopicSource | None = None, *, streaming: bool = False) -> DataFrame:
        source = source or self.source
        return parse_events(source.read(self.spark, streaming=streaming), flattened_prefix=self.flattened_prefix)


@dataclass(frozen=True)
class Template:
    name: str
    run: Callable[[JobContext], dict[str, Any]]
    validate: Callable[[dict[str, Any]], None]
    reads_topics: str = "required"  # "required" | "optional"


# --- argument helpers -----------------------------------------------------------------------------


def _bool(args: Mapping[str, Any], name: str, default: bool = False) -> bool:
    value = args.get(name, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
        return value.lower() in ("true", "1", "yes")
    raise InvalidArguments(f"`{name}` must be true or false, not {value!r}")


def _mode(args: Mapping[str, Any]) -> str:
    mode = args.get("mode", "batch")
    if mode not in ("batch", "stream"):
        raise InvalidArguments(f"`mode` must be 'batch' or 'stream', not {mode!r}")
    if mode == "stream":
        if not args.get("checkpoint_path"):
            raise InvalidArguments("`mode: stream` needs `checkpoint_path` (where Spark keeps its progress)")
        if not args.get("output_path"):
            raise InvalidArguments("`mode: stream` needs `output_path`")
        if args.get("ending_offsets") is not None or args.get("ending_timestamp") is not None:
            raise InvalidArguments("a stream has no end: drop `ending_offsets` / `ending_timestamp`")
        _trigger(args)
    return mode


_INTERVAL = re.compile(r"^\s*\d+(\.\d+)?\s*(milliseconds?|ms|seconds?|s|minutes?|min|hours?|h)\s*$", re.IGNORECASE)


def _trigger(args: Mapping[str, Any]) -> dict[str, Any]:
    trigger = args.get("trigger", "available_now")
    if trigger in ("available_now", "availableNow"):
        return {"availableNow": True}
    if isinstance(trigger, str) and _INTERVAL.match(trigger):
        return {"processingTime": trigger.strip()}
    raise InvalidArguments(f"`trigger` must be 'available_now' or an interval such as '10 seconds', not {trigger!r}")


def _positive(args: Mapping[str, Any], name: str) -> float | None:
    value = args.get(name)
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidArguments(f"`{name}` must be a number, not {value!r}") from None
    if number <= 0:
        raise InvalidArguments(f"`{name}` must be positive")
    return number


# --- streaming ------------------------------------------------------------------------------------


def run_stream(ctx: JobContext, process: Callable[[DataFrame, int], dict[str, Any] | None]) -> dict[str, Any]:
    """Run ``process(parsed_batch, batch_id)`` over a checkpointed stream; returns batch totals.

    Stops at the end of the topics (``available_now``), after ``max_batches`` processed batches,
    after ``timeout_s``, or on cancellation. An error in a batch ends the run with that error.
    """
    args = ctx.args
    totals = {"batches": 0, "rows_in": 0, "skipped_batches": 0}
    failure: list[BaseException] = []
    max_batches = _positive(args, "max_batches")
    timeout = _positive(args, "timeout_s")

    def on_batch(batch: DataFrame, batch_id: int) -> None:
        try:
            if ctx.cancelled.is_set():
                raise JobCancelled()
            batch = batch.persist()  # the micro-batch's Kafka rows, read once
            try:
                outcome = process(parse_events(batch, flattened_prefix=ctx.flattened_prefix), batch_id)
            finally:
                batch.unpersist()
            if outcome is None:
                totals["skipped_batches"] += 1
                return
            totals["batches"] += 1
            totals["rows_in"] += outcome.get("rows_in", 0)
            ctx.emit(event="batch", batch_id=batch_id, **outcome)
        except BaseException as error:
            failure.append(error)
            raise

    output.claim_output(ctx.spark, args["output_path"], args["checkpoint_path"])
    writer = (
        ctx.source.read(ctx.spark, streaming=True)
        .writeStream.foreachBatch(on_batch)
        .option("checkpointLocation", args["checkpoint_path"])
        .trigger(**_trigger(args))
    )
    query = writer.start()
    output.mark_output(ctx.spark, args["output_path"], str(query.id))
    ctx.emit(event="stream", query_id=str(query.id), run_id=str(query.runId), checkpoint_path=args["checkpoint_path"])
    started = time.monotonic()
    try:
        while query.isActive:
            if max_batches is not None and totals["batches"] >= max_batches:
                break
            if timeout is not None and time.monotonic() - started >= timeout:
                break
            query.awaitTermination(0.5)
    finally:
        if query.isActive:
            query.stop()
    if failure:
        raise failure[0]
    error = query.exception()
    if error is not None:
        raise JobError(f"streaming query failed: {error}")
    return totals


def _latest_rows_for(ctx: JobContext, path: str, keep_deleted: bool) -> tuple[int, dict[str, Any]]:
    """rows_out and the preview: the rows the output holds for its reader, the deleted ones too when they are
    kept (a streaming state always stores them, to order later events; without "keep deleted" they are not
    counted)."""
    written = ctx.spark.read.parquet(path)
    rows = written if keep_deleted or "deleted" not in written.columns else written.where(~written.deleted)
    return rows.count(), output.preview(rows.orderBy("topic", "id"), ctx.preview_rows)


# --- latest_state ---------------------------------------------------------------------------------


def _validate_latest(args: dict[str, Any]) -> None:
    _mode(args)
    if not args.get("output_path"):
        raise InvalidArguments("`output_path` is required (where the Parquet state is written)")
    _bool(args, "include_deleted")


def run_latest_state(ctx: JobContext) -> dict[str, Any]:
    args = ctx.args
    path = args["output_path"]
    if _mode(args) == "batch":
        ctx.step("read topics")
        raw = ctx.source.read(ctx.spark).persist()  # the Kafka rows once; parsed columns stay prunable
        try:
            rows_in = raw.count()
            ctx.emit(event="read", rows_in=rows_in, topics=ctx.topics)
            ctx.step("latest state to parquet")
            state = latest_state(
                parse_events(raw, flattened_prefix=ctx.flattened_prefix),
                include_deleted=_bool(args, "include_deleted"),
                flattened_prefix=ctx.flattened_prefix,
            )
            state.write.mode("overwrite").parquet(path)
        finally:
            raw.unpersist()
        ctx.step("preview")
        rows_out, shown = _latest_rows_for(ctx, path, _bool(args, "include_deleted"))
        return {"rows_in": rows_in, "rows_out": rows_out, "output_path": path, "preview": shown}

    def process(events: DataFrame, batch_id: int) -> dict[str, Any] | None:
        spark = events.sparkSession
        versions = output.list_versions(spark, path)
        if any(done and version >= batch_id for version, done in versions):
            return None  # replayed after a crash: this batch is already in the state
        ctx.step(f"batch {batch_id}: latest state", spark)
        rows_in = events.count()
        if rows_in == 0:
            return None
        previous = output.current_version(spark, path)
        state = latest_state(
            events,
            previous_state=spark.read.parquet(previous) if previous else None,
            include_deleted=True,
            flattened_prefix=ctx.flattened_prefix,
        )
        target = output.write_version(state, path, batch_id)
        written = spark.read.parquet(target)
        kept = written.count() if _bool(args, "include_deleted") else written.where("NOT deleted").count()
        return {"rows_in": rows_in, "rows_out": kept, "output_path": target}

    totals = run_stream(ctx, process)
    current = output.current_version(ctx.spark, path)
    rows_out, shown = (_latest_rows_for(ctx, current, _bool(args, "include_deleted")) if current
                       else (0, output.preview(ctx.spark.range(0), 0)))
    return {**totals, "rows_out": rows_out, "output_path": current, "preview": shown}


# --- delta_sync -----------------------------------------------------------------------------------


def _validate_delta_sync(args: dict[str, Any]) -> None:
    if args.get("mode", "stream") != "stream":
        raise InvalidArguments("a Delta sync is a stream: `mode` must be 'stream'")
    _mode({**args, "mode": "stream"})
    if args.get("delete_mode", "hard") not in delta_sync.DELETE_MODES:
        raise InvalidArguments(f"`delete_mode` must be one of {', '.join(delta_sync.DELETE_MODES)}")


def run_delta_sync(ctx: JobContext) -> dict[str, Any]:
    """One Delta table per topic under ``output_path``, kept equal to its source by MERGE (`sparkjobs.delta_sync`)."""
    args = ctx.args
    path, soft = args["output_path"], args.get("delete_mode", "hard") == "soft"
    stream_id: list[str] = []

    def process(events: DataFrame, batch_id: int) -> dict[str, Any] | None:
        spark = events.sparkSession
        if not stream_id:  # Delta's txnAppId: Spark's query id, kept in the checkpoint across restarts
            metadata = output.read_text(spark, f"{args['checkpoint_path'].rstrip('/')}/metadata")
            stream_id.append(json.loads(metadata)["id"])
        ctx.step(f"batch {batch_id}: merge", spark)
        outcome = delta_sync.sync_batch(spark, events, output_path=path, app_id=stream_id[0], batch_id=batch_id,
                                        soft=soft, flattened_prefix=ctx.flattened_prefix,
                                        step=lambda name: ctx.step(name, spark))
        if outcome is None:
            return None
        return {"rows_in": outcome["rows_in"], "rows_out": outcome["rows_out"], "output_path": path,
                "tables": sorted(outcome["tables"])}

    totals = run_stream(ctx, process)
    ctx.step("table summaries")
    tables = delta_sync.table_summaries(ctx.spark, path, ctx.topics, soft=soft)
    summary = ctx.spark.createDataFrame(
        [(topic, info["path"], info["rows"], info["version"]) for topic, info in sorted(tables.items())],
        "topic string, path string, rows long, version long",
    )
    return {**totals, "rows_out": sum(info["rows"] for info in tables.values()), "output_path": path,
            "tables": tables, "preview": output.preview(summary, ctx.preview_rows)}


def _validate_delta_query(args: dict[str, Any]) -> None:
    sql = args.get("sql")
    if not isinstance(sql, str) or not split_statements(sql):
        raise InvalidArguments("`sql` is required: the query to run over the synced tables")
    if len(split_statements(sql)) > 1:
        raise sqlcheck.QueryRefused(f"the text holds {len(split_statements(sql))} statements separated by `;`")
    tables = args.get("tables")
    if not isinstance(tables, Mapping) or not tables:
        raise InvalidArguments("`tables` must map table names to the Delta tables' paths")
    for name, path in tables.items():
        if not _VIEW_NAME.match(str(name)) or not isinstance(path, str) or not path:
            raise InvalidArguments(f"`tables`: {name!r} must be a SQL identifier naming a Delta table's path")


def run_delta_query(ctx: JobContext) -> dict[str, Any]:
    """One read-only query (`sqlcheck`, time travel allowed) over a Delta sync's tables, each registered under its
    name in the session's catalog for the query's length; previewed, written nowhere."""
    args = ctx.args
    tables = {str(name): str(path) for name, path in args["tables"].items()}
    sql = args["sql"]
    sqlcheck.lock_session(ctx.spark)
    sqlcheck.check_query(ctx.spark, sql, list(tables), time_travel=True)
    mentioned = sql.lower()
    registered = []
    try:
        for name, path in tables.items():
            if name.lower() in mentioned:
                ctx.step(f"open {name}")
                ctx.spark.catalog.createTable(name, path=path, source="delta")
                registered.append(name)
        result = ctx.spark.sql(sql)
        sqlcheck.check_analyzed(result, [], tables=registered)
        ctx.step("sql")
        result = result.persist()
        try:
            return {"rows_out": result.count(), "output_path": None,
                    "preview": output.preview(result, ctx.preview_rows)}
        finally:
            result.unpersist()
    finally:
        for name in registered:  # the catalog outlives the session in-process; the table's files stay
            ctx.spark.sql(f"DROP TABLE IF EXISTS `{name}`")


# --- stats ----------------------------------------------------------------------------------------


def _stats_options(args: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "window": str(args.get("window", "1 minute")),
        "slide": args.get("slide"),
        "time_field": str(args.get("time_field", "source")),
        "include_tombstones": _bool(args, "include_tombstones"),
    }


def _validate_stats(args: dict[str, Any]) -> None:
    _mode(args)
    options = _stats_options(args)
    for name in ("window", "slide"):
        value = options[name]
        if value is not None and not _INTERVAL.match(str(value)):
            raise InvalidArguments(f"`{name}` must be an interval such as '1 minute', not {value!r}")
    if options["time_field"] not in ("source", "capture", "kafka"):
        raise InvalidArguments("`time_field` must be source, capture or kafka")


def _totals(stats: DataFrame) -> dict[str, int]:
    return {row["op"]: int(row["n"]) for row in stats.groupBy("op").agg({"events": "sum"}).toDF("op", "n").collect()}


def run_stats(ctx: JobContext) -> dict[str, Any]:
    args = ctx.args
    options = _stats_options(args)
    path = args.get("output_path")
    if _mode(args) == "batch":
        ctx.step("read topics")
        raw = ctx.source.read(ctx.spark).persist()
        try:
            rows_in = raw.count()
            ctx.emit(event="read", rows_in=rows_in, topics=ctx.topics)
            ctx.step("change statistics")
            events = parse_events(raw, flattened_prefix=ctx.flattened_prefix)
            stats = ordered(change_stats(events, **options)).persist()
            stats.count()
        finally:
            raw.unpersist()
        try:
            if path:
                stats.write.mode("overwrite").parquet(path)
            result = {
                "rows_in": rows_in,
                "rows_out": stats.count(),
                "output_path": path,
                "totals": _totals(stats),
                "preview": output.preview(stats, ctx.preview_rows),
            }
        finally:
            stats.unpersist()
        return result

    def process(events: DataFrame, batch_id: int) -> dict[str, Any] | None:
        spark = events.sparkSession
        if any(done and version >= batch_id for version, done in output.list_versions(spark, path)):
            return None
        ctx.step(f"batch {batch_id}: change statistics", spark)
        rows_in = events.count()
        if rows_in == 0:
            return None
        previous = output.current_version(spark, path)
        merged = merge_stats(spark.read.parquet(previous) if previous else None, change_stats(events, **options))
        target = output.write_version(merged, path, batch_id)
        return {"rows_in": rows_in, "rows_out": spark.read.parquet(target).count(), "output_path": target}

    totals = run_stream(ctx, process)
    current = output.current_version(ctx.spark, path)
    if current is None:
        return {**totals, "rows_out": 0, "output_path": None, "totals": {}, "preview": {"columns": [], "rows": []}}
    stats = ordered(ctx.spark.read.parquet(current))
    return {
        **totals,
        "rows_out": stats.count(),
        "output_path": current,
        "totals": _totals(stats),
        "preview": output.preview(stats, ctx.preview_rows),
    }


# --- sql ------------------------------------------------------------------------------------------

_VIEW_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def view_name(topic: str) -> str:
    """``fulfillment.inventory.orders`` -> ``fulfillment_inventory_orders``."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", topic)
    return name if not name[:1].isdigit() else f"t_{name}"


def _views(args: Mapping[str, Any], topics: list[str]) -> dict[str, str]:
    """view name -> topic."""
    explicit = args.get("views") or {}
    if not isinstance(explicit, Mapping):
        raise InvalidArguments("`views` must map view names to topics")
    views = {}
    named = set()
    for name, topic in explicit.items():
        if not _VIEW_NAME.match(str(name)):
            raise InvalidArguments(f"view name {name!r} is not a SQL identifier")
        views[str(name)] = str(topic)
        named.add(str(topic))
    for topic in topics:
        if topic not in named:
            views.setdefault(view_name(topic), topic)
    return views


OUTPUT_FORMATS = ("parquet", "json", "csv", "orc")


def _validate_sql(args: dict[str, Any]) -> None:
    sql = args.get("sql")
    if not isinstance(sql, str) or not split_statements(sql):
        raise InvalidArguments("`sql` is required: the query to run over the topic views")
    if len(split_statements(sql)) > 1:
        raise sqlcheck.QueryRefused(f"the text holds {len(split_statements(sql))} statements separated by `;`")
    if args.get("output_format", "parquet") not in OUTPUT_FORMATS:
        raise InvalidArguments(f"`output_format` must be one of {', '.join(OUTPUT_FORMATS)}")
    _views(args, list(args.get("topics") or []))


def view_names(views: Mapping[str, str], topics: list[str]) -> list[str]:
    """Every name `register_views` may register for these views: a query may read these and nothing else."""
    names = [*views, *(f"{name}_latest" for name in views)]
    return names + ["cdc_events"] if views or topics else names


def register_views(ctx: JobContext, topics: list[str], sql: str | None = None) -> dict[str, str]:
    """Temp views: ``<view>`` (parsed events of a topic), ``<view>_latest`` (its latest state),
    ``cdc_events`` (all chosen topics). Reading is lazy: a topic is read only if a query uses it; the
    ``_latest`` and ``cdc_events`` views are only built when ``sql`` (if given) names them."""
    views = _views(ctx.args, topics)
    mentioned = (sql or "").lower()
    for name, topic in views.items():
        events = ctx.events(ctx.source.with_topics([topic]))
        events.createOrReplaceTempView(name)
        if sql is None or f"{name.lower()}_latest" in mentioned:
            latest_state(events, flattened_prefix=ctx.flattened_prefix).createOrReplaceTempView(f"{name}_latest")
    all_topics = sorted(set(views.values()) | set(topics))
    if all_topics and (sql is None or "cdc_events" in mentioned):
        ctx.events(ctx.source.with_topics(all_topics)).createOrReplaceTempView("cdc_events")
    return views


def run_sql(ctx: JobContext) -> dict[str, Any]:
    """One read-only query over the topic views (`sqlcheck`): refused before anything runs, otherwise its result
    is previewed and written to ``output_path`` if given."""
    args = ctx.args
    extra = [topic for topic in (args.get("views") or {}).values() if topic not in ctx.topics]
    if extra:
        ctx.topics = ctx.topics + ctx.source.with_topics(extra).resolve()
    allowed = view_names(_views(args, ctx.topics), ctx.topics)
    sqlcheck.lock_session(ctx.spark)
    sqlcheck.check_query(ctx.spark, args["sql"], allowed)
    views = register_views(ctx, ctx.topics, args["sql"])
    ctx.emit(event="views", views=views)
    result = ctx.spark.sql(args["sql"])  # a query: analysed here, run by what follows
    sqlcheck.check_analyzed(result, allowed)
    ctx.step("sql")
    result = result.persist()
    try:
        path = args.get("output_path")
        if path:
            result.write.mode("overwrite").format(args.get("output_format", "parquet")).save(path)
        return {"rows_out": result.count(), "output_path": path, "preview": output.preview(result, ctx.preview_rows)}
    finally:
        result.unpersist()


# --- script ---------------------------------------------------------------------------------------


def _validate_script(args: dict[str, Any]) -> None:
    path = args.get("script_path")
    if not path:
        raise InvalidArguments("`script_path` is required (the PySpark script to run)")
    if not os.path.isfile(path):
        raise InvalidArguments(f"script not found: {path}")
    if not isinstance(args.get("script_args", {}), Mapping):
        raise InvalidArguments("`script_args` must be a JSON object")


def run_script(ctx: JobContext) -> dict[str, Any]:
    """Run a user's PySpark file. Its globals: ``spark``, ``args`` (``script_args``), ``topics``,
    ``read_events(topics=None, streaming=False, **bounds)``, ``latest_state``, ``change_stats``,
    ``emit(**fields)`` (a progress line), ``F`` (pyspark.sql.functions). It may set ``result`` to a
    DataFrame (previewed, and written to ``output_path`` if given) or to a JSON-ready value."""
    from pyspark.sql import DataFrame as SparkFrame
    from pyspark.sql import functions

    args = ctx.args
    path = os.path.abspath(args["script_path"])

    def read_events(topics: list[str] | None = None, streaming: bool = False, **bounds: Any) -> DataFrame:
        base = dict(args)
        base.update(bounds)
        if topics is not None:
            base["topics"], base["topic_pattern"] = list(topics), None
        source = TopicSource.from_args(base)
        source.resolve()
        return ctx.events(source, streaming=streaming)

    namespace = {
        "spark": ctx.spark,
        "args": dict(args.get("script_args") or {}),
        "topics": list(ctx.topics),
        "read_events": read_events,
        "latest_state": latest_state,
        "change_stats": change_stats,
        "emit": lambda **fields: ctx.emit(event="script", **fields),
        "F": functions,
    }
    ctx.step("script")
    try:
        finished = runpy.run_path(path, init_globals=namespace, run_name="__cdcjob__")
    except (JobCancelled, KeyboardInterrupt):
        raise
    except SystemExit as error:
        if error.code in (None, 0):
            finished = {}
        else:
            raise JobError(f"script exited with status {error.code}") from error
    except BaseException as error:
        raise JobError(f"script failed: {_script_error(error, path)}") from error
    result = finished.get("result")
    if isinstance(result, SparkFrame):
        frame = result.persist()
        try:
            out = args.get("output_path")
            if out:
                frame.write.mode("overwrite").parquet(out)
            return {"rows_out": frame.count(), "output_path": out, "preview": output.preview(frame, ctx.preview_rows)}
        finally:
            frame.unpersist()
    return {"result": output.jsonable(result)} if result is not None else {}


def _script_error(error: BaseException, path: str) -> str:
    from sparkjobs.errors import describe

    line = None
    for frame in traceback.extract_tb(error.__traceback__):
        if os.path.abspath(frame.filename) == path:
            line = frame.lineno
    where = f" (line {line} of {os.path.basename(path)})" if line else ""
    print(f"script {path} raised:", file=sys.stderr)
    traceback.print_exception(error, file=sys.stderr)
    return describe(error) + where


TEMPLATES: dict[str, Template] = {
    "latest_state": Template("latest_state", run_latest_state, _validate_latest),
    "stats": Template("stats", run_stats, _validate_stats),
    "delta_sync": Template("delta_sync", run_delta_sync, _validate_delta_sync),
    "sql": Template("sql", run_sql, _validate_sql, reads_topics="optional"),
    "delta_query": Template("delta_query", run_delta_query, _validate_delta_query, reads_topics="optional"),
    "script": Template("script", run_script, _validate_script, reads_topics="optional"),
}

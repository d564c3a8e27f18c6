"""What a job prints for its launcher, and where streaming jobs keep their results.

Every line meant for the launcher is ``CDCJOB <one JSON object>`` on stdout, flushed at once; Spark's
own log goes to stderr. `Reporter` also appends the final line to a result file when one is given, so
the outcome survives even when the driver's stdout is cut short (a killed spark-submit JVM).

Streaming jobs write each result as a new *version* directory ``<output_path>/v-<batch id>`` and
delete all but the last two: a version is complete when Spark's ``_SUCCESS`` marker is in it, and the
highest complete version is the current result (`current_version`). A micro-batch replayed after a
crash finds its version already complete and skips it, so nothing is applied twice.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import sys
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PREFIX = "CDCJOB "
PREVIEW_ROWS = 100


def jsonable(value: Any) -> Any:
    """A JSON-ready copy of a Spark value (Row, datetime, Decimal, bytes, nested lists and maps)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    as_dict = getattr(value, "asDict", None)
    if callable(as_dict):
        return {key: jsonable(item) for key, item in as_dict().items()}
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    return str(value)


def preview(frame: DataFrame, limit: int = PREVIEW_ROWS) -> dict[str, Any]:
    """The first ``limit`` rows as ``{"columns": [...], "rows": [[...], ...]}``."""
    columns = list(frame.columns)
    rows = [[jsonable(row[i]) for i in range(len(columns))] for row in frame.limit(limit).collect()] if limit else []
    return {"columns": columns, "rows": rows}


class Reporter:
    """Writes ``CDCJOB`` lines; thread-safe (stage progress comes from a thread, batches from another)."""

    def __init__(self, stream: TextIO | None = None, result_file: str | None = None):
        self.stream = stream
        self.result_file = result_file
        self._lock = threading.Lock()
        self.final: dict[str, Any] | None = None

    def emit(self, **fields: Any) -> None:
        line = PREFIX + json.dumps(jsonable(fields), ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            stream = self.stream or sys.stdout
            stream.write(line + "\n")
            stream.flush()

    def finish(self, **fields: Any) -> None:
        """The final line (``status`` is ``succeeded``, ``failed`` or ``cancelled``)."""
        with self._lock:
            if self.final is not None:
                return
            self.final = jsonable(fields)
        if self.result_file:
            try:
                with open(self.result_file, "w", encoding="utf-8") as handle:
                    json.dump(self.final, handle, ensure_ascii=False)
            except OSError as error:
                print(f"could not write the result file {self.result_file}: {error}", file=sys.stderr)
        self.emit(**fields)


class StageProgress(threading.Thread):
    """Reports Spark's active stages (tasks done / total) as ``{"event": "stage", ...}`` lines."""

    def __init__(self, spark: SparkSession, reporter: Reporter, interval: float = 0.5):
        super().__init__(name="cdcjob-stage-progress", daemon=True)
        self.tracker = spark.sparkContext.statusTracker()
        self.reporter = reporter
        self.interval = interval
        self._stop_event = threading.Event()
        self._last: dict[int, tuple] = {}

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            try:
                self._poll()
            except Exception:  # noqa: BLE001 - the JVM is going away; progress is best effort
                return

    def _poll(self) -> None:
        active = set(self.tracker.getActiveStageIds())
        for stage_id in sorted(active):
            info = self.tracker.getStageInfo(stage_id)
            if info is None:
                continue
            state = (info.numTasks, info.numCompletedTasks, info.numActiveTasks, info.numFailedTasks)
            if self._last.get(stage_id) != state:
                self._last[stage_id] = state
                self.reporter.emit(
                    event="stage",
                    stage_id=stage_id,
                    name=info.name,
                    tasks=info.numTasks,
                    completed=info.numCompletedTasks,
                    active=info.numActiveTasks,
                    failed=info.numFailedTasks,
                )
        for stage_id in [stage for stage in self._last if stage not in active]:
            del self._last[stage_id]

    def stop(self) -> None:
        self._stop_event.set()


# --- versioned results (streaming) ----------------------------------------------------------------


def _hadoop_fs(spark: SparkSession, path: str):
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hadoop_path, jvm


VERSION_PREFIX = "v-"


def version_path(output_path: str, version: int) -> str:
    return f"{output_path.rstrip('/')}/{VERSION_PREFIX}{version:010d}"


def list_versions(spark: SparkSession, output_path: str) -> list[tuple[int, bool]]:
    """(version, complete) of every version directory under ``output_path``, oldest first."""
    fs, root, jvm = _hadoop_fs(spark, output_path)
    if not fs.exists(root):
        return []
    versions = []
    for status in fs.listStatus(root):
        name = status.getPath().getName()
        if status.isDirectory() and name.startswith(VERSION_PREFIX) and name[len(VERSION_PREFIX) :].isdigit():
            success = jvm.org.apache.hadoop.fs.Path(status.getPath(), "_SUCCESS")
            versions.append((int(name[len(VERSION_PREFIX) :]), bool(fs.exists(success))))
    return sorted(versions)


def current_version(spark: SparkSession, output_path: str) -> str | None:
    """The directory of the newest complete version, or None."""
    complete = [version for version, done in list_versions(spark, output_path) if done]
    return version_path(output_path, complete[-1]) if complete else None


def write_version(frame: DataFrame, output_path: str, version: int, keep: int = 2) -> str:
    """Write ``frame`` as version ``version`` (Parquet) and delete all but the newest ``keep`` versions."""
    spark = frame.sparkSession
    target = version_path(output_path, version)
    frame.write.mode("overwrite").parquet(target)
    versions = list_versions(spark, output_path)
    complete = [v for v, done in versions if done]
    doomed = [v for v, _ in versions if v < version and (v not in complete or v not in complete[-keep:])]
    fs, _, jvm = _hadoop_fs(spark, output_path)
    for old in doomed:
        fs.delete(jvm.org.apache.hadoop.fs.Path(version_path(output_path, old)), True)
    return target


def read_text(spark: SparkSession, path: str) -> str | None:
    """A small file's text through Hadoop's FileSystem (any scheme Spark can write to); None if absent."""
    fs, target, jvm = _hadoop_fs(spark, path)
    if not fs.exists(target):
        return None
    stream = fs.open(target)
    try:
        reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(stream, "UTF-8"))
        lines = []
        while (line := reader.readLine()) is not None:
            lines.append(line)
        return "\n".join(lines)
    finally:
        stream.close()


def write_text(spark: SparkSession, path: str, text: str) -> None:
    fs, target, _ = _hadoop_fs(spark, path)
    stream = fs.create(target, True)
    try:
        stream.write(bytearray(text.encode()))
    finally:
        stream.close()


STREAM_MARKER = "_stream_id"


def claim_output(spark: SparkSession, output_path: str, checkpoint_path: str) -> None:
    """Refuse an output path that holds another stream's results (a new checkpoint would start over at
    batch 0 and find those versions "already done"). The stream id is Spark's query id, kept in the
    checkpoint's ``metadata`` file across restarts."""
    from sparkjobs.errors import JobError

    metadata = read_text(spark, f"{checkpoint_path.rstrip('/')}/metadata")
    query_id = json.loads(metadata).get("id") if metadata else None
    owner = read_text(spark, f"{output_path.rstrip('/')}/{STREAM_MARKER}")
    has_results = bool(list_versions(spark, output_path))
    if has_results and (query_id is None or (owner is not None and owner.strip() != query_id)):
        raise JobError(
            f"output_path {output_path} holds the results of another stream; give an empty output_path, or the "
            "checkpoint_path that wrote them"
        )


def mark_output(spark: SparkSession, output_path: str, query_id: str) -> None:
    marker = f"{output_path.rstrip('/')}/{STREAM_MARKER}"
    if read_text(spark, marker) is None:
        write_text(spark, marker, query_id)


def wait_until(predicate, timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()

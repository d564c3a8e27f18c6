"""A Delta table's recent history read straight from its ``_delta_log`` folder: no JVM, no Spark, no Django.

A Delta table's log is a folder of commits, ``<version, 20 digits>.json``, each a file of JSON lines (one action a
line): ``commitInfo`` (timestamp, operation, operationMetrics, userMetadata), ``add``/``remove`` (data files, with
``stats`` holding ``numRecords``), ``txn`` (appId, version), ``metaData``, ``protocol``. Beside a commit Delta
writes ``<version>.crc``, the table's state at that version, which lists its files (``allFiles``) while they are
few.

`read_table` reads only the newest ``limit`` commits and at most ``max_bytes`` of them. The live row count is the
sum of ``numRecords`` over the files of the newest version (minus rows a deletion vector hides): from its ``.crc``;
without one, from the newest checkpoint and the commits after it, or from replaying every commit when the whole log
is JSON, each within ``max_bytes``; otherwise it is unknown (None). A checkpoint is classic
(``<version>.checkpoint.parquet``, or its parts) or V2 (``<version>.checkpoint.<uuid>.json`` or ``.parquet``, whose
``sidecar`` actions name Parquet files under ``_delta_log/_sidecars`` that hold its ``add`` actions); Parquet is read
with pyarrow. A table written in soft-delete mode counts its soft-deleted rows too.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

LOG_DIR = "_delta_log"
COMMIT_FILE = re.compile(r"^(\d{20})\.json$")
# a classic checkpoint: one file, or part `part` of `parts`
CHECKPOINT_FILE = re.compile(r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10}))?\.parquet$")
# a V2 checkpoint: one top-level file named with a UUID, its adds inline or in sidecar files
V2_CHECKPOINT_FILE = re.compile(r"^(\d{20})\.checkpoint\.[0-9a-fA-F-]{36}\.(json|parquet)$")
SIDECARS_DIR = "_sidecars"
DEFAULT_LIMIT = 20
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
# operationMetrics counting the rows a commit changed, by operation family (the first family present counts)
ROW_METRICS = (
    ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted"),  # MERGE
    ("numUpdatedRows", "numDeletedRows"),  # UPDATE, DELETE
    ("numOutputRows",),  # WRITE, STREAMING UPDATE, CREATE TABLE AS SELECT
)


class LogTooLarge(Exception):
    """The commits asked for exceed the byte budget."""


@dataclass(frozen=True)
class Commit:
    version: int
    timestamp_ms: int  # milliseconds since the epoch, as Delta's history gives it
    operation: str | None
    rows_affected: int | None
    metrics: dict[str, str] = field(default_factory=dict)
    user_metadata: Any = None  # the commit's userMetadata, decoded when it is JSON
    txn: tuple[str, int] | None = None  # Delta's (txnAppId, txnVersion) of the commit


@dataclass(frozen=True)
class TableLog:
    path: str
    version: int  # the newest version
    rows: int | None  # live rows at the newest version; None when the log cannot tell within its budget
    commits: list[Commit]  # newest first, at most `limit`
    older: int  # versions older than those in `commits`

    def last_user_metadata(self, key: str) -> tuple[Commit, Any] | None:
        """The newest commit (of those read) whose userMetadata is an object holding ``key``, with that value."""
        for commit in self.commits:
            if isinstance(commit.user_metadata, dict) and key in commit.user_metadata:
                return commit, commit.user_metadata[key]
        return None


def is_delta_table(path: str) -> bool:
    return bool(_versions(os.path.join(path, LOG_DIR)))


def _versions(log_dir: str) -> list[int]:
    try:
        names = os.listdir(log_dir)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(int(match.group(1)) for name in names if (match := COMMIT_FILE.match(name)))


def _commit_path(log_dir: str, version: int) -> str:
    return os.path.join(log_dir, f"{version:020d}.json")


def _read_budgeted(path: str, budget: list[int]) -> None:
    size = os.path.getsize(path)
    if size > budget[0]:
        raise LogTooLarge(path)
    budget[0] -= size


def _actions(path: str, budget: list[int]) -> list[dict[str, Any]]:
    _read_budgeted(path, budget)
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _rows_affected(metrics: dict[str, str]) -> int | None:
    for family in ROW_METRICS:
        present = [metrics[name] for name in family if name in metrics]
        if present:
            return sum(int(value) for value in present)
    return None


def _decoded(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _commit(version: int, actions: list[dict[str, Any]], modified_ms: int) -> Commit:
    info: dict[str, Any] = {}
    txn = None
    for action in actions:
        if "commitInfo" in action:
            info = action["commitInfo"] or {}
        elif "txn" in action:
            txn = (str(action["txn"].get("appId")), int(action["txn"].get("version")))
    metrics = {str(name): str(value) for name, value in (info.get("operationMetrics") or {}).items()}
    # the version's time as Delta's history and TIMESTAMP AS OF take it: the in-commit timestamp when the table
    # records one, else the commit file's modification time
    when = info.get("inCommitTimestamp") or modified_ms
    return Commit(version=version, timestamp_ms=int(when), operation=info.get("operation"),
                  rows_affected=_rows_affected(metrics), metrics=metrics,
                  user_metadata=_decoded(info.get("userMetadata")), txn=txn)


def _file_rows(add: dict[str, Any]) -> int | None:
    stats = _decoded(add.get("stats"))
    if not isinstance(stats, dict) or "numRecords" not in stats:
        return None
    hidden = (add.get("deletionVector") or {}).get("cardinality") or 0
    return int(stats["numRecords"]) - int(hidden)


def _sum_rows(files: list[dict[str, Any]]) -> int | None:
    total = 0
    for add in files:
        rows = _file_rows(add)
        if rows is None:
            return None
        total += rows
    return total


def _rows_from_checksum(log_dir: str, version: int, budget: list[int]) -> int | None:
    path = os.path.join(log_dir, f"{version:020d}.crc")
    try:
        [state] = _actions(path, budget)
    except (FileNotFoundError, ValueError, LogTooLarge):
        return None
    files = state.get("allFiles")
    return _sum_rows(files) if isinstance(files, list) else None


def _rows_from_replay(log_dir: str, versions: list[int], budget: list[int]) -> int | None:
    """Live rows from every commit since version 0, when they are all JSON files (none folded into a checkpoint
    and removed) and fit the budget."""
    if versions != list(range(versions[-1] + 1)):
        return None
    files: dict[tuple[str, str | None], dict[str, Any]] = {}
    _replay(log_dir, versions, budget, files)
    return _sum_rows(list(files.values()))


def _checkpoints(log_dir: str) -> dict[int, list[str]]:
    """Complete checkpoints: version -> the paths of a classic one's parts, or of a V2 one's top-level file."""
    parts: dict[tuple[int, int], list[str]] = {}
    complete: dict[int, list[str]] = {}
    for name in os.listdir(log_dir):
        match = CHECKPOINT_FILE.match(name)
        if match:
            version, count = int(match.group(1)), int(match.group(3) or 1)
            parts.setdefault((version, count), []).append(os.path.join(log_dir, name))
        elif V2_CHECKPOINT_FILE.match(name):
            complete[int(name[:20])] = [os.path.join(log_dir, name)]
    complete.update({version: sorted(paths) for (version, count), paths in parts.items() if len(paths) == count})
    return complete


def _checkpoint_adds(log_dir: str, path: str, budget: list[int]) -> list[dict[str, Any]]:
    """The `add` actions of one checkpoint file, with those of the sidecars a V2 checkpoint names."""
    import pyarrow.parquet as parquet

    if path.endswith(".json"):
        actions = _actions(path, budget)
    else:
        _read_budgeted(path, budget)
        names = set(parquet.read_schema(path).names)
        columns = [column for column in ("add", "sidecar") if column in names]
        table = parquet.read_table(path, columns=columns)
        actions = [{column: value} for column in columns for value in table.column(column).to_pylist() if value]
    adds = [action["add"] for action in actions if action.get("add")]
    for action in actions:
        if action.get("sidecar"):
            sidecar = os.path.join(log_dir, SIDECARS_DIR, os.path.basename(action["sidecar"]["path"]))
            _read_budgeted(sidecar, budget)
            adds += [add for add in parquet.read_table(sidecar, columns=["add"]).column("add").to_pylist() if add]
    return adds


def _rows_from_checkpoint(log_dir: str, versions: list[int], budget: list[int]) -> int | None:
    """Live rows from the newest checkpoint's files and the commits after it, all of which must be there."""
    checkpoints = _checkpoints(log_dir)
    if not checkpoints:
        return None
    version = max(checkpoints)
    after = [later for later in versions if later > version]
    if after != list(range(version + 1, versions[-1] + 1)):
        return None
    try:
        import pyarrow.parquet  # noqa: F401 - checkpoints are Parquet
    except ImportError:
        return None
    files: dict[tuple[str, str | None], dict[str, Any]] = {}
    for part in checkpoints[version]:
        for add in _checkpoint_adds(log_dir, part, budget):
            files[_file_id(add)] = add
    _replay(log_dir, after, budget, files)
    return _sum_rows(list(files.values()))


def _file_id(action: dict[str, Any]) -> tuple[str, str | None]:
    """What identifies a data file in the table's state: its path and its deletion vector, as Delta's protocol has
    it (a MERGE that marks rows removes the file with its old vector and adds it again with the new one)."""
    vector = action.get("deletionVector")
    if not vector:
        return action["path"], None
    return action["path"], f"{vector.get('storageType')}{vector.get('pathOrInlineDv')}@{vector.get('offset')}"


def _replay(log_dir: str, versions: list[int], budget: list[int],
            files: dict[tuple[str, str | None], dict[str, Any]]) -> None:
    for version in versions:
        for action in _actions(_commit_path(log_dir, version), budget):
            if "add" in action:
                files[_file_id(action["add"])] = action["add"]
            elif "remove" in action:
                files.pop(_file_id(action["remove"]), None)


def read_table(path: str, *, limit: int = DEFAULT_LIMIT, max_bytes: int = DEFAULT_MAX_BYTES) -> TableLog | None:
    """The table's newest ``limit`` commits and live rows; None when ``path`` holds no Delta table."""
    log_dir = os.path.join(path, LOG_DIR)
    versions = _versions(log_dir)
    if not versions:
        return None
    budget = [max_bytes]
    commits = []
    for version in reversed(versions[-limit:]):
        try:
            path_of = _commit_path(log_dir, version)
            modified_ms = int(os.stat(path_of).st_mtime_ns // 1_000_000)
            commits.append(_commit(version, _actions(path_of, budget), modified_ms))
        except LogTooLarge:
            break
        except FileNotFoundError:  # removed by log cleanup since the listing
            continue
    rows = _rows_from_checksum(log_dir, versions[-1], [max_bytes])
    for count in (_rows_from_checkpoint, _rows_from_replay):
        if rows is not None:
            break
        try:
            rows = count(log_dir, versions, [max_bytes])
        except (LogTooLarge, OSError, ValueError):  # a file gone since the listing, or unreadable
            rows = None
    oldest_read = commits[-1].version if commits else versions[-1] + 1
    older = sum(1 for version in versions if version < oldest_read)
    return TableLog(path=path, version=versions[-1], rows=rows, commits=commits, older=older)

"""The tables a Delta sync job keeps, as its tables page and the API show them (docs/spark.md, "The Delta sync page").

The places are the job's: ``output_path`` and ``checkpoint_path`` of its newest run (as that run was launched and
validated), or of the run it would get now when it never ran; nothing a request says changes them. Each table is a
folder of ``output_path`` holding a Delta log, read by `sparkjobs.delta_log` in this process (its newest commits,
within a byte budget: no Spark). Its topic, batch and Kafka offsets come from its commits' userMetadata; its lag is
the topic's end offsets (asked of Kafka, within a short timeout) minus the stream's position: the checkpoint's newest
committed batch, or the last offset merged plus one when that is further.

A query of the tables (`launch_query`) is a run of the `delta_query` template under the job, started by the
ordinary launcher: it runs as a Spark job, never in this process.
"""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings

from sparkjobs import delta_log
from sparkjobs.delta_sync import table_name
from sparkjobs.kafka_client import end_offsets_of
from web.sparkjobs.arguments import run_arguments
from web.sparkjobs.models import JobDefinition, JobRun, Mode, RunTemplate, Template

HISTORY = 20
MAX_TABLES = 100
END_OFFSETS_TIMEOUT_S = 3.0
MAX_SQL = 20_000


class NotADeltaSync(ValueError):
    """The job is not a Delta sync, or its tables cannot be read from here."""


def sync_arguments(definition: JobDefinition) -> dict[str, Any]:
    if definition.template != Template.DELTA_SYNC:
        raise NotADeltaSync(f"{definition.name} is not a Delta sync job: only those keep Delta tables")
    run = definition.runs.filter(template=Template.DELTA_SYNC).order_by("-id").first()
    return dict(run.arguments) if run is not None and run.arguments else run_arguments(definition, run_id=0)


def local_folder(path: Any) -> str | None:
    """A path this process can read: a plain one or a file: URL; None for other file systems."""
    if not isinstance(path, str) or not path:
        return None
    if path.startswith("file:"):
        return "/" + path[len("file:"):].lstrip("/")
    return None if "://" in path else path


def table_folders(output: str, topics: list[str]) -> dict[str, str]:
    """name -> folder: the job's topics' tables and any other Delta table directly under ``output``. A symbolic
    link is no table: what the job's user links there is not read with the platform's rights."""
    folders = {table_name(topic): os.path.join(output, table_name(topic)) for topic in topics}
    try:
        with os.scandir(output) as entries:
            for entry in entries:
                if len(folders) >= MAX_TABLES:
                    break
                if entry.is_dir(follow_symlinks=False) and entry.name not in folders \
                        and delta_log.is_delta_table(entry.path):
                    folders[entry.name] = entry.path
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        pass
    return {name: folder for name, folder in sorted(folders.items()) if not os.path.islink(folder)}


def _lag(ends: dict[int, int] | None, merged: dict[int, int], committed: dict[int, int]) -> dict[str, Any] | None:
    if ends is None:
        return None
    partitions = []
    for partition, end in sorted(ends.items()):
        position = max(committed.get(partition, 0), merged[partition] + 1 if partition in merged else 0)
        partitions.append({"partition": partition, "end_offset": end, "last_merged": merged.get(partition),
                           "position": position, "lag": max(0, end - position)})
    return {"total": sum(item["lag"] for item in partitions), "partitions": partitions}


def _table(name: str, folder: str, topic: str | None) -> dict[str, Any]:
    log = delta_log.read_table(folder, limit=HISTORY)
    if log is None:
        return {"name": name, "topic": topic, "path": folder, "exists": False, "rows": None, "version": None,
                "versions": [], "older_versions": 0, "last_position": None}
    found = log.last_user_metadata("offsets")
    position = None
    if found is not None:
        commit, offsets = found
        metadata = commit.user_metadata
        topic = topic or metadata.get("topic")
        position = {"version": commit.version, "batch_id": metadata.get("batch_id"),
                    "offsets": {int(p): int(o) for p, o in (offsets or {}).items()}}
    for commit in log.commits:
        if topic is None and isinstance(commit.user_metadata, dict):
            topic = commit.user_metadata.get("topic")
    versions = [{"version": commit.version, "timestamp_ms": commit.timestamp_ms, "operation": commit.operation,
                 "rows_affected": commit.rows_affected} for commit in log.commits]
    return {"name": name, "topic": topic, "path": folder, "exists": True, "rows": log.rows, "version": log.version,
            "versions": versions, "older_versions": log.older, "last_position": position}


def synced_tables(definition: JobDefinition) -> dict[str, Any]:
    """The job's tables with rows, versions, last position and lag; raises NotADeltaSync."""
    from sparkjobs.stream_checkpoint import committed_offsets

    args = sync_arguments(definition)
    output = local_folder(args.get("output_path"))
    if output is None:
        raise NotADeltaSync(f"the tables of {definition.name} are at {args.get('output_path')!r}, which this page "
                            "cannot read: it reads folders of the platform's machine only")
    topics = [str(topic) for topic in args.get("topics") or definition.topics or []]
    by_name = {table_name(topic): topic for topic in topics}
    tables = [_table(name, folder, by_name.get(name)) for name, folder in table_folders(output, topics).items()]
    checkpoint = local_folder(args.get("checkpoint_path"))
    committed = committed_offsets(checkpoint) if checkpoint else {}
    named = sorted({table["topic"] for table in tables if table["topic"]})
    # the job's own credentials, sent only to the job's own Kafka
    ends, problem = end_offsets_of(str(args.get("bootstrap_servers") or settings.KAFKA_BOOTSTRAP_SERVERS), named,
                                   args.get("kafka_options") or {}, END_OFFSETS_TIMEOUT_S)
    for table in tables:
        merged = (table["last_position"] or {}).get("offsets") or {}
        table["lag"] = _lag(ends.get(table["topic"]), merged, committed.get(table["topic"], {}))
    return {"job": definition.name, "output_path": args.get("output_path"), "tables": tables,
            "lag_problem": problem}


def query_tables(definition: JobDefinition) -> dict[str, str]:
    """name -> path of each table a query of the job may read (the ones that exist)."""
    args = sync_arguments(definition)
    output = local_folder(args.get("output_path"))
    if output is None:
        raise NotADeltaSync(f"the tables of {definition.name} are not on a file system this platform reads")
    topics = [str(topic) for topic in args.get("topics") or definition.topics or []]
    return {name: folder for name, folder in table_folders(output, topics).items()
            if delta_log.is_delta_table(folder)}


def query_arguments(definition: JobDefinition, sql: str) -> dict[str, Any]:
    """The arguments of a `delta_query` run over the job's tables; raises NotADeltaSync or ValueError."""
    from sparkjobs.errors import InvalidArguments
    from sparkjobs.templates import TEMPLATES

    if not isinstance(sql, str) or not sql.strip():
        raise ValueError("the query to run is missing")
    if len(sql) > MAX_SQL:
        raise ValueError(f"the query is longer than {MAX_SQL} characters")
    tables = query_tables(definition)
    if not tables:
        raise NotADeltaSync(f"{definition.name} has no table yet: run the sync first")
    args = {"tables": tables, "sql": sql}
    try:
        TEMPLATES[RunTemplate.DELTA_QUERY].validate(args)
    except InvalidArguments as error:
        raise ValueError(str(error)) from None
    return args


def launch_query(definition: JobDefinition, sql: str, user, source: str) -> JobRun:
    from web.sparkjobs import services

    return services.launch(definition, user, source=source, template=RunTemplate.DELTA_QUERY, mode=Mode.BATCH,
                           arguments=query_arguments(definition, sql))

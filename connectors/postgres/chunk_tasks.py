"""PostgreSQL snapshot chunks read and committed by a separate task (a Celery task on the `snapshot` queue, or a
thread of a resumed snapshot whose earlier run dispatched chunks): the core's self-committing protocol
(connectors.core.snapshot.self_committing: own transactional id, chunk marker) around a PostgreSQL read.

Which snapshot a task reads in (its task's `read_at`, a ReadPoint):

- **An exported snapshot** (the plan was made by the running pipeline): the task imports it in its own REPEATABLE
  READ transaction (`SET TRANSACTION SNAPSHOT`), so it reads exactly what the pipeline's threads would. The export
  lives as long as the pipeline's replication connection, which stays idle for the whole snapshot. When the
  import fails (the pipeline died or restarted, the connection dropped), the task fails with ExportedSnapshotGone
  and reads nothing: reading a fresh snapshot instead would put rows of a later state under a snapshot that
  promised the consistent point's, and a task of a dead pipeline could write a snapshot that was given up. The
  pipeline (alive: it fails its snapshot and starts again; dead: its successor) resumes the plan.
  A resumed plan's export (a temporary slot's, PgSnapshotReader.resume) is imported the same way; the task then
  reports where it read (`where_read`) for the stream's filter.
- **No exported snapshot** (a resumed plan that could not export one): the task reads in a fresh REPEATABLE READ
  transaction, as the resumed snapshot's own threads do, once it has checked that the slot is still at the plan's
  consistent point (not acknowledged, not recreated): otherwise the snapshot the task belongs to is over, and it
  writes nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from connectors import ConnectorError
from connectors.core.snapshot.executors import ChunkResult, SnapshotContext, log_read
from connectors.core.snapshot.self_committing import (
    SelfCommittingThreadExecutor,
    commit_chunk_once,
    driver_chunk_error_retriable,
    result_json,
)
from connectors.kafka.topics import TopicAdmin
from connectors.postgres.config import PostgresConfig
from connectors.postgres.events import PgEventBuilder
from connectors.postgres.pgoutput import lsn_from_text
from connectors.postgres.snapshot import PgChunkTask, PgSnapshotReader


class SnapshotSuperseded(ConnectorError):
    """A resumed snapshot's chunk task found the slot no longer at the snapshot's consistent point: the snapshot is
    over (streaming acknowledged past it, or a new snapshot recreated the slot); the task writes nothing."""


@dataclass(frozen=True)
class ReadTarget:
    """The database a chunk task reads: what a PgSnapshotReader needs of its partition when it creates no slot."""

    config: PostgresConfig
    dsn: str


def slot_still_at(conn, slot_name: str, lsn: int) -> None:
    """Raises SnapshotSuperseded unless `slot_name` exists with its confirmed flush LSN at `lsn`."""
    row = conn.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
                       (slot_name,)).fetchone()
    found = lsn_from_text(row[0]) if row and row[0] else None
    if found != lsn:
        where = "does not exist" if row is None else f"is at LSN {found}"
        raise SnapshotSuperseded(f"replication slot {slot_name!r} {where}, not at this snapshot's consistent point "
                                 f"(LSN {lsn}): the snapshot is over; the chunk is not read")


def read_task_chunk(config: PostgresConfig, task: PgChunkTask, builder: PgEventBuilder,
                    stop: threading.Event | None = None) -> tuple[list, int, dict | None]:
    """The chunk's messages, row count and where it was read (PgSnapshotReader.where_read), read in the task's
    exported snapshot or (a resumed snapshot that could not export one) a fresh one."""
    point = task.read_at
    reader = PgSnapshotReader(ReadTarget(config, config.dsn()), None)
    reader.snapshot_name, reader.lsn, reader.view_lsn = point.snapshot, point.lsn, point.view_lsn
    try:
        if point.snapshot is None:
            with psycopg.connect(reader.partition.dsn, autocommit=True) as conn:
                slot_still_at(conn, config.slot_name, point.lsn)
        messages, rows = reader.read_chunk(builder, task.chunk, point, task.filter, task.mark_last, stop)
        return messages, rows, reader.where_read(task.chunk)
    finally:
        reader.close()


def run_chunk_task(config: PostgresConfig, bootstrap_servers: str, task: PgChunkTask, builder: PgEventBuilder, *,
                   stop: threading.Event | None = None, topic_admin: TopicAdmin | None = None) -> ChunkResult:
    """Reads one chunk and commits its events with its chunk marker under `task.transactional_id` (the import or
    the slot check happen after earlier attempts are fenced and only if none committed: a chunk already in Kafka
    is never refused because its snapshot is gone)."""
    started = time.monotonic()

    def read() -> tuple[list, int, dict | None]:
        messages, rows, where = read_task_chunk(config, task, builder, stop)
        point = task.read_at
        log_read(task, rows, time.monotonic() - started,
                 " (in the resumed snapshot's export)" if point.view_lsn and point.snapshot
                 else " (in the exported snapshot)" if point.snapshot else " (in a new snapshot: resumed)")
        return messages, rows, where

    return commit_chunk_once(config, task.partition, bootstrap_servers, task, read, topic_admin=topic_admin)


def run_chunk_task_json(config: PostgresConfig, bootstrap_servers: str, task_json: str,
                        new_builder: Callable[[], PgEventBuilder], **kwargs: Any) -> dict:
    """`run_chunk_task` with JSON in and out and a builder of its own: the body of a Celery chunk task."""
    builder = new_builder()
    try:
        return result_json(run_chunk_task(config, bootstrap_servers, PgChunkTask.from_json(task_json), builder,
                                          **kwargs))
    finally:
        builder.close()


def chunk_error_retriable(error: BaseException) -> bool:
    """Whether sending a failed chunk task again can succeed (ExportedSnapshotGone and SnapshotSuperseded are not
    retriable; a lost connection is: the exported snapshot, if any, is still there to import)."""
    return driver_chunk_error_retriable(error, psycopg.OperationalError, psycopg.Error)


def self_committing_executor(context: SnapshotContext) -> SelfCommittingThreadExecutor:
    """Threads of the pipeline that commit like chunk tasks, for a snapshot whose chunks went to tasks before."""
    topic_admin = TopicAdmin(context.bootstrap_servers)

    def run(task: PgChunkTask, builder: PgEventBuilder) -> ChunkResult:
        return run_chunk_task(context.config, context.bootstrap_servers, task, builder, stop=context.stop,
                              topic_admin=topic_admin)

    return SelfCommittingThreadExecutor(context, run)

"""MySQL/MariaDB snapshot chunks read and committed by a separate task (a Celery task on the `snapshot` queue, or a
thread of a resumed snapshot whose earlier run dispatched chunks): the core's self-committing protocol
(connectors.core.snapshot.self_committing) around a read in a view of the task's own.

MariaDB cannot hand the pipeline's read view (at the stream's start P0) to another connection, so a task opens its
own `START TRANSACTION WITH CONSISTENT SNAPSHOT` at a later position P_k and its chunk's marker keeps P_k and the
key it read by; the coordinator keeps them in its progress, and the stream from P0 drops every change before P_k
of a key in the chunk's range (connectors/mysql/overlap.py). That needs the stream to compare keys exactly as the
server does, so only chunks of integer keys go to tasks (`RoutedChunkExecutor`); the others are read in the
pipeline's own view, as when the pipeline reads every chunk.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pymysql

from connectors import ConnectorError
from connectors.core.snapshot.executors import ChunkExecutor, ChunkResult, ChunkTask, SnapshotContext, log_read
from connectors.core.snapshot.self_committing import (
    SelfCommittingThreadExecutor,
    commit_chunk_once,
    driver_chunk_error_retriable,
    result_json,
)
from connectors.kafka.topics import TopicAdmin
from connectors.mysql.config import MySqlConfig
from connectors.mysql.snapshot_reader import MySqlSnapshotReader


class KeyNotComparable(ConnectorError):
    """A chunk task's table no longer has an integer key (DDL since the plan): its chunk cannot be filtered."""


def read_in_own_view(config: MySqlConfig, task: ChunkTask, builder, stop: threading.Event | None = None
                     ) -> tuple[list, int, dict]:
    """The chunk's messages, row count and where it was read ({file, pos, gtids, key}), in a new read view."""
    reader = MySqlSnapshotReader(config)
    try:
        key = reader.comparable_key(task.chunk.namespace)  # opens the view first: the schema is the view's
        if not key or task.chunk.lower is None:
            raise KeyNotComparable(f"{task.chunk.label}: the table's chunk key is not (or no longer) made of integer "
                                   "NOT NULL columns; its chunks cannot be read in views of their own")
        messages, rows = reader.read_chunk(builder, task.chunk, task.read_at, task.filter, False, stop)
        return messages, rows, reader.where_read(task.chunk)  # a view of its own is never at the stream's start
    finally:
        reader.close()


def run_chunk_task(config: MySqlConfig, bootstrap_servers: str, task: ChunkTask, builder, *,
                   stop: threading.Event | None = None, topic_admin: TopicAdmin | None = None) -> ChunkResult:
    """Reads one chunk in a view of its own and commits its events with its chunk marker (which keeps the view's
    position) under `task.transactional_id`; the view opens after earlier attempts are fenced and only if none
    committed."""
    started = time.monotonic()

    def read() -> tuple[list, int, dict]:
        messages, rows, where = read_in_own_view(config, task, builder, stop)
        log_read(task, rows, time.monotonic() - started, f" (in a view of its own at {where['file']}:{where['pos']})")
        return messages, rows, where

    return commit_chunk_once(config, task.partition, bootstrap_servers, task, read, topic_admin=topic_admin)


def run_chunk_task_json(config: MySqlConfig, bootstrap_servers: str, task_json: str, new_builder: Callable[[], Any],
                        **kwargs: Any) -> dict:
    """`run_chunk_task` with JSON in and out: the body of a Celery chunk task."""
    return result_json(run_chunk_task(config, bootstrap_servers, ChunkTask.from_json(task_json), new_builder(),
                                      **kwargs))


def chunk_error_retriable(error: BaseException) -> bool:
    """Whether sending a failed chunk task again can succeed."""
    return driver_chunk_error_retriable(error, pymysql.err.OperationalError, pymysql.err.MySQLError)


class RoutedChunkExecutor:
    """Chunks of integer keys to `elsewhere` (tasks reading in views of their own), the others to one thread of the
    pipeline that reads them in the pipeline's view and commits like a task (own transactional id and marker,
    since the snapshot's chunks are fenced that way from now on)."""

    commits_itself = True

    def __init__(self, context: SnapshotContext, elsewhere: ChunkExecutor):
        self.context, self.elsewhere = context, elsewhere
        self.own_view = SelfCommittingThreadExecutor(context, self._read_in_pipeline_view, threads=1)
        self.capacity = elsewhere.capacity + self.own_view.capacity
        self._comparable: dict[str, bool] = {}
        self._topic_admin = TopicAdmin(context.bootstrap_servers)

    def goes_elsewhere(self, task: ChunkTask) -> bool:
        namespace = task.chunk.namespace
        if namespace not in self._comparable:
            self._comparable[namespace] = bool(self.context.reader.comparable_key(namespace))
        return self._comparable[namespace] and task.chunk.lower is not None

    def _read_in_pipeline_view(self, task: ChunkTask, builder) -> ChunkResult:
        context = self.context

        def read() -> tuple[list, int]:
            started = time.monotonic()
            messages, rows = context.reader.read_chunk(builder, task.chunk, task.read_at, task.filter, False,
                                                       context.stop)
            log_read(task, rows, time.monotonic() - started, " (in the pipeline's view)")
            return messages, rows

        return commit_chunk_once(context.config, task.partition, context.bootstrap_servers, task, read,
                                 topic_admin=self._topic_admin)

    def submit(self, task: ChunkTask) -> Future[ChunkResult]:
        return (self.elsewhere if self.goes_elsewhere(task) else self.own_view).submit(task)

    def shutdown(self, cancel_pending: bool = True) -> None:
        try:
            self.elsewhere.shutdown(cancel_pending)
        finally:
            self.own_view.shutdown(cancel_pending)


def routed_executor(context: SnapshotContext, elsewhere: ChunkExecutor) -> RoutedChunkExecutor:
    return RoutedChunkExecutor(context, elsewhere)


def self_committing_executor(context: SnapshotContext) -> RoutedChunkExecutor:
    """For a snapshot whose chunks went to tasks before: threads that read integer-key chunks in views of their
    own like tasks do, the others in the pipeline's view, all committing like tasks."""
    topic_admin = TopicAdmin(context.bootstrap_servers)

    def run(task: ChunkTask, builder) -> ChunkResult:
        return run_chunk_task(context.config, context.bootstrap_servers, task, builder, stop=context.stop,
                              topic_admin=topic_admin)

    return RoutedChunkExecutor(context, SelfCommittingThreadExecutor(context, run))

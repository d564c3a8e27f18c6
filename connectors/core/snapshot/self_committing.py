"""Chunks committed by the worker that read them (a Celery task, another process, a thread of a resumed snapshot
whose earlier run dispatched chunks): the chunk's events and its marker in one transaction of the chunk's own
transactional id `<connector>.<partition>.chunk-<n>` (markers.py has the exactly-once argument).

Every source shares the protocol; a source gives only the read (`read() -> (messages, rows)`, or
`(messages, rows, read_details)` when the chunk's marker must keep where it was read, as MySQL's own-view chunks
do); it runs while the earlier attempts are fenced and the markers looked up, and is committed only when none of
them committed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from connectors import ConnectorError
from connectors.core.allocator import keep_freed_memory
from connectors.core.collector import batch_collection
from connectors.core.snapshot.executors import (
    ChunkInterrupted,
    ChunkResult,
    ChunkTask,
    SnapshotContext,
    ThreadPoolChunkExecutor,
)
from connectors.core.snapshot.markers import COMPLETED, ChunkMarkers
from connectors.core.source import EventBuilder
from connectors.kafka.errors import SinkFencedError
from connectors.kafka.sink import TransactionalSink
from connectors.kafka.topics import TopicAdmin, TopicSpec, offsets_topic_spec

log = logging.getLogger(__name__)

# A fresh transactional id per chunk means a fresh producer per chunk: with librdkafka's default backoffs its
# init_transactions() often waits ~500 ms for the coordinator; short backoffs bring that to ~20-50 ms.
CHUNK_PRODUCER_CONFIG = {"retry.backoff.ms": 20, "reconnect.backoff.ms": 10}


def topic_spec_for(config: Any) -> Callable[[str], TopicSpec]:
    """How a chunk's producer creates a missing event topic (as the pipeline does: topic.creation.*)."""

    def spec(name: str) -> TopicSpec:
        settings = {"cleanup.policy": config.topic_creation_cleanup_policy.value}
        if config.topic_creation_max_message_bytes > 0:
            settings["max.message.bytes"] = str(config.topic_creation_max_message_bytes)
        return TopicSpec(name, config.topic_creation_partitions, config.topic_creation_replication_factor, settings)

    return spec


def commit_chunk_once(config: Any, partition: str, bootstrap_servers: str, task: ChunkTask,
                      read: Callable[[], tuple], *, topic_admin: TopicAdmin | None = None) -> ChunkResult:
    """Fences earlier attempts at `task`'s chunk, returns `already_committed` when one of them committed it (or the
    snapshot completed), else commits `read()`'s messages with the chunk's marker in one transaction.

    Safe to run again, concurrently or after a crash: read_committed consumers see the chunk's events once.
    """
    keep_freed_memory()  # a chunk's memory serves the next one (core.allocator)
    started = time.monotonic()
    topic_admin = topic_admin or TopicAdmin(bootstrap_servers)
    markers = ChunkMarkers(bootstrap_servers, config.offset_storage_topic, admin=topic_admin.admin)
    topic_admin.ensure([markers.spec])
    new_topic = topic_spec_for(config)
    sink = TransactionalSink(
        bootstrap_servers, config.name, f"{partition}.chunk-{task.chunk.number}",
        offsets_topic=offsets_topic_spec(config.offset_storage_topic, config.offset_storage_partitions),
        errors_topic=config.errors_topic_name,
        new_topic=lambda name: markers.spec if name == markers.topic else new_topic(name),
        too_large=config.message_too_large_policy.value,
        producer_config={**CHUNK_PRODUCER_CONFIG, "message.max.bytes": config.producer_max_request_size},
        topic_admin=topic_admin,
    )
    # After a commit with an unknown outcome the sink fences its producer, then the chunk's marker tells.
    sink.commit_check = lambda _batch: task.chunk.number in markers.load(config.name, partition, task.snapshot_id)

    def fence_and_look() -> dict[int, dict]:
        sink.open()  # fences any earlier attempt at this chunk: none can commit after this
        return markers.load(config.name, partition, task.snapshot_id)

    # The read is the chunk's CPU; fencing and the marker look-up are Kafka round trips (~30-60 ms): they go on
    # meanwhile. Reading needs no fence, only the commit does. What an earlier attempt made unnecessary (a rare
    # redelivery) is dropped, and so is a read that failed: the chunk was committed, e.g. by an attempt that could
    # still read in a snapshot that is gone now.
    with batch_collection(), ThreadPoolExecutor(1, thread_name_prefix="chunk-fence") as helper:
        looked_up = helper.submit(fence_and_look)
        try:
            try:
                messages, rows, *details = read()
                read_error = None
            except Exception as error:  # noqa: BLE001 - raised below unless the chunk is committed already
                read_error = error
            found = looked_up.result()  # the sink is opened (or failed to) before it is used or closed
            existing = found.get(task.chunk.number)
            if existing is None and COMPLETED in found:
                existing = {"rows": 0}  # a late duplicate: the snapshot completed long ago
            if existing is not None:
                log.info("snapshot %s: chunk %d (%s) was already committed", task.snapshot_id, task.chunk.number,
                         task.chunk.label)
                return ChunkResult(task, int(existing.get("rows") or 0), None, committed=True,
                                   already_committed=True, seconds=time.monotonic() - started,
                                   read=existing.get("read"))
            if read_error is not None:
                raise read_error
            details = details[0] if details else None
            messages.append(markers.message(config.name, partition, task.snapshot_id, task.chunk.number, rows,
                                            details))
            sink.write_batch(messages)
        finally:
            wait([looked_up])
            sink.close()
    return ChunkResult(task, rows, None, committed=True, seconds=time.monotonic() - started, read=details)


def driver_chunk_error_retriable(error: BaseException, lost_connection: type[BaseException],
                                 driver_error: type[BaseException]) -> bool:
    """Whether sending a failed chunk task of a SQL source again can succeed, given its driver's error classes."""
    if isinstance(error, SinkFencedError):
        return True  # another attempt at the same chunk took over; the next one checks its marker
    if isinstance(error, ConnectorError):
        return error.retriable
    if isinstance(error, lost_connection):
        return True  # a connection lost or refused
    if isinstance(error, driver_error):
        return False  # a refused query will be refused again
    return True  # Kafka, a worker that died: reading a chunk again is harmless


def result_json(result: ChunkResult) -> dict:
    """A self-committed chunk's result as a task queue carries it back (executors.result_from_json reads it)."""
    value = {"rows": result.rows, "already_committed": result.already_committed, "seconds": result.seconds}
    if result.read is not None:
        value["read"] = result.read
    return value


class SelfCommittingThreadExecutor(ThreadPoolChunkExecutor):
    """Threads of the pipeline's process that commit like remote workers (own transactional id + chunk marker).

    Used when resuming a snapshot whose earlier run dispatched chunks to other workers: a task of that run may
    still be alive, and only a chunk's own transactional id fences it. `run_task(task, builder)` is the source's
    self-committing chunk task.
    """

    commits_itself = True

    def __init__(self, context: SnapshotContext, run_task: Callable[[ChunkTask, EventBuilder], ChunkResult],
                 threads: int | None = None):
        super().__init__(context, threads)
        self.run_task = run_task

    def _run(self, task: ChunkTask) -> ChunkResult:
        if self.context.stop.is_set():
            raise ChunkInterrupted(task.chunk.label)
        result = self.run_task(task, self.builder())
        if self.context.metrics is not None and not result.already_committed:
            self.context.metrics.record_chunk_read()
        return result

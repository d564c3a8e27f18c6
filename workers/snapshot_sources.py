"""What a snapshot worker needs to run one source's chunk tasks (workers/snapshots.py's `read_chunk`): the
connector's engine configuration (credentials decrypted in memory, never logged) and the source's connections,
cached per connector version and partition in the worker process, plus how that source classifies a failure.

- MongoDB: the replica set (discovered again, so no host list travels through the broker) and its client.
- PostgreSQL: the configuration; each task opens its own sessions (it imports the snapshot's exported snapshot,
  connectors/postgres/chunk_tasks.py).
- MySQL/MariaDB: the configuration; each task opens its own read view (connectors/mysql/chunk_tasks.py).
"""

from __future__ import annotations

import threading
from typing import Protocol

from django.conf import settings

from connectors import ConnectorError
from connectors.core.snapshot.executors import ChunkTaskFailed
from connectors.kafka.topics import TopicAdmin
from connectors.mongodb.client import open_client
from connectors.mongodb.snapshots.executors import run_chunk_task_json as run_mongo_chunk
from connectors.mongodb.snapshots.reader import chunk_error_retriable as mongo_error_retriable
from connectors.mongodb.topology import partitions
from connectors.mysql import chunk_tasks as mysql_chunks
from connectors.mysql.source import ServerPartition, ServerSource
from connectors.postgres import chunk_tasks as pg_chunks
from connectors.postgres.source import Database, SlotSource
from web.connectors.definitions import engine_config
from web.connectors.models import Connector, SourceKind


class ChunkSource(Protocol):
    unit: str  # what its chunks hold, for the log
    def run(self, task_json: str) -> dict: ...

    def retriable(self, error: BaseException) -> bool: ...

    def close(self) -> None: ...


class MongoChunkSource:
    unit = "documents"

    def __init__(self, config, partition: str):
        matches = [rs for rs in partitions(config) if rs.name == partition]
        if not matches:
            raise ChunkTaskFailed(f"replica set {partition!r} is no longer part of the deployment", retriable=False)
        self.config, self.replica_set = config, matches[0]
        self.client = open_client(self.replica_set.client_options)  # thread-safe: shared by the worker's tasks
        self.topic_admin = TopicAdmin(settings.KAFKA_BOOTSTRAP_SERVERS)

    def run(self, task_json: str) -> dict:
        return run_mongo_chunk(self.config, self.replica_set, settings.KAFKA_BOOTSTRAP_SERVERS, task_json,
                               client=self.client, topic_admin=self.topic_admin)

    def retriable(self, error: BaseException) -> bool:
        return mongo_error_retriable(error, remote=True)

    def close(self) -> None:
        self.client.close()


class PostgresChunkSource:
    unit = "rows"

    def __init__(self, config, partition: str):
        if partition != config.dbname:
            raise ChunkTaskFailed(f"the connector now reads database {config.dbname!r}, not {partition!r}",
                                  retriable=False)
        self.config = config
        self.new_builder = SlotSource(config, Database(partition)).event_builder
        self.topic_admin = TopicAdmin(settings.KAFKA_BOOTSTRAP_SERVERS)

    def run(self, task_json: str) -> dict:
        return pg_chunks.run_chunk_task_json(self.config, settings.KAFKA_BOOTSTRAP_SERVERS, task_json,
                                             self.new_builder, topic_admin=self.topic_admin)

    def retriable(self, error: BaseException) -> bool:
        return pg_chunks.chunk_error_retriable(error)

    def close(self) -> None:
        pass  # every task closes its own sessions


class MySqlChunkSource:
    unit = "rows"

    def __init__(self, config, partition: str):
        if partition != config.topic_prefix:
            raise ChunkTaskFailed(f"the connector's server is now named {config.topic_prefix!r}, not {partition!r}",
                                  retriable=False)
        self.config = config
        self.new_builder = ServerSource(config, ServerPartition(partition)).event_builder
        self.topic_admin = TopicAdmin(settings.KAFKA_BOOTSTRAP_SERVERS)

    def run(self, task_json: str) -> dict:
        return mysql_chunks.run_chunk_task_json(self.config, settings.KAFKA_BOOTSTRAP_SERVERS, task_json,
                                                self.new_builder, topic_admin=self.topic_admin)

    def retriable(self, error: BaseException) -> bool:
        return mysql_chunks.chunk_error_retriable(error)

    def close(self) -> None:
        pass  # every task closes its own read view


CHUNK_SOURCES = {SourceKind.MONGODB: MongoChunkSource, SourceKind.POSTGRES: PostgresChunkSource,
                 SourceKind.MYSQL: MySqlChunkSource, SourceKind.MARIADB: MySqlChunkSource}

_sources: dict[tuple, ChunkSource] = {}
_sources_lock = threading.Lock()


def chunk_source(connector_name: str, partition: str) -> tuple[tuple, ChunkSource]:
    """(cache key, the source) for a chunk task of `connector_name`'s `partition`."""
    connector = Connector.objects.filter(name=connector_name).first()
    if connector is None:
        raise ChunkTaskFailed(f"connector {connector_name!r} no longer exists", retriable=False)
    kind = CHUNK_SOURCES.get(connector.source)
    if kind is None:
        raise ChunkTaskFailed(f"{connector.source} snapshot chunks are not read by chunk tasks", retriable=False)
    key = (connector_name, connector.updated_at.isoformat(), partition)
    with _sources_lock:
        cached = _sources.get(key)
    if cached is not None:
        return key, cached
    source = kind(engine_config(connector), partition)
    with _sources_lock:
        stale = [k for k in _sources if k[0] == connector_name and k[2] == partition and k != key]
        for old in stale:
            _sources.pop(old).close()
        if key in _sources:  # another thread got there first
            source.close()
            return key, _sources[key]
        _sources[key] = source
    return key, source


def forget(key: tuple | None) -> None:
    """Drops a cached source (after a connection problem: the next task opens new connections)."""
    with _sources_lock:
        source = _sources.pop(key, None) if key is not None else None
    if source is not None:
        source.close()


def error_retriable(source: ChunkSource | None, error: BaseException) -> bool:
    if source is not None:
        return source.retriable(error)
    return error.retriable if isinstance(error, ConnectorError) else True

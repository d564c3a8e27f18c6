"""What the core reads from a connector's configuration: every source's configuration class provides these
(MongoDB's: connectors.mongodb.config.ConnectorConfig). Enumerations are compared by their Debezium values."""

from __future__ import annotations

from typing import Any, Protocol

# snapshot.mode values the core acts on
SNAPSHOT_INITIAL = "initial"
SNAPSHOT_INITIAL_ONLY = "initial_only"
SNAPSHOT_WHEN_NEEDED = "when_needed"
SNAPSHOT_ALWAYS = "always"
SNAPSHOT_ON_FIRST_RUN = frozenset({SNAPSHOT_INITIAL, SNAPSHOT_INITIAL_ONLY, SNAPSHOT_WHEN_NEEDED, SNAPSHOT_ALWAYS})

# max.queue.size.in.bytes: the change queue's bound in bytes (core.stream.ChangeQueue), each source's reader telling
# its changes' estimated sizes. Debezium's default is 0 (no bound); bounded in changes alone (max.queue.size, 8,192),
# a stream of 1 MB rows would queue 8 GB
MAX_QUEUE_BYTES = 16 * 1024 * 1024

# snapshot.chunk.max.bytes: about this many bytes of rows per snapshot chunk (chunks of rows over 4 KB get fewer rows
# than snapshot.chunk.size); a chunk's events are held until it commits, about four times their size at the peak
CHUNK_MAX_BYTES = 32 * 1024 * 1024


class EngineConfig(Protocol):
    name: str
    snapshot_mode: str  # a str enum: initial, initial_only, never, no_data, when_needed, always
    max_batch_size: int
    max_queue_size: int
    max_queue_size_in_bytes: int  # 0: no bound in bytes
    poll_interval_ms: int
    heartbeat_interval_ms: int
    connect_backoff_initial_delay_ms: int
    connect_backoff_max_delay_ms: int
    connect_max_attempts: int
    offset_storage_topic: str
    offset_storage_partitions: int
    errors_topic_name: str
    message_too_large_policy: Any  # a str enum: fail, skip, ...
    topic_creation_cleanup_policy: Any  # a str enum
    topic_creation_partitions: int
    topic_creation_replication_factor: int
    topic_creation_max_message_bytes: int  # -1: the broker's default
    producer_max_request_size: int  # the largest message the producer sends, in bytes
    snapshot_delay_ms: int
    snapshot_chunk_size: int
    snapshot_chunk_max_bytes: int  # 0: chunks bounded in rows only (core.snapshot.chunks.rows_per_chunk)
    snapshot_fetch_size: int
    snapshot_max_threads: int

    def snapshot_filter(self, collection: str) -> Any:
        """The snapshot filter override of one data collection (None: all rows)."""


class DerivedTopicNames:
    """The names and converter settings every source's configuration derives the same way from its properties
    (`topic.prefix`, `errors.topic`, `heartbeat.topics.prefix`, `topic.transaction`,
    `[key|value].converter.schemas.enable`)."""

    @property
    def transaction_topic_name(self) -> str:
        return f"{self.topic_prefix}.{self.topic_transaction}"

    @property
    def errors_topic_name(self) -> str:
        return self.errors_topic or f"{self.topic_prefix}.errors"

    @property
    def heartbeat_topic_name(self) -> str:
        return f"{self.heartbeat_topics_prefix}.{self.topic_prefix}"

    @property
    def key_schemas(self) -> bool:
        return self.schemas_enable if self.key_schemas_enable is None else self.key_schemas_enable

    @property
    def value_schemas(self) -> bool:
        return self.schemas_enable if self.value_schemas_enable is None else self.value_schemas_enable

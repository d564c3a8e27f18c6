"""The Kafka side of the engine: topics, the transactional sink and the offset store (docs/offsets.md)."""

from connectors.kafka.errors import (
    MessageTooLargeError,
    SinkError,
    SinkFatalError,
    SinkFencedError,
    SinkRetriableError,
    TopicAdminError,
    TopicAdminRetriableError,
)
from connectors.kafka.offset_record import OffsetRecord, OffsetTombstone
from connectors.kafka.offsets import OffsetStore, OffsetStoreError
from connectors.kafka.sink import (
    PIPELINE_LANES,
    OutMessage,
    SinkStats,
    TransactionalSink,
    lane_transactional_ids,
    transactional_id,
)
from connectors.kafka.topics import TopicAdmin, TopicSpec, ensure_topics, offsets_topic_spec

__all__ = [
    "PIPELINE_LANES",
    "MessageTooLargeError",
    "OffsetRecord",
    "OffsetStore",
    "OffsetStoreError",
    "OffsetTombstone",
    "OutMessage",
    "SinkError",
    "SinkFatalError",
    "SinkFencedError",
    "SinkRetriableError",
    "SinkStats",
    "TopicAdmin",
    "TopicAdminError",
    "TopicAdminRetriableError",
    "TopicSpec",
    "TransactionalSink",
    "ensure_topics",
    "lane_transactional_ids",
    "offsets_topic_spec",
    "transactional_id",
]

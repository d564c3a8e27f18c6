"""Typed failures of the Kafka side, and the mapping from librdkafka errors to them.

What the caller must do differs per type: fenced -> stop for good; retriable -> the batch was aborted and
writing the same batch again is safe; fatal -> the producer is dead, `open()` again (same transactional id,
so nothing is duplicated); too large -> a message exceeds the limit under the `fail` policy.
"""

from __future__ import annotations

from confluent_kafka import KafkaError

from connectors import ConnectorError, PipelineFenced


class SinkError(ConnectorError):
    """A batch was not committed: none of its messages nor its offset are visible to read_committed readers.

    `reason` is what failed, without what follows from it (for a message that cites this one)."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = reason or message


class SinkFencedError(SinkError, PipelineFenced):
    """Another producer with the same transactional id took over; this pipeline must stop and never continue."""


class SinkRetriableError(SinkError):
    retriable = True


class SinkFatalError(SinkError):
    """The producer cannot be used any more; `open()` creates a new one."""


class CommitOutcomeUnknownError(SinkError):
    """A commit neither completed nor failed, and fencing the producer to learn its outcome did not succeed.

    Writing the batch again could duplicate it: the pipeline must start again from its committed offset (which
    fences the producer and reads the offsets topic read_committed, learning what really committed)."""


class MessageTooLargeError(SinkError):
    def __init__(self, message: str, topic: str, key: bytes | None, size: int, limit: int):
        super().__init__(message)
        self.topic, self.key, self.size, self.limit = topic, key, size, limit


class TopicAdminError(ConnectorError):
    """A topic could not be created or described; the message says which and what to change."""


class TopicAdminRetriableError(TopicAdminError):
    retriable = True


FENCED_CODES = frozenset({
    KafkaError._FENCED,
    KafkaError.PRODUCER_FENCED,
    KafkaError.INVALID_PRODUCER_EPOCH,
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,  # never retriable either; stopping is the only safe move
})


PERMANENT_CODES = frozenset({
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.SASL_AUTHENTICATION_FAILED,
    KafkaError.INVALID_CONFIG,
    KafkaError.POLICY_VIOLATION,
    KafkaError.INVALID_RECORD,
    KafkaError.UNSUPPORTED_VERSION,
})


# Answers while partition leadership settles (a broker resumed, restarted or re-elected): asking again, with fresh
# metadata, gets the real answer. _NOENT is librdkafka's "Failed to query partition leaders: No leaders found".
LEADERSHIP_SETTLING_CODES = frozenset({
    KafkaError.FENCED_LEADER_EPOCH, KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE, KafkaError._NOENT,
})


def describe(error: KafkaError) -> str:
    return f"{error.name()}: {error.str()}"


RETRY_BATCH = "The batch was aborted; writing it again is safe."


def classify(error: KafkaError, context: str, retry: str = RETRY_BATCH) -> SinkError:
    """The SinkError a failed producer call maps to. `context` names the step, e.g. "committing the batch";
    `retry` says what a retriable failure leaves behind (a batch aborted, by default)."""
    text = f"Kafka failed while {context} ({describe(error)})"
    if error.code() in FENCED_CODES:
        return SinkFencedError(
            f"{text}. Another worker now runs this pipeline with the same transactional id; this one stops.", text
        )
    if error.fatal():
        return SinkFatalError(f"{text}. The producer must be recreated; open the sink again.", text)
    if error.code() in PERMANENT_CODES:
        return SinkError(f"{text}. Retrying cannot help; fix the cause (permissions, topic config) and restart.", text)
    return SinkRetriableError(f"{text}. {retry}", text)

"""Reading the platform's topics with Spark's own Kafka source.

Always ``kafka.isolation.level=read_committed``: the connectors write each batch in one Kafka
transaction, and an aborted batch (a crashed or fenced pipeline) must never reach a job.

Bounds (batch): ``starting_offsets`` / ``ending_offsets`` (``"earliest"``, ``"latest"``, or
``{"<topic>": {"<partition>": <offset>}}`` with -2 = earliest, -1 = latest, as Spark takes them) or
``starting_timestamp`` / ``ending_timestamp`` (milliseconds; matched against the Kafka record
timestamps, i.e. when the connector produced the event). A timestamp beyond the end of a partition
reads nothing from it instead of failing. Streaming takes the starting bound only; a checkpoint's
offsets win over it on restart.

Topics are checked before Spark is asked (an unknown topic, or a Kafka that does not answer, is a one-line
`JobError` within seconds instead of Spark's retries).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparkjobs.errors import InvalidArguments, JobError
from sparkjobs.kafka_client import UnsupportedKafkaOption, client_config

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def default_bootstrap() -> str:
    return os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or DEFAULT_BOOTSTRAP


@dataclass
class TopicSource:
    """Which topics to read, between which bounds, from which Kafka."""

    topics: list[str] = field(default_factory=list)
    pattern: str | None = None
    bootstrap_servers: str = field(default_factory=default_bootstrap)
    starting_offsets: Any = None
    ending_offsets: Any = None
    starting_timestamp: int | None = None
    ending_timestamp: int | None = None
    max_offsets_per_trigger: int | None = None
    kafka_options: dict[str, str] = field(default_factory=dict)
    kafka_timeout_s: float = 15.0

    @classmethod
    def from_args(cls, args: Mapping[str, Any], *, require: bool = True) -> TopicSource:
        topics = args.get("topics") or []
        if isinstance(topics, str):
            topics = [part.strip() for part in topics.split(",") if part.strip()]
        if not isinstance(topics, list) or not all(isinstance(topic, str) and topic for topic in topics):
            raise InvalidArguments("`topics` must be a list of topic names")
        pattern = args.get("topic_pattern")
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as error:
                raise InvalidArguments(f"`topic_pattern` {pattern!r} is not a regular expression: {error}") from None
        if require and not topics and not pattern:
            raise InvalidArguments("give `topics` (a list of topic names) or `topic_pattern`")
        if topics and pattern:
            raise InvalidArguments("give either `topics` or `topic_pattern`, not both")
        source = cls(
            topics=list(dict.fromkeys(topics)),
            pattern=pattern,
            bootstrap_servers=args.get("bootstrap_servers") or default_bootstrap(),
            starting_offsets=args.get("starting_offsets"),
            ending_offsets=args.get("ending_offsets"),
            starting_timestamp=_optional_int(args, "starting_timestamp"),
            ending_timestamp=_optional_int(args, "ending_timestamp"),
            max_offsets_per_trigger=_optional_int(args, "max_offsets_per_trigger"),
            kafka_options={str(k): str(v) for k, v in (args.get("kafka_options") or {}).items()},
            kafka_timeout_s=float(args.get("kafka_timeout_s") or 15.0),
        )
        if source.starting_offsets is not None and source.starting_timestamp is not None:
            raise InvalidArguments("give either `starting_offsets` or `starting_timestamp`, not both")
        if source.ending_offsets is not None and source.ending_timestamp is not None:
            raise InvalidArguments("give either `ending_offsets` or `ending_timestamp`, not both")
        return source

    def with_topics(self, topics: Sequence[str]) -> TopicSource:
        clone = TopicSource(**{**self.__dict__})
        clone.topics, clone.pattern = list(topics), None
        return clone

    # --- checking -------------------------------------------------------------------------------

    def resolve(self) -> list[str]:
        """The topics this source reads; JobError for an unknown topic or an unreachable Kafka."""
        existing = list_topics(self.bootstrap_servers, self.kafka_timeout_s, self.kafka_options)
        if existing is None:  # no Kafka client on this driver: Spark will report what it finds
            return list(self.topics)
        if self.pattern is not None:
            regex = re.compile(self.pattern)
            matched = sorted(topic for topic in existing if regex.fullmatch(topic))
            if not matched:
                raise JobError(f"no topic matches the pattern '{self.pattern}'")
            return matched
        unknown = [topic for topic in self.topics if topic not in existing]
        if unknown:
            raise JobError(f"unknown topic{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}")
        return list(self.topics)

    # --- Spark options --------------------------------------------------------------------------

    def options(self, *, streaming: bool) -> dict[str, str]:
        options = {
            "kafka.bootstrap.servers": self.bootstrap_servers,
            "kafka.isolation.level": "read_committed",
            "includeHeaders": "false",
        }
        for key, value in self.kafka_options.items():
            options[key if key.startswith("kafka.") or key in _SPARK_KAFKA_KEYS else f"kafka.{key}"] = value
        options["kafka.isolation.level"] = "read_committed"  # not negotiable
        if self.pattern is not None:
            options["subscribePattern"] = self.pattern
        else:
            options["subscribe"] = ",".join(self.topics)
        if self.starting_timestamp is not None:
            options["startingTimestamp"] = str(self.starting_timestamp)
            options["startingOffsetsByTimestampStrategy"] = "latest"
        else:
            options["startingOffsets"] = _offsets(self.starting_offsets, "earliest")
        if streaming:
            if self.max_offsets_per_trigger:
                options["maxOffsetsPerTrigger"] = str(self.max_offsets_per_trigger)
        elif self.ending_timestamp is not None:
            options["endingTimestamp"] = str(self.ending_timestamp)
        else:
            options["endingOffsets"] = _offsets(self.ending_offsets, "latest")
        return options

    def read(self, spark: SparkSession, *, streaming: bool = False) -> DataFrame:
        """The raw Kafka rows (key, value, topic, partition, offset, timestamp, timestampType)."""
        reader = spark.readStream if streaming else spark.read
        reader = reader.format("kafka")
        for key, value in self.options(streaming=streaming).items():
            reader = reader.option(key, value)
        return reader.load()


_SPARK_KAFKA_KEYS = {
    "failOnDataLoss",
    "minPartitions",
    "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger",
    "maxTriggerDelay",
    "fetchOffset.numRetries",
    "fetchOffset.retryIntervalMs",
    "groupIdPrefix",
    "maxRecordsPerPartition",
}


def _optional_int(args: Mapping[str, Any], name: str) -> int | None:
    value = args.get(name)
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidArguments(f"`{name}` must be an integer, not {value!r}") from None


def _offsets(value: Any, default: str) -> str:
    if value is None:
        return default
    if isinstance(value, str):
        if value in ("earliest", "latest"):
            return value
        try:
            value = json.loads(value)
        except ValueError:
            raise InvalidArguments(f"offsets {value!r} are neither earliest, latest nor JSON") from None
    if not isinstance(value, Mapping):
        raise InvalidArguments(f"offsets must be 'earliest', 'latest' or {{topic: {{partition: offset}}}}: {value!r}")
    try:
        cleaned = {
            str(topic): {str(int(partition)): int(offset) for partition, offset in partitions.items()}
            for topic, partitions in value.items()
        }
    except (AttributeError, TypeError, ValueError):
        raise InvalidArguments(f"offsets must map topic -> partition -> offset: {value!r}") from None
    return json.dumps(cleaned)


def list_topics(
    bootstrap: str, timeout: float = 15.0, kafka_options: Mapping[str, str] | None = None
) -> set[str] | None:
    """Topic names on the cluster (None without a Kafka client or one that can use the options); JobError when Kafka
    does not answer."""
    try:
        from confluent_kafka.admin import AdminClient
    except ImportError:
        return None
    try:
        config = client_config(bootstrap, kafka_options)
    except UnsupportedKafkaOption:
        return None  # Spark's own Java client reads what librdkafka cannot; it reports what it finds
    try:
        metadata = AdminClient(config).list_topics(timeout=timeout)
    except Exception as error:
        raise JobError(f"Kafka at {bootstrap} did not answer within {timeout:g}s: {error}") from None
    return set(metadata.topics)

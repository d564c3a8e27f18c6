"""Creating the topics a pipeline writes to, through AdminClient (brokers run with auto-create disabled).

Idempotent: existing topics are left as they are (TOPIC_ALREADY_EXISTS from a concurrent creator is fine),
except that settings a spec marks as `required` (the offsets topic's `cleanup.policy=compact`) are checked,
because a non-compacted offsets topic would silently lose positions after its retention time.
Known topics are cached, so steady-state batches cost no admin round trip.

Replication: a spec's replication factor of -1 (the default of `topic.creation.default.replication.factor` and
`offset.storage.replication.factor`) becomes 3 on a cluster of 3 or more brokers, with `min.insync.replicas=2`
unless the spec sets it, so that with the producer's acks=all a committed write is on two brokers and one broker
may fail; on a smaller cluster it stays the broker's default. An explicit factor is used as given.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from connectors.kafka.client_log import with_client_logger
from connectors.kafka.errors import TopicAdminError, TopicAdminRetriableError, describe

LIST_TIMEOUT_SECONDS = 10.0
MAX_TOPIC_LENGTH = 249
_INVALID_TOPIC_CHARACTERS = re.compile(r"[^A-Za-z0-9_.-]")
BROKER_DEFAULT = -1  # partitions / replication factor chosen by the broker (num.partitions, default.replication.factor)
CLUSTER_REPLICATION_FACTOR = 3  # what BROKER_DEFAULT becomes on a cluster of at least this many brokers
CLUSTER_MIN_INSYNC_REPLICAS = "2"

_HINTS = {
    KafkaError.INVALID_REPLICATION_FACTOR: "Use a replication factor no larger than the number of brokers.",
    KafkaError.INVALID_PARTITIONS: "Use a positive number of partitions (or -1 for the broker default).",
    KafkaError.INVALID_CONFIG: "Check the topic settings' names and values against the Kafka documentation.",
    KafkaError.POLICY_VIOLATION: "The cluster's create-topic policy refused it; ask the Kafka administrators.",
    KafkaError.TOPIC_AUTHORIZATION_FAILED: "Grant the connector's Kafka user CREATE and DESCRIBE_CONFIGS on it.",
    KafkaError.CLUSTER_AUTHORIZATION_FAILED: "Grant the connector's Kafka user CREATE on the cluster.",
    KafkaError.TOPIC_EXCEPTION: "Topic names may contain only [A-Za-z0-9._-], up to 249 characters.",
}
_RETRIABLE_DESCRIBE = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT}


def sanitize_topic(name: str) -> str:
    """A valid Kafka topic name, as Debezium's topic naming makes it: each UTF-16 unit of a character Kafka refuses
    becomes `_` (Java strings are UTF-16: a character beyond U+FFFF gives two); over-long names are cut and suffixed
    with a hash to stay distinct."""
    cleaned = _INVALID_TOPIC_CHARACTERS.sub(lambda found: "__" if ord(found[0]) > 0xFFFF else "_", name)
    if len(cleaned) <= MAX_TOPIC_LENGTH:
        return cleaned
    digest = hashlib.sha1(name.encode(), usedforsecurity=False).hexdigest()[:12]
    return f"{cleaned[: MAX_TOPIC_LENGTH - 13]}_{digest}"


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int = BROKER_DEFAULT
    replication_factor: int = BROKER_DEFAULT
    config: Mapping[str, str] = field(default_factory=dict)
    required: frozenset[str] = frozenset()  # config keys an existing topic must match


def offsets_topic_spec(name: str = "cdc.offsets", partitions: int = 1,
                       replication_factor: int = BROKER_DEFAULT) -> TopicSpec:
    return TopicSpec(name, partitions, replication_factor, {"cleanup.policy": "compact"},
                     required=frozenset({"cleanup.policy"}))


class TopicAdmin:
    """Ensures topics exist and remembers each one's `max.message.bytes` for the sink's size check."""

    def __init__(self, admin_or_bootstrap: AdminClient | str, timeout: float = 30.0):
        if isinstance(admin_or_bootstrap, str):
            admin_or_bootstrap = AdminClient(with_client_logger({"bootstrap.servers": admin_or_bootstrap}))
        self.admin = admin_or_bootstrap
        self.timeout = timeout
        self.max_message_bytes: dict[str, int] = {}

    def is_known(self, topic: str) -> bool:
        return topic in self.max_message_bytes

    def answers(self, timeout: float) -> bool:
        """Whether a broker answers a metadata request within `timeout` seconds."""
        try:
            self.admin.list_topics(timeout=timeout)
        except KafkaException:
            return False
        return True

    def forget(self, topic: str) -> None:
        self.max_message_bytes.pop(topic, None)

    def ensure(self, specs: Iterable[TopicSpec]) -> list[str]:
        """Creates the missing topics among `specs`; returns the names it created."""
        wanted = {spec.name: spec for spec in specs if spec.name not in self.max_message_bytes}
        if not wanted:
            return []
        try:
            # A reachable cluster answers in milliseconds; an unreachable one is reported (and retried) sooner.
            metadata = self.admin.list_topics(timeout=min(self.timeout, LIST_TIMEOUT_SECONDS))
        except KafkaException as error:
            raise TopicAdminRetriableError(f"Could not list Kafka topics ({describe(error.args[0])}).") from None
        missing = [for_cluster(spec, len(metadata.brokers)) for name, spec in wanted.items()
                   if name not in metadata.topics]
        created = self._create(missing)
        configs = self._describe(list(wanted))
        for name, spec in wanted.items():
            if name not in created:
                _check_required(spec, configs[name])
            self.max_message_bytes[name] = int(configs[name].get("max.message.bytes") or 0)
        return created

    def _create(self, specs: list[TopicSpec]) -> list[str]:
        if not specs:
            return []
        new_topics = [NewTopic(s.name, num_partitions=s.partitions, replication_factor=s.replication_factor,
                               config=dict(s.config)) for s in specs]
        futures = self.admin.create_topics(new_topics, operation_timeout=self.timeout, request_timeout=self.timeout)
        by_name = {spec.name: spec for spec in specs}
        created, problems = [], []
        for name, future in futures.items():
            try:
                future.result(timeout=self.timeout)
                created.append(name)
            except TimeoutError:  # the future's own wait: a broker that stopped answering (frozen, overloaded)
                raise self._no_answer(f"creating topic {name!r}") from None
            except KafkaException as exception:
                error = exception.args[0]
                if error.code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    problems.append((by_name[name], error))
        if problems:
            raise _creation_error(problems)
        return created

    def _describe(self, names: list[str]) -> dict[str, dict[str, str]]:
        deadline = time.monotonic() + self.timeout
        configs: dict[str, dict[str, str]] = {}
        pending = list(names)
        while pending:
            resources = [ConfigResource(ResourceType.TOPIC, name) for name in pending]
            retry = []
            for resource, future in self.admin.describe_configs(resources, request_timeout=self.timeout).items():
                try:
                    entries = future.result(timeout=self.timeout)
                    configs[resource.name] = {key: entry.value for key, entry in entries.items()}
                except TimeoutError:
                    raise self._no_answer(f"reading the settings of topic {resource.name!r}") from None
                except KafkaException as exception:
                    error = exception.args[0]
                    # A just-created topic can take a moment to reach the broker's metadata.
                    if error.code() in _RETRIABLE_DESCRIBE and time.monotonic() < deadline:
                        retry.append(resource.name)
                        continue
                    if error.code() in _RETRIABLE_DESCRIBE:
                        raise self._no_answer(f"reading the settings of topic {resource.name!r}") from None
                    raise TopicAdminError(
                        f"Could not read the settings of topic {resource.name!r} ({describe(error)}). "
                        f"{_HINTS.get(error.code(), '')}".strip()
                    ) from None
            pending = retry
            if pending:
                time.sleep(0.1)
        return configs

    def _no_answer(self, doing: str) -> TopicAdminRetriableError:
        return TopicAdminRetriableError(f"Kafka did not answer within {self.timeout:g}s while {doing}.")


def for_cluster(spec: TopicSpec, brokers: int) -> TopicSpec:
    """The spec as created on a cluster of `brokers` brokers (see the module's docstring)."""
    if spec.replication_factor != BROKER_DEFAULT or brokers < CLUSTER_REPLICATION_FACTOR:
        return spec
    config = {"min.insync.replicas": CLUSTER_MIN_INSYNC_REPLICAS, **spec.config}
    return replace(spec, replication_factor=CLUSTER_REPLICATION_FACTOR, config=config)


def ensure_topics(admin_or_bootstrap: AdminClient | str | TopicAdmin, specs: Iterable[TopicSpec]) -> list[str]:
    """Creates the missing topics; returns the created names. Pass a TopicAdmin to keep its cache across calls."""
    admin = admin_or_bootstrap if isinstance(admin_or_bootstrap, TopicAdmin) else TopicAdmin(admin_or_bootstrap)
    return admin.ensure(specs)


def _check_required(spec: TopicSpec, actual: Mapping[str, str]) -> None:
    for key in sorted(spec.required):
        if actual.get(key) != spec.config.get(key):
            raise TopicAdminError(
                f"Topic {spec.name!r} exists with {key}={actual.get(key)}, but it must have "
                f"{key}={spec.config.get(key)}. Change it with kafka-configs --alter --entity-type topics "
                f"--entity-name {spec.name} --add-config {key}={spec.config.get(key)}, or use another topic."
            )


def _creation_error(problems: list[tuple[TopicSpec, KafkaError]]) -> TopicAdminError:
    lines = []
    for spec, error in problems:
        settings = ", ".join(f"{k}={v}" for k, v in spec.config.items())
        lines.append(
            f"Could not create topic {spec.name!r} (partitions={spec.partitions}, "
            f"replication factor={spec.replication_factor}{', ' + settings if settings else ''}): "
            f"{describe(error)}. {_HINTS.get(error.code(), '')}".strip()
        )
    retriable = all(error.retriable() for _, error in problems)
    return (TopicAdminRetriableError if retriable else TopicAdminError)("\n".join(lines))

"""Cluster health for the overview: Kafka brokers, Redis, Celery workers and the pipelines they run.

Each probe has a short timeout and reports instead of raising, so one dead service never breaks the page.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from django.conf import settings

from workers import control


@dataclass
class Probe:
    name: str
    ok: bool
    detail: str


def kafka(timeout: float = 2.0) -> Probe:
    try:
        metadata = AdminClient({"bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS,
                                "socket.timeout.ms": int(timeout * 1000)}).list_topics(timeout=timeout)
    except KafkaException as error:
        return Probe("Kafka", False, f"unreachable: {error.args[0] if error.args else error}")
    brokers = len(metadata.brokers)
    return Probe("Kafka", brokers > 0, f"{brokers} broker{'s' if brokers != 1 else ''}, {len(metadata.topics)} topics")


def redis_probe() -> Probe:
    try:
        client = control.client()
        client.ping()
        info = client.info("server")
        memory = client.info("memory").get("used_memory_human", "?")
    except redis.RedisError as error:
        return Probe("Redis", False, f"unreachable: {error}")
    return Probe("Redis", True, f"version {info.get('redis_version', '?')}, {memory} used")


def workers(timeout: float = 1.0) -> Probe:
    from cdcplatform.celery import app

    try:
        replies = app.control.ping(timeout=timeout) or []
    except Exception as error:  # noqa: BLE001 - the broker's own errors vary by transport
        return Probe("Workers", False, f"cannot ask: {error}")
    names = sorted(name for reply in replies for name in reply)
    try:
        leases = sum(1 for _ in control.client().scan_iter(match="cdc:lease:*", count=200))
    except redis.RedisError:
        leases = None
    pipelines = "" if leases is None else f", {leases} pipeline{'s' if leases != 1 else ''} running"
    if not names:
        return Probe("Workers", False, f"no Celery worker answered{pipelines}")
    return Probe("Workers", True, f"{len(names)} worker{'s' if len(names) != 1 else ''}{pipelines}")


def cluster() -> list[Probe]:
    return [kafka(), redis_probe(), workers()]

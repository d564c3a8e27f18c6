"""The Kafka cluster's id (what a Kafka Connect worker reports as `kafka_cluster_id`), asked once per process."""

from __future__ import annotations

import threading

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from django.conf import settings

_lock = threading.Lock()
_cluster_id: dict[str, str] = {}  # bootstrap servers -> id; only answers are kept, so an outage is asked again


def cluster_id(timeout: float = 5.0) -> str | None:
    """The id, or None while Kafka does not answer."""
    servers = settings.KAFKA_BOOTSTRAP_SERVERS
    with _lock:
        if servers in _cluster_id:
            return _cluster_id[servers]
    admin = AdminClient({"bootstrap.servers": servers, "socket.timeout.ms": int(timeout * 1000)})
    try:
        found = admin.describe_cluster(request_timeout=timeout).result(timeout=timeout + 1).cluster_id
    except (KafkaException, TimeoutError):  # not known now: asked again next time
        return None
    if found:
        with _lock:
            _cluster_id[servers] = found
    return found

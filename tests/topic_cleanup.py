"""The topics a test session created, deleted at its end when the session started Kafka itself.

Tests never delete their topics, and a broker whose data directory holds tens of thousands of partitions no longer
starts (each partition keeps files open). A session that started Kafka is its only user, so what it created can
go; a broker that was already running (a developer's stack, another run beside this one) is left alone.
"""

from __future__ import annotations

import sys

from confluent_kafka.admin import AdminClient

BATCH = 500


def topic_names(bootstrap: str) -> set[str]:
    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics)


def delete_new_topics(bootstrap: str, before: set[str]) -> int:
    """Deletes every topic not in `before` (internal ones excepted); returns how many were asked to go."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = sorted(t for t in topic_names(bootstrap) - before if not t.startswith("__"))
    for start in range(0, len(new), BATCH):
        for topic, future in admin.delete_topics(new[start:start + BATCH], request_timeout=60).items():
            try:
                future.result(120)
            except Exception as error:  # noqa: BLE001 - cleanup: a topic already gone or a slow broker is no failure
                print(f"could not delete topic {topic}: {error}", file=sys.stderr)
    return len(new)

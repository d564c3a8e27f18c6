"""Deleting a bench run's topics: the shared dev broker must not gather them (each costs the broker heap, and a
bloated broker pauses longer, which the latency figures then show)."""

from __future__ import annotations

import sys

from confluent_kafka.admin import AdminClient


def delete_topics(bootstrap: str, *prefixes: str) -> None:
    """Deletes the topics whose names start with one of `prefixes` (the run's names); a topic that cannot be deleted
    is reported, not raised: it is only cleanup."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [name for name in admin.list_topics(timeout=30).topics if name.startswith(prefixes)]
    for topic, future in admin.delete_topics(topics, operation_timeout=30).items() if topics else ():
        try:
            future.result(60)
        except Exception as error:  # noqa: BLE001 - cleanup only
            print(f"could not delete the topic {topic}: {error}", file=sys.stderr)

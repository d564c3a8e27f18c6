"""The topics a test session created, deleted at its end.

Tests never delete their topics, and a broker whose data directory holds tens of thousands of partitions no longer
starts (each partition keeps files open; each connector's offsets topic alone has 25 partitions). A session that
started Kafka is its only user, so every topic it created goes. On a broker that was already running (a developer's
stack, other test runs beside this one) only the topics it created that are named after its `unique_name`s go: those
carry the session's tag (`SESSION_TAG`), whose last four digits and the name's eight random ones stay together in the
names tests cut from them (`unique_name[-12:]`).
"""

from __future__ import annotations

import re
import sys
import uuid

from confluent_kafka.admin import AdminClient

BATCH = 500
SESSION_TAG = f"s{uuid.uuid4().hex[:6]}"  # in every unique_name of this session, followed by 8 random hex digits
_TAGGED = re.compile(SESSION_TAG[-4:] + "[0-9a-f]{8}")


def tagged_suffix() -> str:
    """12 characters that carry the session's tag, for a name a test makes without `unique_name` (a connector's,
    a topic's): the session deletes its topics at its end also on a broker that was already running."""
    return SESSION_TAG[-4:] + uuid.uuid4().hex[:8]


def topic_names(bootstrap: str) -> set[str]:
    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics)


def delete_new_topics(bootstrap: str, before: set[str]) -> int:
    """Deletes every topic not in `before` (internal ones excepted); returns how many were asked to go."""
    return _delete(bootstrap, [t for t in topic_names(bootstrap) - before if not t.startswith("__")])


def delete_session_topics(bootstrap: str, before: set[str]) -> int:
    """Deletes the topics not in `before` whose names carry this session's tag; returns how many were asked to go."""
    return _delete(bootstrap, [t for t in topic_names(bootstrap) - before if _TAGGED.search(t)])


def _delete(bootstrap: str, names: list[str]) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = sorted(names)
    for start in range(0, len(names), BATCH):
        for topic, future in admin.delete_topics(names[start:start + BATCH], request_timeout=60).items():
            try:
                future.result(120)
            except Exception as error:  # noqa: BLE001 - cleanup: a topic already gone or a slow broker is no failure
                print(f"could not delete topic {topic}: {error}", file=sys.stderr)
    return len(names)

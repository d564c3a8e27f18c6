"""Valid Kafka topic names from database names: Kafka takes only ASCII letters, digits, `.`, `_` and `-`, and at most
249 characters. As Debezium's topic naming, every other character becomes `_`; an over-long name is cut and suffixed
with a hash of the whole name, so that two long names stay distinct."""

from __future__ import annotations

import hashlib
import re

MAX_TOPIC_LENGTH = 249
_INVALID_TOPIC_CHARACTERS = re.compile(r"[^A-Za-z0-9_.-]")


def sanitize_topic(name: str) -> str:
    """A valid Kafka topic name; over-long names are cut and suffixed with a hash to stay distinct."""
    cleaned = _INVALID_TOPIC_CHARACTERS.sub("_", name)
    if len(cleaned) <= MAX_TOPIC_LENGTH:
        return cleaned
    digest = hashlib.sha1(name.encode(), usedforsecurity=False).hexdigest()[:12]
    return f"{cleaned[: MAX_TOPIC_LENGTH - 13]}_{digest}"

"""Errors a job reports as one line, and how Spark's own exceptions are turned into such a line."""

from __future__ import annotations

import re


class JobError(Exception):
    """A failure whose message is meant for the person who launched the job (one line, no traceback)."""


class InvalidArguments(JobError):
    """The job's arguments are wrong: nothing was started."""


class JobCancelled(BaseException):
    """SIGTERM (or SIGINT) arrived: stop what runs, report `cancelled`.

    A BaseException so that a user script's ``except Exception`` cannot swallow it.
    """


_KAFKA_SOURCE_MISSING = re.compile(r"Failed to find data source: kafka", re.IGNORECASE)
_JAVA_FRAME = re.compile(r"^\s+at [\w$.<>]+\(.*\)$")


def one_line(text: str, limit: int = 2000) -> str:
    text = " ".join(part.strip() for part in str(text).splitlines() if part.strip() and not _JAVA_FRAME.match(part))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(error: BaseException) -> str:
    """A one-line message for any exception a job can raise."""
    if isinstance(error, JobError):
        return one_line(str(error))
    text = str(error)
    if _KAFKA_SOURCE_MISSING.search(text):
        return (
            "Spark's Kafka source (spark-sql-kafka-0-10) is not on the classpath: launch through "
            "`python -m sparkjobs.submit` (it passes --jars), or set SPARK_KAFKA_JARS / SPARK_KAFKA_PACKAGES"
        )
    name = type(error).__name__
    # Spark's Python-side exceptions carry an error class and a short message first; the JVM stack follows.
    getter = getattr(error, "getMessage", None)
    if callable(getter):
        try:
            text = getter() or text
        except Exception:  # noqa: BLE001, S110 - fall back to str(error)
            pass
    first = text.split("\n\tat ", 1)[0].split("\nJVM stacktrace:", 1)[0]
    return one_line(f"{name}: {first}")

"""Kafka Connect's `/admin/loggers` over Python logging: log4j level names, `root` for the root logger, and the
time (epoch ms) each logger's level was last changed through this API in this process (KIP-976 `last_modified`).

Connect's semantics: listing shows the loggers whose level is set explicitly; setting a level on a name also sets
it on every existing logger below that name that has its own level (log4j children that Python loggers would not
inherit from), and answers the sorted names changed. Pure logging code: it works the same in the web process and
in a worker (workers/loggers.py applies cluster-wide changes with it).
"""

from __future__ import annotations

import logging
import threading
import time

ROOT = "root"
TRACE = 5  # below DEBUG, as log4j's TRACE
LEVELS = {"OFF": logging.CRITICAL + 10, "FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING,
          "INFO": logging.INFO, "DEBUG": logging.DEBUG, "TRACE": TRACE}
NAMES = {number: name for name, number in LEVELS.items()}

_modified: dict[str, int] = {}
_lock = threading.Lock()


class UnknownLevel(ValueError):
    pass


def parse_level(text: object) -> int:
    level = LEVELS.get(text.upper()) if isinstance(text, str) else None
    if level is None:
        raise UnknownLevel(f"invalid log level '{text}'.")
    return level


def level_name(level: int) -> str:
    """The log4j name of a Python level (the nearest named one at or below it)."""
    named = [number for number in NAMES if number <= level]
    return NAMES[max(named)] if named else "TRACE"


def _logger(name: str) -> logging.Logger:
    return logging.getLogger() if name == ROOT else logging.getLogger(name)


def _described(name: str, logger: logging.Logger) -> dict:
    return {"level": level_name(logger.getEffectiveLevel()), "last_modified": _modified.get(name)}


def explicit() -> dict[str, dict]:
    """{name: {"level", "last_modified"}} of the root and every logger with its own level, sorted by name."""
    found = {ROOT: _described(ROOT, logging.getLogger())}
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and logger.level != logging.NOTSET:
            found[name] = _described(name, logger)
    return dict(sorted(found.items()))


def known(name: str) -> dict | None:
    """The effective level of an existing logger (or the root); None when no logger has that name."""
    if name != ROOT and not isinstance(logging.Logger.manager.loggerDict.get(name), logging.Logger):
        return None
    return _described(name, _logger(name))


def set_level(name: str, level: int) -> list[str]:
    """Sets `level` on `name` and on existing loggers below it that have their own level; the sorted names changed."""
    targets = {name}
    existing = logging.Logger.manager.loggerDict
    for other, logger in list(existing.items()):
        if not isinstance(logger, logging.Logger):
            continue
        if name == ROOT or (other.startswith(name + ".") and logger.level != logging.NOTSET):
            targets.add(other)
    now = int(time.time() * 1000)
    with _lock:
        for target in targets:
            _logger(target).setLevel(level)
            _modified[target] = now
    return sorted(targets)

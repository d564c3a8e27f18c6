"""Waiting in tests on the thing itself, never on a guess of how long it takes."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(predicate: Callable, timeout: float, what: str, context: Callable[[], str] = lambda: "",
             interval: float = 0.2):
    """predicate()'s first truthy value within `timeout` seconds; else an AssertionError naming `what`, followed by
    `context()` (e.g. the tail of a log)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    detail = context()
    raise AssertionError(f"timed out after {timeout}s waiting for {what}" + (f"\n{detail}" if detail else ""))

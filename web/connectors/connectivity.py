"""Can the connector reach its source? Checked before a configuration is saved or reported valid (API, dashboard
form, Kafka Connect's create/validate), in bounded time (CDC_CONNECTIVITY_CHECK_MS, 0 turns it off), with the
reason a person can act on: DNS, refused port, timeout, credentials, and what the source needs (a MongoDB replica
set; PostgreSQL's wal_level, REPLICATION and publication; MySQL/MariaDB's binlog settings and grants), by
connectors.sources.preflight.

A check makes the server connect where a configuration says, so it is an operator's action: a viewer's
validation checks the configuration only. Each user may start CDC_CONNECTIVITY_CHECK_RATE checks (DRF's throttle
syntax, "20/min"), at most CDC_CONNECTIVITY_CHECKS_AT_ONCE run at a time in a web process, and each runs in a child
process killed at its deadline (connectors/config/preflight_process.py), so no check leaves a thread or a connection
behind the request that started it.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from django.conf import settings
from rest_framework.throttling import UserRateThrottle

from connectors.config import preflight_process, table_preview
from connectors.config.types import Problem
from web.accounts.roles import OPERATOR, has_role
from web.connectors import properties as props

QUEUE_WAIT_S = 1.0
_running = threading.BoundedSemaphore(settings.CDC_CONNECTIVITY_CHECKS_AT_ONCE)


class ConnectivityThrottle(UserRateThrottle):
    scope = "connectivity"

    def get_rate(self):
        return settings.CDC_CONNECTIVITY_CHECK_RATE


def enabled() -> bool:
    return settings.CDC_CONNECTIVITY_CHECK_MS > 0


def allowed(request) -> bool:
    """Whether this request's user may make the server connect to a source (operator or admin)."""
    return enabled() and request is not None and has_role(request.user, OPERATOR)


class Refused(Exception):
    """A connection the server will not make now; the message says why, `retry_after_s` when to ask again."""

    def __init__(self, message: str, retry_after_s: int):
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class NotNow(Problem):
    """A check the server did not run now (the user's rate, or as many running as allowed): the configuration is
    not judged, and asking again after `retry_after_s` may be answered."""

    retry_after_s: int = 1


def retry_after(problems) -> int | None:
    """When to ask again, if a check among `problems` was not run now; else None."""
    waits = [problem.retry_after_s for problem in problems or () if isinstance(problem, NotNow)]
    return max(waits) if waits else None


def _admit(request) -> None:
    throttle = ConnectivityThrottle()
    if not throttle.allow_request(request, None):
        wait = max(1, math.ceil(throttle.wait() or 1))
        raise Refused(f"too many connection checks ({settings.CDC_CONNECTIVITY_CHECK_RATE}); try again in "
                      f"{wait} s", wait)
    if not _running.acquire(timeout=QUEUE_WAIT_S):
        raise Refused("the server is running as many connection checks as it allows at once; try again in a "
                      "moment", 1)


def list_tables(parts: props.Parts, request) -> dict:
    """The source's tables and which the configuration captures (connectors.config.table_preview), with the same
    bounds as a check: the user's rate, the web process's checks at once, a child process killed at the deadline.
    Call only when `allowed(request)`. Raises Refused or table_preview.PreviewFailed."""
    _admit(request)
    try:
        return table_preview.run(props.join(parts), settings.CDC_CONNECTIVITY_CHECK_MS)
    finally:
        _running.release()


def check(parts: props.Parts, request) -> list[Problem]:
    """[] when the source answers as the connector needs; else the problems, each naming the property to change.
    Call only when `allowed(request)`."""
    try:
        _admit(request)
    except Refused as refused:
        return [NotNow("", str(refused), refused.retry_after_s)]
    try:
        return preflight_process.run(props.join(parts), settings.CDC_CONNECTIVITY_CHECK_MS)
    finally:
        _running.release()

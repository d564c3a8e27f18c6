"""MongoDB's errors, and the engine's (connectors.core.errors) under their old import path."""

from __future__ import annotations

from connectors.core.errors import (
    AuthenticationFailed,
    ConnectorError,
    HistoryLost,
    PipelineFenced,
    SourceUnreachable,
)

__all__ = [
    "AuthenticationFailed",
    "ChangeEventTooLarge",
    "ConnectorError",
    "HistoryLost",
    "NotAReplicaSet",
    "PipelineFenced",
    "SourceUnreachable",
]


class NotAReplicaSet(ConnectorError):
    pass


class ChangeEventTooLarge(ConnectorError):
    """MongoDB cannot return a change event over its 16 MB limit (BSONObjectTooLarge, 10334): retrying never helps."""

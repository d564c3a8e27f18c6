"""MongoDB's errors a user can act on (the engine's own are in connectors/__init__.py)."""

from __future__ import annotations

from connectors import ConnectorError


class NotAReplicaSet(ConnectorError):
    pass


class ChangeEventTooLarge(ConnectorError):
    """MongoDB cannot return a change event over its 16 MB limit (BSONObjectTooLarge, 10334): retrying never helps."""

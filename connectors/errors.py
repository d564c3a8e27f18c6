"""Errors a user can act on. Their messages are shown as they are (API, dashboard, CLI): no traceback,
and never a credential."""

from __future__ import annotations


class ConnectorError(RuntimeError):
    """A failure with a message that says what went wrong and what to do."""

    retriable = False


class SourceUnreachable(ConnectorError):
    retriable = True


class AuthenticationFailed(ConnectorError):
    pass


class NotAReplicaSet(ConnectorError):
    pass


class HistoryLost(ConnectorError):
    """The stored resume position is no longer in the oplog (server error 286)."""


class PipelineFenced(ConnectorError):
    """Another worker took over this pipeline's transactional id; this one must stop."""


class ChangeEventTooLarge(ConnectorError):
    """MongoDB cannot return a change event over its 16 MB limit (BSONObjectTooLarge, 10334): retrying never helps."""

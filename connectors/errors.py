"""Errors a user can act on. Their messages are shown as they are (API, dashboard, CLI): no traceback,
and never a credential.

The lowest layer of the engine: it imports nothing, and the Kafka side, the core and every source build their
errors on it (connectors/kafka sits below connectors/core and imports nothing of it)."""

from __future__ import annotations


class ConnectorError(RuntimeError):
    """A failure with a message that says what went wrong and what to do."""

    retriable = False


class SourceUnreachable(ConnectorError):
    retriable = True


class AuthenticationFailed(ConnectorError):
    pass


class HistoryLost(ConnectorError):
    """The stored position is no longer in the source's history (oplog, WAL, binlog): changes were missed."""


class PipelineFenced(ConnectorError):
    """Another worker took over this pipeline's transactional id; this one must stop."""


class UnknownConnectorClass(ConnectorError):
    """`connector.class` names no source this engine has (or one not wired yet)."""

"""The change-data-capture engine: its sources (`mongodb`, `postgres`, `mysql`) on one core (`core`), writing to
Kafka (`kafka`).

This module holds the errors a user can act on. Their messages are shown as they are (API, dashboard, CLI): no
traceback, and never a credential. It is the lowest layer of the engine and imports nothing: every module of the
package is imported through it, so the Kafka side (which imports nothing of the core), the core and every source
build their errors on it without an arrow back up."""

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

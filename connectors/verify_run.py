"""Verify a connector by its configuration (docs/verify.md): the source's readers for the engine's Verifier.

Used by `python -m connectors verify CONFIG.json` and, unchanged, by the Celery task."""

from __future__ import annotations

import threading

from connectors.core.verify import Progress, Verifier, VerifyOptions
from connectors.core.verify_report import VerifyReport


def partition_verifiers(config) -> list:
    """The source's PartitionVerifiers of a connector's engine configuration (its class tells the source)."""
    from connectors.mysql.config import MySqlConfig
    from connectors.postgres.config import PostgresConfig

    if isinstance(config, PostgresConfig):
        from connectors.postgres import verify

        return verify.partitions(config)
    if isinstance(config, MySqlConfig):
        from connectors.mysql import verify

        return verify.partitions(config)
    from connectors.mongodb import verify

    return verify.partitions(config)


def verify_connector(config, bootstrap_servers: str, options: VerifyOptions | None = None,
                     stop: threading.Event | None = None, on_progress: Progress | None = None) -> VerifyReport:
    """Compares every captured table of the connector's source with its topics; raises ConnectorError when it
    cannot (the source or Kafka unreachable, the connector not keeping up)."""
    return Verifier(config, partition_verifiers(config), bootstrap_servers, options, stop, on_progress).run()

"""Which source a connector reads, from its `connector.class` (Debezium's class names, or short names).

A connector without `connector.class` is a MongoDB connector (every connector made before sources were
pluggable). A class this engine knows but has not wired to the core yet is refused with a message that names it.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from connectors import UnknownConnectorClass
from connectors.config.types import ConfigError, Problem

if TYPE_CHECKING:
    from connectors.core.verify import Progress, VerifyOptions
    from connectors.core.verify_report import VerifyReport

MONGODB = "mongodb"
POSTGRES = "postgres"
MYSQL = "mysql"
MARIADB = "mariadb"

CONNECTOR_CLASSES = {
    "io.debezium.connector.mongodb.MongoDbConnector": MONGODB,
    "cdcplatform.mongodb": MONGODB,
    MONGODB: MONGODB,
    "io.debezium.connector.postgresql.PostgresConnector": POSTGRES,
    POSTGRES: POSTGRES,
    "postgresql": POSTGRES,
    "io.debezium.connector.mysql.MySqlConnector": MYSQL,
    MYSQL: MYSQL,
    "io.debezium.connector.mariadb.MariaDbConnector": MARIADB,
    MARIADB: MARIADB,
}
DEBEZIUM_CLASSES = {
    MONGODB: "io.debezium.connector.mongodb.MongoDbConnector",
    POSTGRES: "io.debezium.connector.postgresql.PostgresConnector",
    MYSQL: "io.debezium.connector.mysql.MySqlConnector",
    MARIADB: "io.debezium.connector.mariadb.MariaDbConnector",
}
WIRED = frozenset({MONGODB, POSTGRES, MYSQL, MARIADB})  # sources the runner can run today
NAMES = {MONGODB: "MongoDB", POSTGRES: "PostgreSQL", MYSQL: "MySQL", MARIADB: "MariaDB"}


def source_kind(properties: Mapping[str, Any]) -> str:
    """The source a connector's properties name (`connector.class`; absent: mongodb)."""
    raw = properties.get("connector.class")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return MONGODB
    kind = CONNECTOR_CLASSES.get(str(raw).strip()) or CONNECTOR_CLASSES.get(str(raw).strip().lower())
    if kind is None:
        accepted = ", ".join(sorted({*DEBEZIUM_CLASSES.values(), *DEBEZIUM_CLASSES}))
        raise UnknownConnectorClass(f"connector.class {raw!r} is not a connector this platform runs; use one of "
                                    f"{accepted}")
    return kind


def require_wired(kind: str, raw: Any = None) -> None:
    if kind not in WIRED:
        name = raw if raw is not None else DEBEZIUM_CLASSES[kind]
        raise UnknownConnectorClass(f"connector.class {name!r}: the {NAMES[kind]} source is not wired into the "
                                    "engine yet; this platform runs io.debezium.connector.mongodb.MongoDbConnector "
                                    "connectors today")


def engine_config(properties: Mapping[str, Any]):
    """(kind, configuration) for a connector's properties; refuses a source that is not wired.

    Raises connectors.config.ConfigError for invalid MongoDB properties, UnknownConnectorClass for the class."""
    kind = source_kind(properties)
    require_wired(kind, properties.get("connector.class"))
    if kind == POSTGRES:
        from connectors.postgres.config import PostgresConfig

        return kind, PostgresConfig.from_properties(properties)
    if kind in (MYSQL, MARIADB):
        from connectors.mysql.config import MySqlConfig

        return kind, MySqlConfig.from_properties({**properties, "connector.class": DEBEZIUM_CLASSES[kind]})
    from connectors.mongodb.config import ConnectorConfig

    props = dict(properties)
    if "connector.class" in props:
        props["connector.class"] = DEBEZIUM_CLASSES[kind]
    return kind, ConnectorConfig.from_properties(props)


def open_source(config, kind: str = MONGODB):
    """The core `Source` of a connector's configuration (the configuration's class tells MySQL/MariaDB's)."""
    from connectors.mysql.config import MySqlConfig

    if isinstance(config, MySqlConfig):
        from connectors.mysql.source import MySqlSource

        return MySqlSource(config)
    from connectors.postgres.config import PostgresConfig

    if isinstance(config, PostgresConfig):
        from connectors.postgres.source import PostgresSource

        return PostgresSource(config)
    require_wired(kind)
    from connectors.mongodb.source import MongoSource

    return MongoSource(config)


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
    """Verify a connector by its configuration (docs/verify.md): compares every captured table of the connector's
    source with its topics; raises ConnectorError when it cannot (the source or Kafka unreachable, the connector not
    keeping up). Used by `python -m connectors verify CONFIG.json` and, unchanged, by the Celery task."""
    from connectors.core.verify import Verifier

    return Verifier(config, partition_verifiers(config), bootstrap_servers, options, stop, on_progress).run()


def validate(properties: Any) -> list[Problem]:
    """Every problem of a connector's properties, judged by its source's own validator."""
    if not isinstance(properties, Mapping):
        return [Problem("", f"the configuration must be an object of properties, got {type(properties).__name__}")]
    try:
        engine_config(properties)
    except UnknownConnectorClass as error:
        return [Problem("connector.class", str(error))]
    except ConfigError as error:
        return list(error.problems) or [Problem("", str(error))]
    return []


def preflight(properties: Mapping[str, Any], timeout_ms: int) -> list[Problem]:
    """Why the source these (valid) properties name cannot be captured, found within about `timeout_ms` by
    connecting to it; [] when it can. Invalid properties are the validator's business: [] here."""
    try:
        kind, config = engine_config(properties)
    except (UnknownConnectorClass, ConfigError):
        return []
    if kind == POSTGRES:
        from connectors.postgres.preflight import problems

        return [Problem(prop, message) for prop, message in problems(config, timeout_ms)]
    if kind in (MYSQL, MARIADB):
        from connectors.mysql.checks import check_source, failures
        from connectors.mysql.incremental import check_signal_table

        settings = dataclasses.replace(config.connection, connect_timeout=max(1.0, timeout_ms / 1000))
        found = [Problem(_mysql_property(r.name, r.detail), r.message())
                 for r in failures(check_source(settings, config.snapshot_locking_mode))]
        if not found:
            signal_problem = check_signal_table(config, settings)
            found += [Problem("signal.data.collection", signal_problem)] if signal_problem else []
        return found
    from connectors.mongodb.client import connection_problem

    problem = connection_problem(config.mongo_client_options(), timeout_ms)
    if problem is None:
        return []
    return [Problem("mongodb.connection.string" if properties.get("mongodb.connection.string") else "mongodb.hosts",
                    problem)]


def secret_destination(properties: Mapping[str, Any]) -> tuple | None:
    """Where these properties make the connector log in, comparable between two configurations (a stored secret is
    only ever sent to the endpoint it was stored with): PostgreSQL's and MySQL/MariaDB's host and port, MongoDB's
    seed list or SRV name. None when they are not a valid configuration (the validator reports why)."""
    try:
        kind, config = engine_config(properties)
    except (UnknownConnectorClass, ConfigError):
        return None
    if kind == MONGODB:
        from connectors.mongodb.endpoint import mongodb_endpoint

        return (kind, *mongodb_endpoint(config.mongo_client_options()))
    return kind, str(config.hostname or "").strip().lower(), int(config.port)


def _mysql_property(check: str, detail: str) -> str:
    if check != "connection":
        return "database.user"  # grants and server variables: fixed by or for the connector's user
    return "database.password" if "refused the login" in detail else "database.hostname"

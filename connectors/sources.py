"""Which source a connector reads, from its `connector.class` (Debezium's class names, or short names).

A connector without `connector.class` is a MongoDB connector (every connector made before sources were
pluggable). A class this engine knows but has not wired to the core yet is refused with a message that names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectors.core.errors import UnknownConnectorClass

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
    from connectors.config import ConnectorConfig

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

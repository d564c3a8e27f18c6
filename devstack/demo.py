"""The demo connectors: `demo` captures the MongoDB `inventory` database the demo workload writes to; `demo-pg`
and `demo-mariadb` capture the `shop` schema the SQL workload writes to in PostgreSQL and MariaDB."""

from __future__ import annotations

import json

from devstack import demo_sql, settings

DEMO_NAME = "demo"
POSTGRES_DEMO = "demo-pg"
MARIADB_DEMO = "demo-mariadb"


def demo_properties() -> dict:
    return {
        "name": DEMO_NAME,
        "connector.class": "io.debezium.connector.mongodb.MongoDbConnector",
        "topic.prefix": DEMO_NAME,
        "mongodb.connection.string": settings.mongodb_uri(),
        "database.include.list": "inventory",
        "capture.mode": "change_streams_update_full",
        "provide.transaction.metadata": "true",
        "heartbeat.interval.ms": 5000,
        # stated, not left to the default: Kafka Connect's JsonConverter writes schemas unless told not to, this
        # platform writes them only when told to (docs/configuration.md)
        "schemas.enable": "false",
    }


def _store(manage, properties: dict) -> None:
    path = settings.STATE_DIR / f"{properties['name']}-connector.json"
    path.write_text(json.dumps({"name": properties["name"], "config": properties}, indent=2))
    path.chmod(0o600)  # it holds the source's password until the control plane has it encrypted
    try:
        manage("connector_create", str(path), "--update")
    finally:
        path.unlink(missing_ok=True)


def up(manage) -> list[str]:
    """Stores the demo connectors in the control plane (idempotent); the supervisor starts them on a worker."""
    _store(manage, demo_properties())
    demo_sql.prepare_postgres()
    _store(manage, demo_sql.postgres_properties(POSTGRES_DEMO))
    demo_sql.prepare_mariadb()
    _store(manage, demo_sql.mariadb_properties(MARIADB_DEMO))
    return [f"connector '{DEMO_NAME}' streaming inventory.* into Kafka topics {DEMO_NAME}.inventory.*",
            f"connector '{POSTGRES_DEMO}' streaming PostgreSQL shop.* into {POSTGRES_DEMO}.shop.*",
            f"connector '{MARIADB_DEMO}' streaming MariaDB shop.* into {MARIADB_DEMO}.shop.*"]

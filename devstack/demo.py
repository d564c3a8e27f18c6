"""The demo connector: captures the `inventory` database the demo workload writes to."""

from __future__ import annotations

import json

from devstack import settings

DEMO_NAME = "demo"


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
    }


def up(manage) -> str:
    """Stores the demo connector in the control plane (idempotent); the supervisor starts it on a worker."""
    path = settings.STATE_DIR / "demo-connector.json"
    path.write_text(json.dumps({"name": DEMO_NAME, "config": demo_properties()}, indent=2))
    manage("connector_create", str(path), "--update")
    return f"connector '{DEMO_NAME}' streaming inventory.* into Kafka topics {DEMO_NAME}.inventory.*"

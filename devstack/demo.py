"""The demo connector: captures the `inventory` database the demo workload writes to."""

from __future__ import annotations

import json
import sys

from devstack import settings
from devstack.process import ManagedProcess

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


def up(process: ManagedProcess) -> str:
    if process.is_running():
        return "connector already running"
    path = settings.STATE_DIR / "demo-connector.json"
    path.write_text(json.dumps(demo_properties(), indent=2))
    process.start([sys.executable, "-m", "connectors", "run", str(path),
                   "--bootstrap-servers", settings.kafka_bootstrap()], cwd=settings.PROJECT_ROOT)
    return f"connector '{DEMO_NAME}' streaming inventory.* into Kafka topics {DEMO_NAME}.inventory.*"

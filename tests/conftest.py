"""Shared fixtures: the real local stack (Redis, Kafka, the MongoDB emulator or MONGODB_URI).

`stack` starts what is not running yet and, at the end of the session, stops only what it started,
so a developer's running stack is left alone and CI leaves no process behind.
"""

from __future__ import annotations

import os
import uuid

import pytest

from devstack import stack as devstack


@pytest.fixture(scope="session")
def stack():
    started = devstack.up(["redis", "kafka", "mongo"], echo=lambda line: None)
    endpoints = devstack.endpoints()
    os.environ.setdefault("REDIS_URL", endpoints.redis_url)
    os.environ.setdefault("KAFKA_BOOTSTRAP_SERVERS", endpoints.kafka_bootstrap)
    yield endpoints
    if started and not os.environ.get("DEVSTACK_KEEP"):
        devstack.down(started, echo=lambda line: None)


@pytest.fixture
def unique_name(request):
    """A short name unique to this test, for topics, transactional ids and connectors."""
    base = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:40]
    return f"{base}-{uuid.uuid4().hex[:8]}"

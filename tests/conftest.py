"""Shared fixtures: the real local stack (Redis, Kafka, the MongoDB emulator or MONGODB_URI).

`stack` starts what is not running yet and, at the end of the session, stops only what it started,
so a developer's running stack is left alone and CI leaves no process behind. The topics the session created are
deleted first: all of them when it started Kafka, else those named after its `unique_name`s (tests/topic_cleanup.py).
"""

from __future__ import annotations

import os
import sys
import uuid

import pytest

from devstack import stack as devstack
from tests.topic_cleanup import SESSION_TAG, delete_new_topics, delete_session_topics, topic_names

# what the run ran against and the counts per suite; the long forms deselected unless --long
pytest_plugins = ("tests.run_summary", "tests.long_forms")


def pytest_configure(config: pytest.Config) -> None:
    # how a parallel run (`./cdc test`) hands out its work; its hooks exist only where xdist is on (not `-p no:xdist`)
    if config.pluginmanager.hasplugin("xdist"):
        from tests import parallel

        config.pluginmanager.register(parallel, "tests.parallel")


@pytest.fixture(scope="session")
def stack():
    started = devstack.up(["redis", "kafka", "mongo"], echo=lambda line: None)
    endpoints = devstack.endpoints()
    os.environ.setdefault("REDIS_URL", endpoints.redis_url)
    os.environ.setdefault("KAFKA_BOOTSTRAP_SERVERS", endpoints.kafka_bootstrap)
    keep = bool(os.environ.get("DEVSTACK_KEEP"))
    topics_before = topic_names(endpoints.kafka_bootstrap) if not keep else None
    yield endpoints
    if topics_before is not None and "kafka" in started:
        delete_new_topics(endpoints.kafka_bootstrap, topics_before)
    elif topics_before is not None:
        delete_session_topics(endpoints.kafka_bootstrap, topics_before)
    if started and not keep:
        devstack.down(started, echo=lambda line: None)


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    """Each test starts with no request counted against the rate limits (they live in Django's cache)."""
    yield
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def no_connector_outlives_its_test():
    """Stops the in-process connectors a test left running (it failed before finishing them)."""
    yield
    harness = sys.modules.get("tests.integration.pipeline_harness")  # none started if it was never imported
    if harness is not None:
        harness.stop_unfinished()


@pytest.fixture
def unique_name(request):
    """A short name unique to this test, for topics, transactional ids and connectors; it carries the session's tag,
    by which the session finds its topics on a shared broker to delete them."""
    base = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:33]
    return f"{base}-{SESSION_TAG}{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def mongo_rs():
    """A fresh emulated replica set per test module (own ports, own oplog); a real one when MONGODB_URI is set.

    Tests that script faults (step-down, kill) use the handle's methods and are skipped against a real server.
    """
    if os.environ.get("MONGODB_URI"):
        yield _ExternalMongo(os.environ["MONGODB_URI"])
        return
    from devstack.mongo import start_replica_set

    handle = start_replica_set(members=3, election_timeout=0.3, stepdown_election_delay=0.05, noop_interval=0.5)
    yield handle
    handle.stop()


class _ExternalMongo:
    def __init__(self, uri: str):
        self.uri = uri

    def __getattr__(self, name):
        pytest.skip(f"fault hook {name!r} needs the emulator (MONGODB_URI points at a real deployment)")

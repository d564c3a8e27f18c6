"""Fixtures for the emulator's own tests: one in-process replica set per session, a fresh database per test."""

from __future__ import annotations

import uuid

import pymongo
import pytest

from devstack.mongo import start_replica_set, start_standalone


@pytest.fixture(scope="session")
def rs():
    handle = start_replica_set(members=3, election_timeout=0.3, stepdown_election_delay=0.05, noop_interval=0)
    yield handle
    handle.stop()


@pytest.fixture(scope="session")
def client(rs):
    c = pymongo.MongoClient(rs.uri, serverSelectionTimeoutMS=10000)
    yield c
    c.close()


@pytest.fixture
def db(client, request):
    name = "t_" + uuid.uuid4().hex[:10]
    yield client[name]
    client.drop_database(name)


@pytest.fixture
def coll(db):
    return db["c"]


@pytest.fixture
def fresh_rs():
    """A replica set of its own, for tests that break things (kill members, cap the oplog...)."""
    handle = start_replica_set(members=3, election_timeout=0.3, stepdown_election_delay=0.05, noop_interval=0)
    yield handle
    handle.stop()


@pytest.fixture(scope="session")
def spec_runner(rs, client):
    from tests.emulator.unified import UnifiedRunner

    return UnifiedRunner(rs.uri, client, rs)


@pytest.fixture(scope="session")
def spec_single_runner():
    """The spec runner on the emulator's standalone mode, for tests whose only topology is `single`."""
    from tests.emulator.unified import UnifiedRunner

    handle = start_standalone()
    internal = pymongo.MongoClient(handle.uri, serverSelectionTimeoutMS=10000)
    yield UnifiedRunner(handle.uri, internal, handle, topology="single")
    internal.close()
    handle.stop()


@pytest.fixture(scope="session")
def spec_sharded_runner():
    """The spec runner on an emulated sharded cluster (through its mongos), for tests that need `sharded`."""
    from devstack.mongo.sharded_handle import start_sharded_cluster
    from tests.emulator.unified import UnifiedRunner

    handle = start_sharded_cluster(shards=2, members=3, election_timeout=0.3, stepdown_election_delay=0.05,
                                   noop_interval=0)
    internal = pymongo.MongoClient(handle.uri, serverSelectionTimeoutMS=10000)
    yield UnifiedRunner(handle.uri, internal, handle.mongos_fail_points(), topology="sharded")
    internal.close()
    handle.stop()

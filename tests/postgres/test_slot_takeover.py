"""A replication slot held by a pipeline of the same connector that stopped answering (a frozen worker whose lease
went to another, a killed runner whose connection the server has not seen close) is taken over at once: the new
pipeline ends that server process instead of waiting for wal_sender_timeout. A slot held by anything else is left
alone. On a PostgreSQL server of the test's own (devstack.private_db)."""

from __future__ import annotations

import psycopg
import pytest

from connectors.postgres.replication import ReplicationStream
from connectors.postgres.source import Database, SlotSource
from tests.postgres.test_server_restart import connector_config, ids, insert, prepared
from tests.postgres.test_source import Running
from tests.type_check import records_at_least

pytestmark = [pytest.mark.integration]


def holder(config, application_name: str) -> ReplicationStream:
    """A session streaming from the connector's slot that then never answers; the server never times it out
    (wal_sender_timeout=0 for this session), so only ending it frees the slot."""
    dsn = config.dsn().replace(f"application_name='{config.application_name}'",
                               f"application_name='{application_name}'")
    stream = ReplicationStream(f"{dsn} options='-c wal_sender_timeout=0'", config.slot_name,
                               [config.publication_name])
    stream.start(0)
    return stream


def slot_holder_pid(server, dbname: str) -> int | None:
    with psycopg.connect(server.admin_dsn(dbname), autocommit=True) as conn:
        row = conn.execute("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s", (dbname,)).fetchone()
    return row[0] if row else None


def alive(server, pid: int) -> bool:
    with psycopg.connect(server.admin_dsn(), autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone() is not None


@pytest.fixture
def slot_made(private_pg, stack, unique_name):
    """A connector whose slot exists (its snapshot ran), stopped: (config, topic)."""
    name = "pg" + unique_name.replace("-", "")[-12:]
    dbname, topic = f"r_{name}", f"{name}.public.items"
    prepared(private_pg, dbname)
    config = connector_config(private_pg, dbname, name)
    first = Running(config, stack.kafka_bootstrap)
    try:
        records_at_least(first, stack.kafka_bootstrap, topic, 1)
    finally:
        first.stop()
    return config, topic


def test_a_slot_held_by_an_unanswering_pipeline_of_the_same_connector_is_taken_over(private_pg, stack, slot_made):
    config, topic = slot_made
    zombie = holder(config, config.application_name)
    zombie_pid = slot_holder_pid(private_pg, config.slot_name)
    assert zombie_pid is not None
    second = Running(config, stack.kafka_bootstrap)
    try:
        insert(private_pg, config.dbname, 2)
        records = records_at_least(second, stack.kafka_bootstrap, topic, 2)
    finally:
        second.stop()
        zombie.close()
    assert ids(records) == [1, 2]
    assert not alive(private_pg, zombie_pid)


def test_a_slot_held_by_another_application_is_left_alone(private_pg, slot_made):
    config, _ = slot_made
    other = holder(config, "someone-else")
    try:
        pid = slot_holder_pid(private_pg, config.slot_name)
        refused = f'replication slot "{config.slot_name}" is active for PID {pid}'
        assert SlotSource(config, Database(config.dbname)).take_over_slot(refused) is False
        assert alive(private_pg, pid) and slot_holder_pid(private_pg, config.slot_name) == pid
    finally:
        other.close()

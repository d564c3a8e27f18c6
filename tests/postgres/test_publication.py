"""Publication autocreate modes, slot status (retained WAL) and replica identity checks on the real server."""

from __future__ import annotations

import os

import psycopg2
import psycopg2.extensions
import pytest

from connectors.postgres.publication import (
    PublicationError,
    ensure_publication,
    publication_tables,
    slot_status,
    tables_without_replica_identity,
)
from connectors.postgres.replication import ReplicationStream


@pytest.fixture
def shop(pg_db):
    pg_db.execute("CREATE TABLE customers (id int PRIMARY KEY, name text)")
    pg_db.execute("CREATE TABLE orders (id int PRIMARY KEY, customer int)")
    pg_db.execute("CREATE TABLE audit (at timestamptz, what text)")  # no primary key
    conn = pg_db.connect()
    yield pg_db, conn.cursor()
    conn.close()


def test_filtered_publication_is_created_then_kept_in_step(shop):
    _, cur = shop
    assert ensure_publication(cur, "pub", "filtered", [("public", "orders"), ("public", "customers")]) == "created"
    assert publication_tables(cur, "pub") == [("public", "customers"), ("public", "orders")]
    assert ensure_publication(cur, "pub", "filtered", [("public", "customers"), ("public", "orders")]) == "exists"
    assert ensure_publication(cur, "pub", "filtered", [("public", "customers")]) == "updated"
    assert publication_tables(cur, "pub") == [("public", "customers")]
    with pytest.raises(PublicationError, match="no table matches"):
        ensure_publication(cur, "pub", "filtered", [])
    with pytest.raises(PublicationError, match='cannot update publication .*"public.nope" does not exist'):
        ensure_publication(cur, "pub", "filtered", [("public", "nope")])


def test_disabled_mode_needs_an_existing_publication(shop):
    _, cur = shop
    with pytest.raises(PublicationError, match="'pub' does not exist and publication.autocreate.mode is disabled"):
        ensure_publication(cur, "pub", "disabled")
    cur.execute("CREATE PUBLICATION pub FOR TABLE customers")
    assert ensure_publication(cur, "pub", "disabled") == "exists"
    with pytest.raises(PublicationError, match="choose one of all_tables, disabled, filtered"):
        ensure_publication(cur, "pub", "everything")


@pytest.mark.skipif(bool(os.environ.get("POSTGRES_DSN")), reason="relies on the cdc role not being superuser")
def test_all_tables_needs_a_superuser(shop):
    _, cur = shop
    with pytest.raises(PublicationError, match="cannot create publication 'pub' .all_tables.: .*superuser"):
        ensure_publication(cur, "pub", "all_tables")


def test_all_tables_as_superuser(shop, postgres):
    db, _ = shop
    conn = psycopg2.connect(psycopg2.extensions.make_dsn(postgres.admin_dsn, dbname=db.name))
    conn.autocommit = True
    try:
        cur = conn.cursor()
        assert ensure_publication(cur, "every", "all_tables") == "created"
        assert ensure_publication(cur, "every", "all_tables") == "exists"
        assert ("public", "audit") in publication_tables(cur, "every")
    finally:
        conn.close()


def test_tables_without_replica_identity(shop):
    db, cur = shop
    db.execute("CREATE TABLE flags (k text NOT NULL, v text)")
    db.execute("CREATE UNIQUE INDEX flags_k ON flags (k)")
    db.execute("ALTER TABLE flags REPLICA IDENTITY USING INDEX flags_k")
    db.execute("ALTER TABLE orders REPLICA IDENTITY NOTHING")
    tables = [("public", "customers"), ("public", "orders"), ("public", "audit"), ("public", "flags")]
    assert tables_without_replica_identity(cur, tables) == [
        ("public", "orders", "REPLICA IDENTITY NOTHING"),
        ("public", "audit", "no primary key and REPLICA IDENTITY DEFAULT"),
    ]
    db.execute("ALTER TABLE audit REPLICA IDENTITY FULL")
    assert [t for _, t, _ in tables_without_replica_identity(cur, tables)] == ["orders"]


def test_slot_status_reports_retained_wal(shop):
    db, cur = shop
    assert slot_status(cur, db.name + "_s") is None
    ensure_publication(cur, "pub", "filtered", [("public", "customers")])
    stream = ReplicationStream(db.dsn, db.name + "_s", ["pub"])
    try:
        stream.create_slot(export_snapshot=False)
        before = slot_status(cur, db.name + "_s")
        assert (before.plugin, before.database, before.active) == ("pgoutput", db.name, False)
        db.execute("INSERT INTO customers SELECT g, repeat('x', 200) FROM generate_series(1, 2000) g")
        after = slot_status(cur, db.name + "_s")
        assert after.retained_wal_bytes >= before.retained_wal_bytes + 2000 * 200  # unacknowledged WAL is kept
        assert after.wal_status == "reserved"
        stream.start()
        assert slot_status(cur, db.name + "_s").active is True
    finally:
        stream.close()

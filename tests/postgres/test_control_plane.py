"""PostgreSQL connectors through the control plane, against the real server.

- The REST API checks the server before saving (wrong password, unknown database, a publication missing under
  `disabled` or that only a superuser could create under `all_tables`), stores `database.password` encrypted and
  never returns it, records the source, and refuses what a PostgreSQL connector cannot do (an ad-hoc snapshot
  without a signal table, MongoDB's timestamp resets) with a 409 that says why.
- Kafka Connect's validate takes the plugin from its path.
- A Celery worker, as deployed, runs the stored connector: rows inserted before and after a pause reach Kafka
  exactly once, the partition is reported under the database's name, /metrics has its slot's retained WAL, its
  offset is shown, and a reset to `snapshot` takes a new snapshot of every row exactly once.
- An ad-hoc incremental snapshot asked through the REST API is taken up by the worker's pipeline and ends `done`
  with every row of the table read once (op "r", source.snapshot "incremental").
"""

from __future__ import annotations

import json

import psycopg2.extensions
import pytest
from django.db import connection

from tests.api_support import admin_client, no_redis  # noqa: F401 - fixtures
from tests.integration.kafka_reading import committed_row_events, committed_row_ids
from tests.platform_processes import Platform

pytestmark = [pytest.mark.integration]

REDIS_DB = 8  # apart from a running demo (0) and the other process tests (9-15)
PG_CLASS = "io.debezium.connector.postgresql.PostgresConnector"


def pg_properties(pg_db, name: str) -> dict:
    dsn = psycopg2.extensions.parse_dsn(pg_db.dsn)
    return {"connector.class": PG_CLASS, "database.hostname": dsn["host"], "database.port": int(dsn["port"]),
            "database.user": dsn["user"], "database.dbname": pg_db.name, "slot.name": f"s_{name}",
            "offset.storage.topic": f"{name}.offsets", "poll.interval.ms": 50,
            "publication.autocreate.mode": "filtered"}


@pytest.mark.django_db
def test_the_api_checks_the_server_and_keeps_the_password_secret(pg_db, stack, admin_client, settings):  # noqa: F811
    settings.CDC_CONNECTIVITY_CHECK_MS = 5000
    password = psycopg2.extensions.parse_dsn(pg_db.dsn)["password"]
    config = pg_properties(pg_db, "pgapi")
    body = {"name": "pgapi", "topic_prefix": "pgapi", "password": password, "config": config}

    wrong = admin_client.post("/api/connectors/", {**body, "password": "not-it"}, format="json")
    assert wrong.status_code == 400, wrong.json()
    assert "refused the login" in wrong.json()["password"][0]
    assert "not-it" not in json.dumps(wrong.json())

    missing = admin_client.post("/api/connectors/", {**body, "config": {**config, "database.dbname": "nope"}},
                                format="json")
    assert missing.status_code == 400
    port = config["database.port"]
    assert missing.json()["config"]["database.dbname"] == [f"PostgreSQL at 127.0.0.1:{port} has no database 'nope'"]

    unpublished = admin_client.post("/api/connectors/", {**body, "config": {
        **config, "publication.autocreate.mode": "disabled", "publication.name": "absent"}}, format="json")
    assert unpublished.status_code == 400
    assert "publication 'absent' does not exist" in unpublished.json()["config"]["publication.name"][0]

    everything = admin_client.post("/api/connectors/", {**body, "config": {
        **config, "publication.autocreate.mode": "all_tables"}}, format="json")
    assert everything.status_code == 400
    assert "needs a superuser" in everything.json()["config"]["publication.autocreate.mode"][0]

    created = admin_client.post("/api/connectors/", body, format="json")
    assert created.status_code == 201, created.json()
    shown = created.json()
    assert shown["source"] == "postgres" and shown["has_password"] is True
    assert password not in json.dumps(shown) and "database.password" not in shown["config"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT password, source FROM connectors_connector WHERE name = 'pgapi'")
        stored, source = cursor.fetchone()
    assert password not in stored and source == "postgres"  # encrypted at rest

    snapshot = admin_client.post("/api/connectors/pgapi/snapshot/", {"collections": ["public.t"]}, format="json")
    assert snapshot.status_code == 409, snapshot.content
    assert "incremental snapshots need signal.data.collection: a signal table" in json.dumps(snapshot.json())
    bad = admin_client.post("/api/connectors/pgapi/snapshot/", {"collections": ["t"], "filter": "a = 1; DROP x"},
                            format="json")
    assert bad.status_code == 400, bad.content
    assert "is not <schema>.<table>" in json.dumps(bad.json()) and "without ';'" in json.dumps(bad.json())
    by_time = admin_client.post("/api/connectors/pgapi/offsets/reset/",
                                {"mode": "timestamp", "timestamp": 1700000000000, "stop": True}, format="json")
    assert by_time.status_code == 409, by_time.content
    assert "a PostgreSQL connector resets to latest, snapshot, initial" in by_time.json()["detail"]
    assert admin_client.get("/api/connectors/pgapi/offsets/").json()["offsets"] == []  # never ran

    validated = admin_client.put("/connect/connector-plugins/PostgresConnector/config/validate",
                                 {"name": "x", "topic.prefix": "x", **config, "database.password": "not-it"},
                                 format="json").json()
    assert validated["error_count"] == 1
    errors = {c["value"]["name"]: c["value"]["errors"] for c in validated["configs"] if c["value"]["errors"]}
    assert list(errors) == ["database.password"] and "refused the login" in errors["database.password"][0]


@pytest.fixture
def platform(pg_db, stack, tmp_path):  # after pg_db: stopped before its database is dropped
    processes = Platform.with_worker(stack, tmp_path, REDIS_DB)
    yield processes
    processes.stop()


def test_a_celery_worker_runs_a_stored_postgres_connector_exactly_once_across_a_pause(platform, pg_db, stack,
                                                                                     unique_name):
    name = "pgw" + unique_name.replace("-", "")[-12:]
    pg_db.execute("CREATE TABLE items (id int PRIMARY KEY, label text)")
    pg_db.execute("INSERT INTO items SELECT g, 'before' FROM generate_series(1, 50) g")
    properties = {"name": name, "topic.prefix": name, **pg_properties(pg_db, name),
                  "database.password": psycopg2.extensions.parse_dsn(pg_db.dsn)["password"],
                  "table.include.list": "public.items", "topic.creation.default.partitions": 1}
    platform.create_connector(properties)
    topic = f"{name}.public.items"
    bootstrap = stack.kafka_bootstrap
    platform.wait_for(lambda: len(committed_row_ids(bootstrap, topic)) >= 50, 90, "the snapshot of 50 rows")
    assert platform.observed_phases(name) == {pg_db.name: "streaming"}
    scrape = "from web.dashboard.prometheus import exposition\nprint(exposition('')[0].decode())"
    metrics = platform.wait_for(lambda: "cdc_postgres_slot_retained_wal_bytes{" in (out := platform.django(scrape))
                                and out, 30, "the slot's retained WAL in /metrics")
    assert f'connector="{name}",replica_set="{pg_db.name}",slot="s_{name}"' in metrics

    pg_db.execute("INSERT INTO items SELECT g, 'streamed' FROM generate_series(51, 80) g")
    platform.wait_for(lambda: len(committed_row_ids(bootstrap, topic)) >= 80, 60, "30 streamed rows")

    platform.request_state(name, "paused")
    platform.wait_for(lambda: platform.observed_phases(name) == {pg_db.name: "stopped"}, 60, "the pipeline to stop")
    pg_db.execute("INSERT INTO items SELECT g, 'while paused' FROM generate_series(81, 100) g")
    platform.request_state(name, "running")
    ids = platform.wait_for(lambda: (found := committed_row_ids(bootstrap, topic)) and len(found) >= 100 and found, 90,
                            "the rows written while paused")
    assert sorted(ids) == list(range(1, 101)), "rows lost or duplicated"

    shown = json.loads(platform.django(
        "import json\nfrom web.connectors import services\nfrom web.connectors.offsets import describe\n"
        "from web.connectors.models import Connector\n"
        f"records = services.read_offsets(Connector.objects.get(name={name!r}))\n"
        "print(json.dumps({p: describe(r) for p, r in records.items()}))").strip().splitlines()[-1])
    assert set(shown) == {pg_db.name} and shown[pg_db.name]["position"]["lsn_proc"] > 0

    platform.django("from web.connectors import services\nfrom web.connectors.models import Connector\n"
                    f"services.reset_offsets(Connector.objects.get(name={name!r}), 'snapshot', user=None, "
                    "source='system', stop=True)")
    platform.request_state(name, "running")
    reads = platform.wait_for(
        lambda: (found := [row for op, row in committed_row_events(bootstrap, topic) if op == "r"])
        and len(found) >= 150 and found, 90, "a new snapshot after the reset")
    assert sorted(reads[50:]) == list(range(1, 101)), "the new snapshot lost or repeated rows"


@pytest.mark.django_db
def test_tables_without_a_replica_identity_are_refused_before_saving(pg_db, admin_client, settings):  # noqa: F811
    settings.CDC_CONNECTIVITY_CHECK_MS = 5000
    pg_db.execute("CREATE TABLE keyed (id int PRIMARY KEY, v text)")
    pg_db.execute("CREATE TABLE keyless (v text)")
    password = psycopg2.extensions.parse_dsn(pg_db.dsn)["password"]
    config = pg_properties(pg_db, "pgident")
    body = {"name": "pgident", "topic_prefix": "pgident", "password": password, "config": config}

    refused = admin_client.post("/api/connectors/", body, format="json")
    assert refused.status_code == 400, refused.json()
    message = refused.json()["config"]["table.include.list"][0]
    assert "public.keyless (no primary key and REPLICA IDENTITY DEFAULT)" in message, message
    assert "keyed" not in message and "REPLICA IDENTITY FULL" in message and "table.exclude.list" in message
    assert pg_db.execute("SELECT count(*) FROM pg_publication")[0][0] == 0  # nothing was made

    left_out = admin_client.post("/api/connectors/", {**body, "config": {
        **config, "table.exclude.list": "public.keyless"}}, format="json")
    assert left_out.status_code == 201, left_out.json()

    pg_db.execute("ALTER TABLE keyless REPLICA IDENTITY FULL")
    full = admin_client.post("/api/connectors/", {**body, "name": "pgident2", "topic_prefix": "pgident2",
                                                  "config": {**config, "slot.name": "s_pgident2"}}, format="json")
    assert full.status_code == 201, full.json()


def test_a_publication_for_all_tables_is_refused_when_it_would_publish_a_table_without_identity(postgres, pg_db):
    from connectors.postgres.config import PostgresConfig
    from connectors.postgres.preflight import problems

    pg_db.execute("CREATE TABLE captured (id int PRIMARY KEY)")
    pg_db.execute("CREATE TABLE app_log (line text) ")  # not captured, but FOR ALL TABLES would publish it
    admin = psycopg2.extensions.parse_dsn(postgres.admin_dsn)
    properties = {
        "name": "pgall", "topic.prefix": "pgall", "connector.class": PG_CLASS, "database.hostname": admin["host"],
        "database.port": int(admin["port"]), "database.user": admin["user"],
        "database.password": admin.get("password", ""), "database.dbname": pg_db.name,
        "table.include.list": "public.captured"}
    found = problems(PostgresConfig.from_properties(properties))
    assert [prop for prop, _ in found] == ["publication.autocreate.mode"], found
    assert "public.app_log" in found[0][1] and "publication.autocreate.mode=filtered" in found[0][1]
    filtered = {**properties, "publication.autocreate.mode": "filtered"}
    assert problems(PostgresConfig.from_properties(filtered)) == []


def test_an_ad_hoc_snapshot_through_the_rest_api(platform, pg_db, stack, unique_name):
    name = "pgs" + unique_name.replace("-", "")[-12:]
    pg_db.execute("CREATE TABLE items (id int PRIMARY KEY, label text)")
    pg_db.execute("INSERT INTO items SELECT g, 'r' || g FROM generate_series(1, 300) g")
    pg_db.execute("CREATE TABLE signals (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data text)")
    properties = {"name": name, "topic.prefix": name, **pg_properties(pg_db, name),
                  "database.password": psycopg2.extensions.parse_dsn(pg_db.dsn)["password"],
                  "table.include.list": "public.items", "snapshot.mode": "no_data",
                  "signal.data.collection": "public.signals", "incremental.snapshot.chunk.size": 100,
                  "topic.creation.default.partitions": 1}
    platform.create_connector(properties)
    platform.wait_for(lambda: platform.observed_phases(name) == {pg_db.name: "streaming"}, 90, "streaming")
    api = platform.api_as('snap-operator')

    status, accepted = api("POST", f"/api/connectors/{name}/snapshot/",
                           {"collections": ["public.items"], "filter": "id > 100"})
    assert status == 202 and accepted["status"] == "requested", accepted
    topic = f"{name}.public.items"
    bootstrap = stack.kafka_bootstrap

    def done():
        _, rows = api("GET", f"/api/connectors/{name}/requests/")
        mine = [r for r in rows if r["kind"] == "snapshot" and r["id"] == accepted["request"]]
        return mine and mine[0]["status"] in ("done", "failed") and mine[0]

    ended = platform.wait_for(done, 90, "the snapshot request to end")
    assert ended["status"] == "done", ended
    reads = platform.wait_for(lambda: (found := [row for op, row in committed_row_events(bootstrap, topic)
                                                 if op == "r"]) and len(found) >= 200 and found, 60, "200 reads")
    assert sorted(reads) == list(range(101, 301)), "rows lost or read twice"


@pytest.mark.django_db
def test_column_hash_salts_are_stored_encrypted_and_never_shown(pg_db, admin_client, settings):  # noqa: F811
    from web.connectors.definitions import engine_config
    from web.connectors.models import Connector

    settings.CDC_CONNECTIVITY_CHECK_MS = 5000
    salt = "pep.per-XYZ"  # ASCII: JSON escapes no character of it
    password = psycopg2.extensions.parse_dsn(pg_db.dsn)["password"]
    config = {**pg_properties(pg_db, "pghash"), f"column.mask.hash.SHA-256.with.salt.{salt}": r"public\.t\.email",
              f"column.mask.hash.v2.MD5.with.salt.{salt}2": r"public\.t\.note"}
    body = {"name": "pghash", "topic_prefix": "pghash", "password": password, "config": config}

    refused = admin_client.post("/api/connectors/", {**body, "config": {
        **config, f"column.mask.hash.SHA-257.with.salt.{salt}": "a"}}, format="json")
    assert refused.status_code == 400, refused.json()
    assert salt not in json.dumps(refused.json())
    assert "unknown hash algorithm 'SHA-257'" in json.dumps(refused.json())

    created = admin_client.post("/api/connectors/", body, format="json")
    assert created.status_code == 201, created.json()
    shown = created.json()["config"]
    assert shown["column.mask.hash.SHA-256.with.salt.********"] == r"public\.t\.email"
    assert shown["column.mask.hash.v2.MD5.with.salt.********"] == r"public\.t\.note"
    for response in (admin_client.get("/api/connectors/pghash/"), admin_client.get("/connect/connectors/pghash/config"),
                     admin_client.get("/connect/connectors/pghash")):
        assert response.status_code == 200, response.content
        assert salt not in response.content.decode(), response.content
    assert salt not in created.content.decode()
    with connection.cursor() as cursor:
        cursor.execute("SELECT properties FROM connectors_connector WHERE name = 'pghash'")
        (properties,) = cursor.fetchone()
        cursor.execute("SELECT f.kind, f.argument, f.salt FROM connectors_connectorfilter f "
                       "JOIN connectors_connector c ON c.id = f.connector_id WHERE c.name = 'pghash' "
                       "ORDER BY f.argument")
        rows = cursor.fetchall()
        cursor.execute("SELECT before, after FROM connectors_auditentry WHERE target LIKE %s", ["%pghash%"])
        audits = cursor.fetchall()
    assert salt not in str(properties) and audits and salt not in str(audits)
    assert [(kind, argument) for kind, argument, _ in rows] == [("column_mask_hash", "SHA-256"),
                                                              ("column_mask_hash", "v2.MD5")]
    assert not any(salt in stored for _, _, stored in rows)  # encrypted at rest

    # a client sends back what it was shown: the masked salts mean "keep the stored ones"
    put = admin_client.put("/api/connectors/pghash/", {"name": "pghash", "topic_prefix": "pghash",
                                                       "config": {**shown, "max.batch.size": 7}}, format="json")
    assert put.status_code == 200, put.json()
    rules = engine_config(Connector.objects.get(name="pghash")).column_rules
    assert rules.hash_for("public.t.email").salt.reveal() == salt
    assert rules.hash_for("public.t.note").salt.reveal() == salt + "2" and rules.hash_for("public.t.note").version == 2

"""MariaDB connectors through the control plane, against the real server.

- The REST API checks the server before saving (a wrong password is reported on `password`), stores
  `database.password` encrypted and never returns it, and records the source.
- A Celery worker, as deployed, runs the stored connector: rows inserted before and after a pause reach Kafka
  exactly once, and the partition is reported under the connector's topic prefix (the server).
- Ad-hoc incremental snapshots: refused with a 409 without `signal.data.collection`, 400 for a table that is not
  `<database>.<table>`; a request through the REST API is taken up by the worker's pipeline and ends `done` with
  the filtered rows read once; the dashboard's form asks for tables.
"""

from __future__ import annotations

import json
import random
import uuid

import pytest
from django.db import connection

from tests.api_support import admin_client, no_redis  # noqa: F401 - fixtures
from tests.integration.kafka_reading import committed_row_events, committed_row_ids
from tests.platform_processes import Platform

pytestmark = [pytest.mark.integration]

REDIS_DB = 7  # apart from a running demo (0) and the other process tests (8-15)


def mariadb_properties(mariadb, database: str, name: str) -> dict:
    return {"connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
            "database.hostname": mariadb.cdc.host, "database.port": mariadb.cdc.port,
            "database.user": mariadb.cdc.user, "database.server.id": random.randint(10_000, 4_000_000),
            "database.include.list": database, "offset.storage.topic": f"{name}.offsets",
            "poll.interval.ms": 100}


@pytest.mark.django_db
def test_the_api_checks_the_server_and_keeps_the_password_secret(mariadb, mariadb_db, admin_client,  # noqa: F811
                                                                 settings, request):
    settings.CDC_CONNECTIVITY_CHECK_MS = 5000
    user, password = f"cp{uuid.uuid4().hex[:6]}", f"Pw-{uuid.uuid4().hex}"  # a password found nowhere else
    mariadb.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'",
                    f"GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{user}'@'%'")
    request.addfinalizer(lambda: mariadb.execute(f"DROP USER '{user}'@'%'"))
    body = {"name": "mdbapi", "topic_prefix": "mdbapi", "password": password,
            "config": {**mariadb_properties(mariadb, mariadb_db, "mdbapi"), "database.user": user}}

    wrong = admin_client.post("/api/connectors/", {**body, "password": "not-it"}, format="json")
    assert wrong.status_code == 400, wrong.json()
    assert "refused the login" in wrong.json()["password"][0]
    assert "not-it" not in json.dumps(wrong.json())

    created = admin_client.post("/api/connectors/", body, format="json")
    assert created.status_code == 201, created.json()
    shown = created.json()
    assert shown["source"] == "mariadb" and shown["has_password"] is True
    assert password not in json.dumps(shown) and "database.password" not in shown["config"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT password FROM connectors_connector WHERE name = 'mdbapi'")
        assert password not in cursor.fetchone()[0]  # encrypted at rest
    snapshot = admin_client.post("/api/connectors/mdbapi/snapshot/", {"collections": [f"{mariadb_db}.t"]},
                                 format="json")
    assert snapshot.status_code == 409, snapshot.content
    assert "need signal.data.collection: a signal table (<database>.<table>" in snapshot.json()["detail"]
    bad = admin_client.post("/api/connectors/mdbapi/snapshot/", {"collections": ["t"]}, format="json")
    assert bad.status_code == 400 and "is not <database>.<table>" in json.dumps(bad.json()), bad.content
    connect_view = admin_client.get("/connect/connectors/mdbapi").json()
    assert connect_view["config"]["connector.class"] == "io.debezium.connector.mariadb.MariaDbConnector"
    assert connect_view["config"]["database.password"] != password


@pytest.fixture
def platform(mariadb, stack, tmp_path):
    processes = Platform.with_worker(stack, tmp_path, REDIS_DB)
    yield processes
    processes.stop()


def test_a_celery_worker_runs_a_stored_mariadb_connector_exactly_once_across_a_pause(platform, mariadb, mariadb_db,
                                                                                    stack, unique_name):
    name = "mdbw" + unique_name.replace("-", "")[-12:]
    mariadb.execute("CREATE TABLE items (id int PRIMARY KEY, label varchar(20))",
                    "INSERT INTO items SELECT seq, 'before' FROM seq_1_to_50", database=mariadb_db)
    platform.create_connector({"name": name, "topic.prefix": name, **mariadb_properties(mariadb, mariadb_db, name),
                               "database.password": mariadb.cdc.password,
                               "topic.creation.default.partitions": 1})
    topic = f"{name}.{mariadb_db}.items"
    bootstrap = stack.kafka_bootstrap
    platform.wait_for(lambda: len(committed_row_ids(bootstrap, topic)) >= 50, 90, "the snapshot of 50 rows")
    assert platform.observed_phases(name) == {name: "streaming"}

    mariadb.execute("INSERT INTO items SELECT seq, 'streamed' FROM seq_51_to_80", database=mariadb_db)
    platform.wait_for(lambda: len(committed_row_ids(bootstrap, topic)) >= 80, 60, "30 streamed rows")
    scrape = "from web.dashboard.prometheus import exposition\nprint(exposition('')[0].decode())"
    metrics = platform.wait_for(lambda: "cdc_mysql_binlog_behind_bytes{" in (out := platform.django(scrape))
                                and out, 30, "the binlog position against the server's in /metrics")
    assert f'cdc_mysql_binlog_files{{connector="{name}",replica_set="{name}"}}' in metrics
    page = platform.django(
        "from django.test import Client\nfrom django.contrib.auth.models import Group, User\n"
        "viewer, _ = User.objects.get_or_create(username='binlog-viewer')\n"
        "viewer.groups.add(Group.objects.get_or_create(name='viewer')[0])\nclient = Client()\n"
        f"client.force_login(viewer)\nprint(client.get('/connectors/{name}/', HTTP_HOST='127.0.0.1').content.decode())")
    assert 'aria-label="Binlog"' in page and "Committed to Kafka" in page

    platform.request_state(name, "paused")
    platform.wait_for(lambda: platform.observed_phases(name) == {name: "stopped"}, 60, "the pipeline to stop")
    mariadb.execute("INSERT INTO items SELECT seq, 'while paused' FROM seq_81_to_100", database=mariadb_db)
    platform.request_state(name, "running")
    ids = platform.wait_for(lambda: (found := committed_row_ids(bootstrap, topic)) and len(found) >= 100 and found,
                            90, "the rows written while paused")
    assert sorted(ids) == list(range(1, 101)), "rows lost or duplicated"


def test_an_ad_hoc_snapshot_through_the_rest_api(platform, mariadb, mariadb_db, stack, unique_name):
    name = "mdbs" + unique_name.replace("-", "")[-12:]
    mariadb.execute("CREATE TABLE items (id int PRIMARY KEY, label varchar(20))",
                    "INSERT INTO items SELECT seq, 'before' FROM seq_1_to_300",
                    "CREATE TABLE signals (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data TEXT)",
                    f"GRANT INSERT, DELETE ON `{mariadb_db}`.`signals` TO '{mariadb.cdc.user}'@'%'",
                    database=mariadb_db)
    platform.create_connector({"name": name, "topic.prefix": name, **mariadb_properties(mariadb, mariadb_db, name),
                               "database.password": mariadb.cdc.password, "snapshot.mode": "no_data",
                               "signal.data.collection": f"{mariadb_db}.signals",
                               "incremental.snapshot.chunk.size": 100, "topic.creation.default.partitions": 1})
    platform.wait_for(lambda: platform.observed_phases(name) == {name: "streaming"}, 90, "streaming")
    api = platform.api_as('snap-operator')

    page = platform.django(
        "from django.test import Client\nfrom django.contrib.auth.models import User\nclient = Client()\n"
        "client.force_login(User.objects.get(username='snap-operator'))\n"
        f"print(client.get('/connectors/{name}/', HTTP_HOST='127.0.0.1').content.decode())")
    assert "Snapshot tables" in page and "&lt;database&gt;.&lt;table&gt; names" in page
    assert 'id="snapshot-refusal"' not in page

    status, accepted = api("POST", f"/api/connectors/{name}/snapshot/",
                           {"collections": [f"{mariadb_db}.items"], "filter": "id > 100"})
    assert status == 202 and accepted["status"] == "requested", accepted

    def done():
        _, rows = api("GET", f"/api/connectors/{name}/requests/")
        mine = [r for r in rows if r["kind"] == "snapshot" and r["id"] == accepted["request"]]
        return mine and mine[0]["status"] in ("done", "failed") and mine[0]

    ended = platform.wait_for(done, 90, "the snapshot request to end")
    assert ended["status"] == "done", ended
    topic, bootstrap = f"{name}.{mariadb_db}.items", stack.kafka_bootstrap
    reads = platform.wait_for(lambda: (found := [row for op, row in committed_row_events(bootstrap, topic)
                                                 if op == "r"]) and len(found) >= 200 and found, 60, "200 reads")
    assert sorted(reads) == list(range(101, 301)), "rows lost or read twice"

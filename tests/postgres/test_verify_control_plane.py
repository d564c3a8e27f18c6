"""Verify through the control plane, as deployed: `POST /api/connectors/<name>/verify/` (operator; a viewer may
only read) queues a run that a Celery worker on the `snapshot` queue carries out against the real PostgreSQL and
Kafka; the run's report is stored and listed, and /metrics exports `cdc_verify_mismatched_rows`."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import psycopg2.extensions
import pytest

from tests.integration.kafka_reading import committed_row_ids
from tests.platform_processes import Platform
from tests.postgres.test_control_plane import pg_properties
from tests.verify_corruption import after_of, latest_event, produce, with_after

pytestmark = [pytest.mark.integration]

REDIS_DB = 7  # apart from a running demo (0) and the other process tests


@pytest.fixture
def platform(pg_db, stack, tmp_path):  # after pg_db: stopped before its database is dropped
    processes = Platform(stack, tmp_path, REDIS_DB)
    processes.migrate()
    processes.start_worker("worker", queues="streaming,default,snapshot", concurrency=3)
    processes.start_beat()
    yield processes
    processes.stop()


def token_of(platform, user: str, role: str) -> str:
    return platform.django(
        "from django.contrib.auth.models import Group, User\n"
        "from rest_framework.authtoken.models import Token\n"
        f"user = User.objects.create_user({user!r})\n"
        f"user.groups.add(Group.objects.get(name={role!r}))\n"
        "print(Token.objects.create(user=user).key)\n").strip().splitlines()[-1]


def test_an_operator_starts_verify_through_the_api_and_the_worker_stores_its_report(platform, pg_db, stack,
                                                                                   unique_name):
    name = "pgv" + unique_name.replace("-", "")[-12:]
    pg_db.execute("CREATE TABLE items (id int PRIMARY KEY, label text)")
    pg_db.execute("INSERT INTO items SELECT g, 'r' || g FROM generate_series(1, 50) g")
    properties = {"name": name, "topic.prefix": name, **pg_properties(pg_db, name),
                  "database.password": psycopg2.extensions.parse_dsn(pg_db.dsn)["password"],
                  "table.include.list": "public.items", "topic.creation.default.partitions": 1}
    platform.create_connector(properties)
    topic = f"{name}.public.items"
    bootstrap = stack.kafka_bootstrap
    platform.wait_for(lambda: len(committed_row_ids(bootstrap, topic)) >= 50, 90, "the snapshot of 50 rows")
    operator, viewer = token_of(platform, "verify-operator", "operator"), token_of(platform, "verify-viewer", "viewer")
    base = platform.start_web()

    def api(method, path, token, body=None):
        request = urllib.request.Request(  # noqa: S310 - our daphne, over http
            base + path, method=method, data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Token {token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    refused, _ = api("POST", f"/api/connectors/{name}/verify/", viewer)
    assert refused == 403

    def verify_once():
        status, run = api("POST", f"/api/connectors/{name}/verify/", operator)
        assert status == 202 and run["status"] == "queued", run

        def ended():
            _, shown = api("GET", f"/api/connectors/{name}/verify/{run['id']}/", viewer)
            return shown["status"] in ("done", "failed") and shown

        return platform.wait_for(ended, 120, "the Verify run to end")

    clean = verify_once()
    assert clean["status"] == "done", clean
    assert (clean["rows"], clean["mismatched"]) == (50, 0), clean["report"]

    _, value = latest_event(bootstrap, topic, {"id": 3})
    produce(bootstrap, topic, {"id": 3}, with_after(value, {**after_of(value), "label": "wrong"}))
    corrupted = verify_once()
    assert corrupted["mismatched"] == 1, corrupted["report"]
    assert corrupted["report"]["mismatches"] == [{"table": "public.items", "key": '{"id":3}', "kind": "different",
                                                  "fields": {"label": ["r3", "wrong"]}}]

    status, listed = api("GET", f"/api/connectors/{name}/verify/", viewer)
    assert status == 200 and [r["id"] for r in listed["results"]] == [corrupted["id"], clean["id"]]
    assert listed["results"][0]["requested_by"] == "verify-operator"

    scrape = "from web.dashboard.prometheus import exposition\nprint(exposition('')[0].decode())"
    assert f'cdc_verify_mismatched_rows{{connector="{name}"}} 1.0' in platform.django(scrape)

    status, schedule = api("PUT", f"/api/connectors/{name}/verify/schedule/", operator, {"nightly": True, "hour": 3})
    assert status == 200 and schedule == {"nightly": True, "hour": 3}
    assert api("PUT", f"/api/connectors/{name}/verify/schedule/", viewer, {"nightly": False})[0] == 403

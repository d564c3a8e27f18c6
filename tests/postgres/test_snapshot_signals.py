"""Stop, pause and resume of an incremental snapshot (Debezium's stop-snapshot, pause-snapshot and resume-snapshot
signals) and a pipeline's log level through the REST API, against a Celery worker running a stored PostgreSQL
connector on its own database.

The snapshot of a table big enough to be midway is paused (its read count stops growing while streaming goes on),
resumed (it grows again) and stopped: the snapshot request ends failed as stopped, fewer rows than the table's
were read, none twice; a stop with no snapshot running ends failed with the reason. A log level set through the
API is taken by the pipeline's process and reported in its status; an unknown level is a 400.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import psycopg2.extensions
import pytest

from tests.integration.kafka_reading import committed_row_events
from tests.platform_processes import Platform
from tests.postgres.test_control_plane import pg_properties

pytestmark = [pytest.mark.integration]

REDIS_DB = 8  # the control-plane tests' database: these run one after the other
ROWS = 60_000


@pytest.fixture
def platform(pg_db, stack, tmp_path):  # after pg_db: stopped before its database is dropped
    processes = Platform.with_worker(stack, tmp_path, REDIS_DB)
    yield processes
    processes.stop()


def test_an_incremental_snapshot_is_paused_resumed_and_stopped_through_the_api(platform, pg_db, stack,
                                                                               unique_name):
    name = "pgsig" + unique_name.replace("-", "")[-12:]
    pg_db.execute("CREATE TABLE items (id int PRIMARY KEY, label text)")
    pg_db.execute("INSERT INTO items SELECT g, 'r' || g FROM generate_series(1, %s) g", (ROWS,))
    pg_db.execute("CREATE TABLE signals (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data text)")
    properties = {"name": name, "topic.prefix": name, **pg_properties(pg_db, name),
                  "database.password": psycopg2.extensions.parse_dsn(pg_db.dsn)["password"],
                  "table.include.list": "public.items", "snapshot.mode": "no_data",
                  "signal.data.collection": "public.signals", "incremental.snapshot.chunk.size": 50,
                  "topic.creation.default.partitions": 1}
    platform.create_connector(properties)
    platform.wait_for(lambda: platform.observed_phases(name) == {pg_db.name: "streaming"}, 90, "streaming")
    api = platform.api_as('signal-operator')

    def ended(kind, request_id):
        _, rows = api("GET", f"/api/connectors/{name}/requests/")
        mine = [r for r in rows if r["kind"] == kind and r["id"] == request_id]
        return mine and mine[0]["status"] in ("done", "failed") and mine[0]

    def snapshot_metrics():
        _, status = api("GET", f"/api/connectors/{name}/status/")
        return ((status["replica_sets"] or [{}])[0].get("metrics") or {}).get("snapshot") or {}

    topic = f"{name}.public.items"
    bootstrap = stack.kafka_bootstrap

    def reads():
        return [row for op, row in committed_row_events(bootstrap, topic) if op == "r"]

    _, snapshot = api("POST", f"/api/connectors/{name}/snapshot/", {"collections": ["public.items"]})
    platform.wait_for(lambda: len(reads()) >= 500, 90, "the incremental snapshot to read its first chunks")

    status, paused = api("POST", f"/api/connectors/{name}/snapshot/pause/")
    assert status == 202 and paused["requested"] == "snapshot-pause", paused
    answer = platform.wait_for(lambda: ended("control", paused["request"]), 60, "the pause to be taken up")
    assert answer["status"] == "done", answer
    platform.wait_for(lambda: snapshot_metrics().get("SnapshotPaused") is True, 30, "the snapshot reported paused")
    time.sleep(2)  # a chunk whose window was open when the pause came still closes
    before = len(reads())
    time.sleep(4)
    assert len(reads()) == before, "the paused snapshot kept reading"
    assert before < ROWS
    pg_db.execute("UPDATE items SET label = 'streamed' WHERE id = 1")
    platform.wait_for(lambda: any(op == "u" for op, _ in committed_row_events(bootstrap, topic)), 60,
                      "a change streamed while the snapshot is paused")

    _, resumed = api("POST", f"/api/connectors/{name}/snapshot/resume/")
    assert platform.wait_for(lambda: ended("control", resumed["request"]), 60, "the resume")["status"] == "done"
    platform.wait_for(lambda: len(reads()) > before + 500, 60, "the resumed snapshot to read on")

    _, stopped = api("POST", f"/api/connectors/{name}/snapshot/stop/", {})
    assert platform.wait_for(lambda: ended("control", stopped["request"]), 60, "the stop")["status"] == "done"
    outcome = platform.wait_for(lambda: ended("snapshot", snapshot["request"]), 60, "the snapshot request to end")
    assert outcome["status"] == "failed" and "stopped" in outcome["reason"], outcome
    time.sleep(3)
    read = reads()
    assert len(read) < ROWS, "the stopped snapshot read the whole table"
    assert len(set(read)) == len(read), "a row was read twice"

    _, again = api("POST", f"/api/connectors/{name}/snapshot/stop/", {})
    nothing = platform.wait_for(lambda: ended("control", again["request"]), 60, "the second stop")
    assert nothing["status"] == "failed" and "no incremental snapshot running" in nothing["reason"], nothing

    _, level = api("POST", f"/api/connectors/{name}/log-level/", {"level": "debug"})
    assert level["requested"] == "log-level", level
    set_level = platform.wait_for(lambda: ended("control", level["request"]), 60, "the log level to be taken up")
    assert set_level["status"] == "done" and "at DEBUG" in set_level["reason"], set_level

    def reported_level():
        _, status = api("GET", f"/api/connectors/{name}/status/")
        return (status["replica_sets"][0].get("metrics") or {}).get("log_level")

    platform.wait_for(lambda: reported_level() == "DEBUG", 30, "the pipeline to report DEBUG")
    with pytest.raises(urllib.error.HTTPError) as refused:
        api("POST", f"/api/connectors/{name}/log-level/", {"level": "LOUD"})
    assert refused.value.code == 400

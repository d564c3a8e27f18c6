"""Spark runs launched through the REST API and run by a real Celery worker on the `spark` queue with a real
spark-submit (local[2]) against the stack's Kafka, as deployed: daphne and the worker are subprocesses over a
temporary database (tests/platform_processes.py).

- a latest-state run over a mixed workload (snapshot, patches, replaces, deletes, re-inserts, transactions)
  previews exactly the collection's documents;
- a statistics run counts exactly the events produced, per operation;
- a streaming run processes what its topic holds, then a change produced while it runs; cancelling it ends it as
  `cancelled` (SIGTERM to the driver, spark-submit's exit status 143) and leaves no process of its group behind.

The two batch runs are launched together (the worker runs two at once), so their spark-submits start side by side.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from bson import json_util

from tests.platform_processes import Platform
from tests.spark.test_latest_state import scrambled_workload
from tests.spark.workload import Clock, Collection, create_topics, encode, key_id, oid, produce
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REDIS_DB = 12  # apart from a running demo (0), the browser tests (13) and the other process tests (14, 15)
RUN_TIMEOUT_S = 240


class Api:
    def __init__(self, base_url: str, token: str):
        self.base_url, self.token = base_url, token

    def __call__(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        request = urllib.request.Request(  # noqa: S310 - our daphne, over http
            self.base_url + path, method=method, data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json",
                     "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - our daphne
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")


@pytest.fixture(scope="module")
def platform(stack, tmp_path_factory):
    """daphne and one Celery worker on the spark queue; API tokens of an operator and a viewer."""
    tmp = tmp_path_factory.mktemp("launcher")
    output_root = Path(tempfile.mkdtemp(prefix="cdc-spark-launcher-"))  # reachable by the jobs' user, unlike tmp
    output_root.chmod(0o755)
    processes = Platform(stack, tmp, REDIS_DB, SPARK_MASTER="local[2]", SPARK_OUTPUT_ROOT=str(output_root))
    processes.migrate()
    tokens = processes.django(
        "from django.contrib.auth.models import Group, User\n"
        "from rest_framework.authtoken.models import Token\n"
        "for role in ('operator', 'viewer'):\n"
        "    user = User.objects.create_user('sl-' + role)\n"
        "    user.groups.add(Group.objects.get(name=role))\n"
        "    print(role, Token.objects.create(user=user).key)\n"
    )
    processes.tokens = dict(line.split() for line in tokens.strip().splitlines()[-2:])
    processes.start_worker("spark-worker", queues="spark,default", concurrency=2)
    processes.start_web()
    yield processes
    processes.stop()
    shutil.rmtree(output_root, ignore_errors=True)


@pytest.fixture(scope="module")
def api(platform):
    return Api(platform.base_url, platform.tokens["operator"])


@pytest.fixture(scope="module")
def workload(stack):
    """The scrambled-workload collection's events (in order) in a 2-partition topic of their own."""
    coll = scrambled_workload(random.Random(4))
    prefix = f"spark.launch.{oid(random.randrange(1 << 40))}"
    messages = [m for m in encode(coll.records, prefix) if m.topic == f"{prefix}.shop.orders"]
    topic = messages[0].topic
    create_topics(stack.kafka_bootstrap, [topic], partitions=2)
    produce(stack.kafka_bootstrap, messages)
    ops = Counter(json.loads(m.value)["op"] for m in messages if m.value)
    return {"topic": topic, "expected": coll.docs, "ops": dict(ops), "records": len(messages)}


def _name(prefix: str) -> str:
    return f"{prefix}-{tagged_suffix()}"


def wait_run(api, run_id: int, until, timeout: float = RUN_TIMEOUT_S, platform=None) -> dict:
    deadline = time.monotonic() + timeout
    run = {}
    while time.monotonic() < deadline:
        code, run = api("GET", f"/api/spark/runs/{run_id}/")
        assert code == 200, run
        if until(run):
            return run
        if run["finished"]:
            raise AssertionError(f"run {run_id} ended {run['status']}: {run['error']}")
        time.sleep(1)
    log = platform.log("spark-worker")[-3000:] if platform else ""
    raise AssertionError(f"run {run_id} not there in {timeout}s: {run}\n{log}")


def create_and_run(api, body: dict) -> dict:
    code, job = api("POST", "/api/spark/jobs/", body)
    assert code == 201, job
    code, run = api("POST", f"/api/spark/jobs/{job['name']}/run/")
    assert code == 202 and run["status"] == "queued", run
    return run


@pytest.fixture(scope="module")
def batch_runs(api, workload):
    """A latest-state run and a statistics run of the workload's topic, both queued at once."""
    return {
        "latest_state": create_and_run(api, {"name": _name("state"), "template": "latest_state",
                                             "topics": [workload["topic"]]}),
        "stats": create_and_run(api, {"name": _name("stats"), "template": "stats", "topics": [workload["topic"]],
                                      "arguments": {"window": "1 hour"}}),
    }


def test_latest_state_run_equals_the_collection(api, platform, workload, batch_runs):
    run = batch_runs["latest_state"]
    done = wait_run(api, run["id"], lambda r: r["finished"], platform=platform)
    assert done["status"] == "succeeded", done["error"]
    expected = workload["expected"]
    assert done["rows_in"] == workload["records"] and done["rows_out"] == len(expected) < 100
    assert done["output_path"] == os.path.join(platform.env["SPARK_OUTPUT_ROOT"], run["job"], f"run-{run['id']}")
    assert os.path.exists(os.path.join(done["output_path"], "_SUCCESS"))
    columns = done["preview"]["columns"]
    rows = [dict(zip(columns, row, strict=True)) for row in done["preview"]["rows"]]
    state = {row["id"]: json_util.loads(row["document"]) for row in rows}
    assert state == {key_id(_id): document for _id, document in expected.items()}
    assert done["master"] == "local[2]" and done["worker"].startswith("spark-worker-")
    assert done["started_at"] and done["finished_at"] and done["duration_s"] > 0 and done["exit_code"] == 0

    code, log = api("GET", f"/api/spark/runs/{run['id']}/log/")
    texts = [line["text"] for line in log["lines"]]
    assert code == 200 and any(text.startswith("step: ") for text in texts), texts
    assert texts[-1] == "run succeeded (exit status 0)"


def test_statistics_run_counts_the_events_produced(api, platform, workload, batch_runs):
    run = batch_runs["stats"]
    done = wait_run(api, run["id"], lambda r: r["finished"], platform=platform)
    assert done["status"] == "succeeded", done["error"]
    assert done["result"]["totals"] == workload["ops"]
    assert done["rows_in"] == workload["records"]
    columns = done["preview"]["columns"]
    counted = Counter()
    for row in done["preview"]["rows"]:
        values = dict(zip(columns, row, strict=True))
        counted[values["op"]] += values["events"]
    assert dict(counted) == workload["ops"]


def _assert_gone(probe, timeout: float = 15) -> None:
    """The process (group) is gone, allowing for the kernel and init to reap it after SIGKILL."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            probe()
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError(f"still alive {timeout:.0f} s after the run ended")


def batches(api, run_id: int) -> list[dict]:
    """The `batch` events of a run, from its log."""
    code, log = api("GET", f"/api/spark/runs/{run_id}/log/")
    assert code == 200, log
    return [json.loads(line["text"][len("batch: "):]) for line in log["lines"] if line["text"].startswith("batch: ")]


def test_a_stream_follows_its_topic_and_cancelling_ends_it_and_its_process_group(api, platform, stack):
    coll = Collection("sub", "docs", Clock())
    prefix = f"spark.live.{oid(random.randrange(1 << 40))}"
    messages = encode([coll.insert({"_id": i, "v": i}) for i in range(4)], prefix)
    topic = messages[0].topic
    create_topics(stack.kafka_bootstrap, [topic])
    produce(stack.kafka_bootstrap, messages)
    run = create_and_run(api, {"name": _name("live"), "template": "latest_state",
                               "mode": "stream", "topics": [topic], "arguments": {"trigger": "1 second"}})
    running = wait_run(api, run["id"], lambda r: (r["progress"] or {}).get("batches"), platform=platform)
    assert running["status"] == "running" and running["pid"] and running["driver_pid"]
    assert running["master"] == "local[2]" and running["progress"]["topics"] == [topic]
    first = batches(api, run["id"])[0]
    assert (first["rows_in"], first["rows_out"]) == (4, 4)
    assert os.path.exists(os.path.join(first["output_path"], "_SUCCESS"))

    produce(stack.kafka_bootstrap, encode([coll.delete(0), coll.insert({"_id": 9})], prefix))
    wait_run(api, run["id"], lambda r: len(batches(api, run["id"])) >= 2, platform=platform)
    second = batches(api, run["id"])[1]
    assert second["rows_in"] == 3 and second["rows_out"] == 4  # a delete, its tombstone, an insert

    viewer = Api(platform.base_url, platform.tokens["viewer"])
    assert viewer("POST", f"/api/spark/runs/{run['id']}/cancel/")[0] == 403
    code, answer = api("POST", f"/api/spark/runs/{run['id']}/cancel/")
    assert code == 202 and answer["cancel_requested_at"], answer
    done = wait_run(api, run["id"], lambda r: r["finished"], timeout=90, platform=platform)
    assert done["status"] == "cancelled", done
    # the driver reported it (the launcher's SIGKILL, 30 s after the SIGTERM, would end it with 137)
    assert done["error"] == "cancelled by SIGTERM" and done["exit_code"] == 143, done
    _assert_gone(lambda: os.killpg(running["pid"], 0))
    _assert_gone(lambda: os.kill(running["driver_pid"], 0))
    assert api("POST", f"/api/spark/runs/{run['id']}/cancel/")[0] == 409

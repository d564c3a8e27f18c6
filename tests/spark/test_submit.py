"""A job through the real entry point: `sparkjobs.submit.command` → spark-submit → sparkjobs/run.py.

A streaming latest-state run processes what the topic holds, then a change produced while it runs, and
ends on SIGTERM (sent to the driver's pid from the `started` line, as the launcher does) with a `cancelled`
line, the same outcome in its result file, and exit status 143 from spark-submit."""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import subprocess
import threading
import time

import pytest

from sparkjobs.submit import command
from tests.spark.workload import Clock, Collection, create_topics, encode, oid, produce

pytestmark = pytest.mark.integration


def test_spark_submit_streams_and_stops_on_sigterm(stack, tmp_path):
    coll = Collection("sub", "docs", Clock())
    prefix = f"spark.submit.{oid(random.randrange(1 << 40))}"
    messages = encode([coll.insert({"_id": i, "v": i}) for i in range(4)], prefix)
    topic = messages[0].topic
    create_topics(stack.kafka_bootstrap, [topic])
    produce(stack.kafka_bootstrap, messages)

    result_file = tmp_path / "result.json"
    argv, env = command(
        "latest_state",
        {"topics": [topic], "bootstrap_servers": stack.kafka_bootstrap, "mode": "stream", "trigger": "1 second",
         "output_path": str(tmp_path / "out"), "checkpoint_path": str(tmp_path / "checkpoint")},
        master="local[2]",
        result_file=str(result_file),
    )
    assert argv[argv.index("--master") + 1] == "local[2]" and "--jars" in argv
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               start_new_session=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()

    def next_line(predicate, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                assert process.poll() is None, f"spark-submit exited with {process.returncode}"
                continue
            assert line.startswith("CDCJOB "), line
            event = json.loads(line[len("CDCJOB "):])
            if predicate(event):
                return event
        raise AssertionError("no such line in time")

    try:
        driver = next_line(lambda e: e.get("event") == "started")["pid"]
        session = next_line(lambda e: e.get("event") == "session")
        assert session["master"] == "local[2]" and session["topics"] == [topic]
        first = next_line(lambda e: e.get("event") == "batch")
        assert (first["rows_in"], first["rows_out"]) == (4, 4)
        assert os.path.exists(os.path.join(first["output_path"], "_SUCCESS"))

        produce(stack.kafka_bootstrap, encode([coll.delete(0), coll.insert({"_id": 9})], prefix))
        second = next_line(lambda e: e.get("event") == "batch")
        assert second["rows_in"] == 3 and second["rows_out"] == 4  # a delete, its tombstone, an insert

        started = time.monotonic()
        os.kill(driver, signal.SIGTERM)  # the Python driver: it reports, stops Spark, exits 143 (so does spark-submit)
        final = next_line(lambda e: "status" in e, timeout=30)
        assert final["status"] == "cancelled" and final["error"] == "cancelled by SIGTERM"
        assert process.wait(30) == 143
        assert time.monotonic() - started < 30
        assert json.loads(result_file.read_text())["status"] == "cancelled"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)

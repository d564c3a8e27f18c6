"""Fixtures for the Spark tests: one local SparkSession for the whole test session (starting a JVM
costs seconds), and a helper that runs a job template in-process the way spark-submit would."""

from __future__ import annotations

import gc
import io
import json

import pytest

from tests.spark.workload import json_lines


@pytest.fixture(scope="session")
def spark(stack):
    from sparkjobs.session import build_session

    session = build_session("local[2]", app_name="cdc-spark-tests", delta=True)
    yield session
    _stop_session_and_jvm(session)


def _stop_session_and_jvm(session) -> None:
    """Stops the session, then pyspark's py4j gateway and its JVM, which SparkSession.stop() keeps for a next session.

    Left to the interpreter's exit, the gateway's connections close then, and each logs so (INFO) through Django's
    console handler, whose stream, pytest's captured stderr, is closed by then: a "--- Logging error ---" traceback
    after the summary. tests/postgres imports this fixture too, so this runs twice: the second time finds nothing.
    """
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        session.stop()
    gateway = SparkContext._gateway
    if gateway is None:
        return
    SparkContext._gateway = SparkContext._jvm = None
    gateway.shutdown()  # closes its connections and its callback server
    process = getattr(gateway, "proc", None)  # the JVM pyspark started (none when it was given a running one)
    if process is not None:
        process.stdin.close()  # the JVM exits at the end of its stdin
        process.wait(60)
    del gateway, process
    gc.collect()  # the closed connections go now, while logging still has its streams


@pytest.fixture(scope="session")
def run_job(spark):
    """run_job(template, args) -> (exit status, CDCJOB lines as dicts); the last line is the outcome.

    Each job gets its own session of the shared JVM (``newSession``: its own SQL settings and views), as each
    spark-submit does: the `sql` template locks its session (no `delta.`path`` identifiers), which must not reach the
    jobs that follow it."""
    from sparkjobs import run

    def _run(template: str, args: dict, *, session=None) -> tuple[int, list[dict]]:
        out = io.StringIO()
        session = session if session is not None else spark.newSession()
        code = run.main([template, "--args-json", json.dumps(args)], spark=session, stdout=out)
        return code, json_lines(out.getvalue())

    return _run

"""Fixtures for the Spark tests: one local SparkSession for the whole test session (starting a JVM
costs seconds), and a helper that runs a job template in-process the way spark-submit would."""

from __future__ import annotations

import io
import json

import pytest

from tests.spark.workload import json_lines


@pytest.fixture(scope="session")
def spark(stack):
    from sparkjobs.session import build_session

    session = build_session("local[2]", app_name="cdc-spark-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def run_job(spark):
    """run_job(template, args) -> (exit status, CDCJOB lines as dicts); the last line is the outcome."""
    from sparkjobs import run

    def _run(template: str, args: dict, *, session=spark) -> tuple[int, list[dict]]:
        out = io.StringIO()
        code = run.main([template, "--args-json", json.dumps(args)], spark=session, stdout=out)
        return code, json_lines(out.getvalue())

    return _run

"""Shared glue for the spec-test modules: parameters, the runner fixture and one test function body."""

from __future__ import annotations

import pytest

from tests.emulator import spec_source
from tests.emulator.spec_skips import skip_reason
from tests.emulator.unified import SkipTest, UnifiedRunner, choose_topology, load_area


def params(area: str):
    missing = spec_source.missing_message(area)
    if missing:
        # one test standing for the whole suite: it fails under CI, else it is skipped with the fix
        return [pytest.param(None, None, missing, id=f"{area}-missing")]
    out = []
    seen = set()
    for stem, doc, test in load_area(area):
        tid = f"{stem}::{test['description']}"
        while tid in seen:
            tid += "+"
        seen.add(tid)
        out.append(pytest.param(stem, doc, test, id=tid))
    return out


def run_spec(request, stem, doc, test):
    """Run one spec test on the replica set, or on the standalone server or sharded cluster when only those
    apply."""
    if stem is None:
        if spec_source.required():
            pytest.fail(f"{test} (CI is set: the spec suites must run)", pytrace=False)
        pytest.skip(test)
    reason = skip_reason(stem, test["description"])
    if reason:
        pytest.skip(f"emulator: {reason}")
    topology, reason = choose_topology(doc, test)
    if reason:
        pytest.skip(reason)
    fixture = {"replicaset": "spec_runner", "single": "spec_single_runner", "sharded": "spec_sharded_runner"}[topology]
    runner: UnifiedRunner = request.getfixturevalue(fixture)
    try:
        runner.run(doc, test)
    except SkipTest as exc:
        pytest.skip(str(exc))

"""Shared glue for the spec-test modules: parameters, the runner fixture and one test function body."""

from __future__ import annotations

import pytest

from tests.emulator.spec_skips import skip_reason
from tests.emulator.unified import SkipTest, UnifiedRunner, load_area, spec_dir


def params(area: str):
    if not (spec_dir() / area).is_dir():
        return [pytest.param(None, None, None, marks=pytest.mark.skip(reason=f"spec tests not found in {spec_dir()}"),
                             id=f"{area}-missing")]
    out = []
    seen = set()
    for stem, doc, test in load_area(area):
        tid = f"{stem}::{test['description']}"
        while tid in seen:
            tid += "+"
        seen.add(tid)
        out.append(pytest.param(stem, doc, test, id=tid))
    return out


def run_spec(runner: UnifiedRunner, stem, doc, test):
    reason = skip_reason(stem, test["description"])
    if reason:
        pytest.skip(f"emulator: {reason}")
    try:
        runner.run(doc, test)
    except SkipTest as exc:
        pytest.skip(str(exc))

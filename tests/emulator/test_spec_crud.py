"""MongoDB's unified-format crud spec tests, run against the emulator (one pytest test per spec test)."""

from __future__ import annotations

import pytest

from tests.emulator.spec_common import params, run_spec


@pytest.mark.parametrize(("stem", "doc", "test"), params("crud"))
def test_spec(request, stem, doc, test):
    run_spec(request, stem, doc, test)

"""The compiled PostgreSQL helpers (connectors/postgres/_pgrows, built by scripts/install.sh) for tests that compare
them with their Python twins: without the module a test skips, except in CI (CI=true), where it fails."""

from __future__ import annotations

import os

import pytest

from connectors.postgres.compiled import compiled


def require_compiled() -> None:
    if compiled is None:
        message = "connectors/postgres/_pgrows is not built (scripts/install.sh or scripts/build_extensions.py)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)

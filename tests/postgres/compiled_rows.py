"""The compiled PostgreSQL helpers (connectors/postgres/_pgrows, built by scripts/install.sh) for tests that compare
them with their Python twins: without the module a test skips, except in CI (CI=true), where it fails."""

from __future__ import annotations

from connectors.postgres.compiled import compiled
from tests.compiled_modules import require_built


def require_compiled() -> None:
    require_built(compiled, "connectors/postgres/_pgrows")

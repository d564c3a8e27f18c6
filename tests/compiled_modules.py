"""The C extensions (built by scripts/install.sh) in tests that compare them with their Python twins: without the
module a test skips, except in CI (CI=true), where it fails."""

from __future__ import annotations

import os

import pytest


def require_built(module: object | None, path: str) -> None:
    """Skips (in CI: fails) the calling test when `module`, the extension at `path`, is not built."""
    if module is None:
        message = f"{path} is not built (scripts/install.sh or scripts/build_extensions.py)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)

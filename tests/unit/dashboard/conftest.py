import pytest

from tests.api_support import no_redis  # noqa: F401 - notifications recorded, no Redis needed


@pytest.fixture(autouse=True)
def _no_connectivity_check(settings):
    """Sample connectors point at hosts that do not exist; tests of the check turn it back on."""
    settings.CDC_CONNECTIVITY_CHECK_MS = 0

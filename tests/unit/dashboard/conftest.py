from tests.api_support import no_redis  # noqa: F401 - notifications recorded, no Redis needed

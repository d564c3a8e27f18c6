from tests.api_support import admin_client, no_redis  # noqa: F401 - fixtures of the control-plane tests

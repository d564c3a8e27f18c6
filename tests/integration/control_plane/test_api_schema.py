"""The OpenAPI schema generates without warnings and validates; schemathesis then drives every operation with a
bounded number of generated requests (as an admin, against the real Redis and Kafka) and no answer is a 500."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from rest_framework.authtoken.models import Token

from tests.api_support import create_connector, make_user
from web.connectors.models import Connector

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
EXAMPLES_PER_OPERATION = 6
# Findings printed but not failing the test: schema-valid requests the server refuses for reasons the schema cannot
# say (a wrong password, a property value the connector validation refuses), schema-violating requests it tolerates
# (extra properties of a connector's free-form configuration), and Connect's answer to invalid credentials.
REPORTED_ONLY = {"ST201", "ST202", "ST401"}


@pytest.fixture(autouse=True)
def _loggers_kept(monkeypatch):
    """Generated PUT /connect/admin/loggers/… calls change levels: in this process only (restored afterwards), never
    broadcast to whatever Celery workers share the Redis."""
    import logging

    monkeypatch.setattr("workers.loggers.broadcast", lambda app, logger, level: None)
    manager = logging.Logger.manager
    levels = {name: logger.level for name, logger in manager.loggerDict.items() if isinstance(logger, logging.Logger)}
    root = logging.getLogger().level
    yield
    logging.getLogger().setLevel(root)
    for name, logger in list(manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            logger.setLevel(levels.get(name, logging.NOTSET))


@pytest.fixture
def openapi(tmp_path):
    target = tmp_path / "schema.json"
    call_command("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", "--file", str(target))
    import json

    return json.loads(target.read_text())


def test_schema_validates_and_lists_the_api(openapi):
    paths = openapi["paths"]
    for expected in ("/api/connectors/", "/api/connectors/{name}/", "/api/connectors/validate/",
                     "/api/connectors/{name}/offsets/reset/", "/api/connectors/{connector_name}/filters/{id}/",
                     "/api/connectors/{name}/snapshot/", "/api/audit/", "/connect/connectors",
                     "/connect/connectors/{name}/topics", "/connect/connectors/{name}/tasks/{task}/restart",
                     "/connect/admin/loggers/{logger}", "/connect/connector-plugins/{plugin}/config/validate"):
        assert expected in paths, sorted(paths)
    connect = [path for path in paths if path.startswith("/connect/")]
    assert not [path for path in connect if path.endswith("/") and path != "/connect/"]  # listed once, no slash
    assert paths["/connect/connectors/{name}/tasks/{task}/restart"]["post"]["tags"] == ["connect"]
    request = openapi["components"]["schemas"]["ConnectorRequest"]["properties"]
    response = openapi["components"]["schemas"]["Connector"]["properties"]
    assert "password" in request and "password" not in response
    assert {"tokenAuth", "cookieAuth"} <= set(openapi["components"]["securitySchemes"])


def test_schema_and_docs_pages_are_served(client, django_user_model):
    assert client.get("/api/docs/").status_code == 302  # anonymous browser: to the login page
    client.force_login(make_user(django_user_model, "viewer"))
    page = client.get("/api/docs/")
    assert page.status_code == 200 and b"swagger-ui" in page.content
    assert b"cdn" not in page.content.lower()
    assert client.get("/api/redoc/").status_code == 200
    assert client.get("/api/schema/").status_code == 200


@pytest.mark.parametrize("role", ["viewer", "admin"])
def test_generated_requests_pass_every_check(openapi, django_user_model, stack, settings, role):
    """Every operation (/api/ and /connect/), positive and negative data, every schemathesis check (the same as
    `schemathesis run --checks all`). Any answer of 500 or more fails the test, and so does any finding of the
    conformance checks (undocumented status, response not matching its schema, content type, headers): the
    OpenAPI document describes what the server returns. REPORTED_ONLY findings are printed."""
    import schemathesis
    from django.core.wsgi import get_wsgi_application
    from schemathesis.checks import CHECKS, load_all_checks
    from schemathesis.generation import GenerationMode

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # /api/auth/token/ is fuzzed too
    load_all_checks()
    schema = schemathesis.openapi.from_dict(openapi)
    schema.app = get_wsgi_application()
    token = Token.objects.create(user=make_user(django_user_model, role)).key
    run = Run(token, CHECKS.get_all())
    operations = [result.ok() for result in schema.get_all_operations()]
    assert any(operation.path.startswith("/connect/") for operation in operations)
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                run.drive(operation, mode)()
            except Unsatisfiable:
                assert mode == GenerationMode.NEGATIVE, operation.label  # nothing in it can be made invalid
    assert run.server_errors == []
    conformance = [failure for failure in run.check_failures if not failure_codes(failure) <= REPORTED_ONLY]
    assert conformance == [], "\n".join(conformance)
    reported = sorted({code for failure in run.check_failures for code in failure_codes(failure)})
    print(f"{len(run.check_failures)} findings of the checks reported only ({', '.join(reported)})")
    if role == "admin":
        assert sum(200 <= status < 300 for status in run.statuses) > len(run.statuses) / 8, run.statuses


def failure_codes(failure: str) -> set[str]:
    return set(re.findall(r"- (ST\d+) ", failure))


def existing_ids() -> dict:
    """Ids of a connector and filter row that exist (recreated when a generated DELETE removed them)."""
    connector = Connector.objects.filter(name="orders").first() or create_connector("orders", state="stopped")
    row = connector.filters.first() or connector.filters.create(kind="collection_include", value="inventory.orders")
    return {"name": "orders", "connector_name": "orders", "id": row.pk}


class Run:
    """Generated requests of one role, the statuses answered and what failed."""

    def __init__(self, token: str, checks: list):
        self.token, self.checks = token, checks
        self.statuses: list[int] = []
        self.server_errors: list[tuple] = []
        self.check_failures: list[str] = []

    def drive(self, operation, mode):
        """Generated requests for one operation; half of them aimed at objects that exist."""
        from schemathesis.core.failures import FailureGroup

        @hypothesis_settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None, derandomize=True,
                             suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy(generation_mode=mode), real=st.booleans())
        def run(case, real):
            if real and case.path_parameters:
                ids = existing_ids()
                case.path_parameters = {key: ids.get(key, value) for key, value in case.path_parameters.items()}
            headers = {"Authorization": f"Token {self.token}"}
            response = case.call(headers=headers)
            self.statuses.append(response.status_code)
            if response.status_code >= 500:
                self.server_errors.append((operation.label, mode.value, case.path_parameters, case.body,
                                           response.status_code, response.text[:500]))
            try:
                case.validate_response(response, checks=self.checks, headers=headers,
                                       transport_kwargs={"headers": headers})
            except FailureGroup as failures:
                self.check_failures.append(f"{operation.label} [{mode.value}]: {failures}"[:1500])

        return run

"""The roles matrix, generated from the URLconf: every route and every method it serves, for anonymous callers,
users without a role, viewers and operators. A new URL is in the matrix the moment it is routed.

- Anonymous callers reach nothing but the public routes (login, health, the token endpoint): pages redirect to the
  login page, /api/ and /connect/ answer 401.
- A user without a role reads nothing but who they are and the API's description.
- Viewers and operators change nothing but what the lists below grant them: every other write is refused with 403
  before it is looked at (the requests carry no body, so a route that forgot its role check answers 400, 404 or
  2xx and fails here).

test_api_permissions.py checks the role boundary of each /api/ and /connect/ operation with a valid body.
"""

from __future__ import annotations

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from tests.api_support import client_for, create_connector, make_user
from web.connectors import services
from web.connectors.models import DesiredState

pytestmark = pytest.mark.django_db

PUBLIC = {"login/", "logout/", "healthz", "api/auth/token/"}
# what any signed-in user may read ("": without a role, the landing page that says whom to ask for one)
ANY_ROLE = {"", "api/me/", "api/schema/", "api/docs/", "api/redoc/"}
WRITES = {  # (route, method) a role may call; each stronger role may too
    "viewer": {("api/connectors/validate/", "post"), ("api/connectors/{name}/validate/", "post"),
               ("connect/connector-plugins/{plugin}/config/validate", "put"),
               ("connect/connector-plugins/{plugin}/config/validate/", "put"), ("logout/", "post")},
    "operator": {*(("api/connectors/{name}/" + action + "/", "post")
                   for action in ("pause", "resume", "stop", "restart", "snapshot", "verify")),
                 *(("connect/connectors/{name}/" + action + slash, method)
                   for action, method in (("restart", "post"), ("pause", "put"), ("resume", "put"), ("stop", "put"))
                   for slash in ("", "/")),
                 *((f"connect/connectors/{{name}}/tasks/{{task}}/restart{slash}", "post") for slash in ("", "/")),
                 *((f"connect/connectors/{{name}}/topics/reset{slash}", "put") for slash in ("", "/")),
                 ("api/connectors/{name}/verify/schedule/", "put"), ("connectors/{name}/", "post"),
                 *((f"api/connectors/{{name}}/snapshot/{action}/", "post") for action in ("stop", "pause", "resume")),
                 ("api/connectors/{name}/log-level/", "post"),
                 # the table preview connects to the source the body names: an operator's, as creating one is
                 ("api/connectors/tables/", "post"), ("api/connectors/{name}/tables/", "post"),
                 # Spark jobs of the query templates (docs/spark.md; script jobs are an admin's)
                 ("api/spark/jobs/", "post"), ("api/spark/jobs/{name}/run/", "post"),
                 ("api/spark/jobs/{name}/query/", "post"),
                 *(("api/spark/jobs/{name}/", method) for method in ("put", "patch", "delete")),
                 ("api/spark/runs/{pk}/cancel/", "post"), ("spark/jobs/new/", "post"), ("spark/jobs/{name}/", "post"),
                 ("spark/jobs/{name}/edit/", "post"), ("spark/jobs/{name}/delete/", "post"),
                 # the topic browser's writes (docs/dashboard.md)
                 ("api/topics/{topic}/messages/", "post"), ("topics/{topic}/produce/", "post"),
                 ("api/topics/", "post"), ("api/topics/{topic}/", "delete"), ("api/topics/{topic}/config/", "patch"),
                 ("topics/", "post"), ("topics/{topic}/delete/", "post"), ("topics/{topic}/config/", "post"),
                 ("api/consumer-groups/{group}/", "delete"), ("api/consumer-groups/{group}/reset/", "post"),
                 ("topics/{topic}/groups/{group}/reset/", "post"), ("topics/{topic}/groups/{group}/delete/", "post")},
}
VALUES = {"name": "orders", "connector_name": "orders", "plugin": "MongoDbConnector", "task": "0",
          "logger": "root", "replica_set": "rs0", "topic": "shop.inventory.orders", "url": "x",
          "group": "shop-readers"}
WRITE_METHODS = ("post", "put", "patch", "delete")


def routes(patterns=None, prefix: str = ""):
    """(route, callback) for every URL pattern, the route written with {name} placeholders."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        text = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from routes(pattern.url_patterns, text)
        elif isinstance(pattern, URLPattern) and "(?P<format>" not in text:
            yield readable(text), pattern.callback


def readable(route: str) -> str:
    route = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", route)
    route = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
    return route.replace("^", "").replace("$", "").replace("\\", "")


def methods(callback) -> list[str]:
    if getattr(callback, "actions", None):
        return sorted(callback.actions)
    view = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
    if view is not None:
        return sorted(m for m in ("get", "post", "put", "patch", "delete") if hasattr(view, m))
    return ["get", "post"]


ROUTES = sorted({(route, method) for route, callback in routes() for method in methods(callback)
                 if not route.startswith(("admin/", "static/")) and "{content_type_id}" not in route})


@pytest.fixture
def world(no_redis, monkeypatch):
    """A connector with a filter row, a Spark job with a run, an audit entry: every {placeholder} resolves."""
    from web.connectors.models import AuditEntry
    from web.sparkjobs.models import JobDefinition, JobRun

    monkeypatch.setattr(services, "read_offsets", lambda connector: {})
    connector = create_connector(state=DesiredState.STOPPED)
    job = JobDefinition.objects.create(name="orders", template="stats", topics=["shop.inventory.orders"])
    run = JobRun.objects.create(definition=job, template="stats")
    return {**VALUES, "filter": connector.filters.first().pk, "run": run.pk, "audit": AuditEntry.objects.first().pk}


def concrete(route: str, values: dict) -> str:
    """The route with each placeholder replaced by an object of the world ({pk} by the one its route lists)."""
    pk = values["run"] if "/runs/" in route else values["audit"] if "audit/" in route else values["filter"]
    filled = {**values, "pk": pk, "run_id": values["run"]}
    return "/" + route.format(**{key: filled.get(key, "1") for key in re.findall(r"{(\w+)}", route)})


def denied(response) -> bool:
    if response.status_code in (401, 403, 405):  # 405: nobody may call the route with this method
        return True
    return response.status_code == 302 and response["Location"].startswith("/login/")


@pytest.mark.parametrize(("route", "method"), ROUTES, ids=lambda v: v)
def test_anonymous_reaches_only_public_routes(world, route, method):
    if route in PUBLIC:
        pytest.skip("public")
    response = getattr(client_for(None), method)(concrete(route, world), format="json")
    assert denied(response), (response.status_code, response.content[:200])


@pytest.mark.parametrize(("route", "method"), ROUTES, ids=lambda v: v)
def test_a_user_without_a_role_reads_nothing(world, django_user_model, route, method):
    if route in PUBLIC | ANY_ROLE:
        pytest.skip("public or open to any signed-in user")
    user = make_user(django_user_model, "none")
    client = client_for(user)
    client.force_login(user)  # pages read the session, the APIs the forced user
    response = getattr(client, method)(concrete(route, world), format="json")
    assert response.status_code in (403, 405), (response.status_code, response.content[:200])


@pytest.mark.parametrize("role", ["viewer", "operator"])
@pytest.mark.parametrize(("route", "method"), [r for r in ROUTES if r[1] in WRITE_METHODS], ids=lambda v: v)
def test_a_role_changes_only_what_it_is_granted(world, django_user_model, role, route, method):
    granted = WRITES["viewer"] | (WRITES["operator"] if role == "operator" else set())
    if route in PUBLIC:
        pytest.skip("public")
    user = make_user(django_user_model, role)
    client = client_for(user)
    client.force_login(user)
    response = getattr(client, method)(concrete(route, world), format="json")
    if (route, method) in granted:
        assert response.status_code != 403, (response.status_code, response.content[:200])
    else:
        assert response.status_code in (403, 405), (response.status_code, response.content[:200])

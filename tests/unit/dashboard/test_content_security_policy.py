"""Every page carries a strict Content-Security-Policy (django-csp: nothing inline, nothing from another host), and
the pages give it nothing inline to refuse: no <style> element, no style="" or on…="" attribute, no <script>
without src (JSON data blocks aside). The API docs keep their own policy (Swagger UI needs inline code)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from tests.api_support import create_connector, make_user
from web.sparkjobs.models import JobDefinition

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _quiet(no_redis, monkeypatch):
    monkeypatch.setattr("workers.publish.history", lambda connector, rs: [])


class InlineFinder(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        names = dict(attrs)
        if tag == "style":
            self.found.append("<style>")
        if tag == "script" and not names.get("src") and names.get("type") not in ("application/json",):
            self.found.append("<script> without src")
        self.found += [f"{tag} {name}=" for name in names if name == "style" or name.startswith("on")]


def directives(response) -> dict[str, str]:
    header = response["Content-Security-Policy"]
    return {part.split()[0]: part.strip() for part in header.split(";") if part.strip()}


@pytest.mark.parametrize("path", ["/login/", "/", "/connectors/orders/", "/connectors/orders/offsets/",
                                  "/connectors/new/", "/topics/", "/spark/", "/spark/jobs/new/", "/spark/jobs/stats/",
                                  "/no/such/page/"])
def test_pages_carry_a_strict_policy_and_nothing_inline(client, django_user_model, path):
    create_connector("orders", state="stopped")
    JobDefinition.objects.create(name="stats", template="stats", topics=["t"])
    if path != "/login/":
        client.force_login(make_user(django_user_model, "admin"))
    response = client.get(path)
    assert response.status_code in (200, 404), (path, response.status_code)
    policy = directives(response)
    assert policy["default-src"] == "default-src 'self'"
    assert policy["script-src"] == "script-src 'self'" and policy["style-src"] == "style-src 'self'"
    assert policy["frame-ancestors"] == "frame-ancestors 'none'" and policy["object-src"] == "object-src 'none'"
    finder = InlineFinder()
    finder.feed(response.content.decode())
    assert finder.found == [], (path, finder.found)


def test_api_answers_carry_the_policy_and_the_docs_keep_their_own(client, django_user_model):
    client.force_login(make_user(django_user_model, "viewer"))
    assert "script-src 'self'" in client.get("/api/connectors/")["Content-Security-Policy"]
    docs = client.get("/api/docs/")["Content-Security-Policy"]
    assert "script-src 'self' 'unsafe-inline'" in docs  # Swagger UI's inline start-up code

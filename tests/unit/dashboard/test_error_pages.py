"""Error answers: pages in the site's layout with the reason and a way back, JSON under /api/ and /connect/, with
DEBUG on (development, the demo) and off (production); bad query parameters are a 400, never a 500."""

from __future__ import annotations

import pytest

from tests.api_support import client_for, create_connector, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _quiet(no_redis, monkeypatch):
    monkeypatch.setattr("workers.publish.history", lambda connector, rs: [])


@pytest.fixture(params=[True, False], ids=["debug", "production"])
def debug(request, settings):
    settings.DEBUG = request.param
    return request.param


def login(client, django_user_model, role):
    client.force_login(make_user(django_user_model, role))


def test_unknown_page_is_a_404_page_in_the_layout(client, django_user_model, debug):
    login(client, django_user_model, "viewer")
    response = client.get("/no/such/page/", HTTP_REFERER="http://testserver/connectors/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "There is no page at /no/such/page/." in page
    assert 'class="mainnav"' in page and 'href="/"' in page  # the site's navigation and a way back
    assert "http://testserver/connectors/" in page
    assert "Traceback" not in page and "URLconf" not in page


def test_unknown_connector_page_names_it(client, django_user_model, debug):
    login(client, django_user_model, "viewer")
    response = client.get("/connectors/nope/")
    page = response.content.decode()
    assert response.status_code == 404 and "There is no such connector (nothing at /connectors/nope/)." in page
    assert "matches the given query" not in page  # Django's words name a model class, not what is missing


def test_forbidden_page_says_which_role(client, django_user_model, debug):
    login(client, django_user_model, "viewer")
    response = client.get("/connectors/new/")
    assert response.status_code == 403
    page = response.content.decode()
    assert "This page needs the admin role." in page and 'class="mainnav"' in page


def test_csrf_failure_is_explained(django_user_model, debug):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user(django_user_model, "admin"))
    response = client.post("/connectors/new/", {"name": "x"})
    assert response.status_code == 403
    assert "Reload the page and try again" in response.content.decode()


def test_unknown_paths_under_the_apis_answer_json(django_user_model, debug):
    client = client_for(make_user(django_user_model, "viewer"))
    connect = client.get("/connect/connectors/x/nothing/here")
    assert connect.status_code == 404
    assert connect.json() == {"error_code": 404, "message": "There is no page at /connect/connectors/x/nothing/here."}
    api = client.get("/api/nothing/")
    assert api.status_code == 404 and api.json() == {"detail": "There is no page at /api/nothing/."}


@pytest.mark.parametrize("query", ["n=abc", "n=1.5", "n=0", "n=100000"])
def test_topic_browser_refuses_a_bad_count_with_a_400_page(client, django_user_model, query, debug):
    login(client, django_user_model, "viewer")
    create_connector("orders")
    response = client.get(f"/connectors/orders/topics/shop.inventory.orders/?{query}")
    assert response.status_code == 400
    page = response.content.decode()
    assert "n=" in page and "whole number from 1 to 500" in page and 'class="mainnav"' in page


def test_history_refuses_bad_minutes(client, django_user_model):
    login(client, django_user_model, "viewer")
    create_connector("orders")
    assert client.get("/connectors/orders/history.json?minutes=abc").status_code == 400


def test_an_unexpected_exception_is_a_500_page_without_a_trace(client, django_user_model, monkeypatch, debug, caplog):
    login(client, django_user_model, "viewer")
    create_connector("orders")

    def boom(connector):
        raise RuntimeError("secret internals")

    monkeypatch.setattr("web.dashboard.observed.connector_view", boom)
    response = client.get("/connectors/orders/")
    assert response.status_code == 500
    page = response.content.decode()
    assert "secret internals" not in page and "Traceback" not in page
    assert "GET /connectors/orders/" in page and 'class="mainnav"' in page
    assert "secret internals" in caplog.text  # the traceback goes to the log


@pytest.mark.parametrize(("url", "said"), [
    ("/api/connectors/nope/", "There is no such connector (nothing at /api/connectors/nope/)."),
    ("/api/connectors/nope/offsets/", "There is no such connector (nothing at /api/connectors/nope/offsets/)."),
    ("/api/spark/jobs/nope/", "There is no such Spark job (nothing at /api/spark/jobs/nope/)."),
    ("/api/spark/runs/987654/", "There is no such Spark run (nothing at /api/spark/runs/987654/)."),
])
def test_api_404_names_what_is_missing_not_a_model_class(django_user_model, debug, url, said):
    response = client_for(make_user(django_user_model, "admin")).get(url)
    assert response.status_code == 404
    assert response.json() == {"detail": said}  # not DRF's "No JobDefinition matches the given query."


def test_spark_pages_404_name_what_is_missing(client, django_user_model, debug):
    login(client, django_user_model, "viewer")
    page = client.get("/spark/jobs/nope/").content.decode()
    assert "There is no such Spark job (nothing at /spark/jobs/nope/)." in page
    page = client.get("/spark/runs/987654/").content.decode()
    assert "There is no such Spark run (nothing at /spark/runs/987654/)." in page

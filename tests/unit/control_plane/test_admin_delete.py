"""The Django admin deletes a connector with everything that goes with it (observed state, requests, filter rows)
for an admin, through the services (audited), and still refuses a viewer."""

from __future__ import annotations

import pytest

from tests.api_support import create_connector
from web.connectors import services
from web.connectors.models import AuditEntry, Connector, ReplicaSetState

pytestmark = pytest.mark.django_db


def staff(django_user_model, role):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(f"staff-{role}", is_staff=True)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture
def connector(no_redis):
    connector = create_connector(**{"signal.data.collection": "inventory.signals"})
    services.report_observed("orders", "rs0", worker="w1", phase="streaming")
    services.request_snapshot(connector, ["inventory.orders"], user=None, source="system")
    services.request_state(connector, "paused", user=None, source="system")
    return connector


def test_admin_deletes_a_connector_with_its_observed_state(client, django_user_model, connector):
    client.force_login(staff(django_user_model, "admin"))
    url = f"/admin/connectors/connector/{connector.pk}/delete/"
    confirm = client.get(url)
    assert confirm.status_code == 200
    page = confirm.content.decode()
    assert "doesn" not in page and "permission to delete" not in page
    assert "replica set state" in page.lower()  # listed as going with it
    done = client.post(url, {"post": "yes"})
    assert done.status_code == 302
    assert not Connector.objects.exists() and not ReplicaSetState.objects.exists()
    entry = AuditEntry.objects.get(action="connector.delete")
    assert entry.source == "admin" and entry.username == "staff-admin"


def test_viewer_cannot_delete(client, django_user_model, connector):
    client.force_login(staff(django_user_model, "viewer"))
    assert client.post(f"/admin/connectors/connector/{connector.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Connector.objects.exists()

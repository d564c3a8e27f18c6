"""A connectivity check is bounded whoever it meets: in time, in the web process's threads and per user.

The hostile ends are real sockets: MongoDB seeds on 50 loopback addresses that accept connections and never say a
word (the driver would start threads per seed and wait on each), and a seed list of 10,000 hosts.
"""

from __future__ import annotations

import threading
import time

import pytest

from connectors.config.preflight_process import STARTUP_ALLOWANCE_S
from tests.api_support import client_for, make_user
from tests.fake_sources import FakeSource

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

CHECK_MS = 2000


@pytest.fixture
def operator(django_user_model, no_redis):
    return client_for(make_user(django_user_model, "operator"))


@pytest.fixture
def silent():
    fake = FakeSource.start("mongodb", any_loopback=True)
    yield fake
    fake.close()


def web_threads() -> set[str]:
    return {f"{t.name}:{t.ident}" for t in threading.enumerate() if not t.name.startswith("fake-")}


def validate(client, hosts: list[str]) -> tuple[dict, float]:
    body = {"name": "hostile", "topic_prefix": "h",
            "connection_string": f"mongodb://{','.join(hosts)}/?replicaSet=rs0"}
    started = time.monotonic()
    result = client.post("/api/connectors/validate/", body, format="json").json()
    return result, time.monotonic() - started


def test_silent_seeds_cost_bounded_time_and_no_thread(operator, silent, settings):
    settings.CDC_CONNECTIVITY_CHECK_MS = CHECK_MS
    before = web_threads()
    result, took = validate(operator, [f"127.0.0.{i}:{silent.port}" for i in range(1, 51)])
    assert result["connection_checked"] is True and result["valid"] is False, result
    assert silent.connections > 0  # the check did reach the hostile seeds
    assert took < CHECK_MS / 1000 + STARTUP_ALLOWANCE_S + 2, took
    assert web_threads() == before


def test_a_seed_list_longer_than_a_replica_set_is_refused_at_once(operator, settings):
    settings.CDC_CONNECTIVITY_CHECK_MS = CHECK_MS
    before = web_threads()
    hosts = [f"10.{i // 250}.{i % 250}.1:27017" for i in range(10_000)]
    result, took = validate(operator, hosts)
    messages = " ".join(problem["message"] for problem in result["problems"])
    assert "at most 50 seed hosts" in messages, result
    assert took < CHECK_MS / 1000 + STARTUP_ALLOWANCE_S, took
    assert web_threads() == before


def test_each_user_has_a_rate_of_checks(operator, silent, settings):
    settings.CDC_CONNECTIVITY_CHECK_MS = CHECK_MS
    settings.CDC_CONNECTIVITY_CHECK_RATE = "2/min"
    messages, waits = [], []
    for _ in range(3):
        result, _ = validate(operator, [f"127.0.0.1:{silent.port}"])
        messages.append(" ".join(problem["message"] for problem in result["problems"]))
        waits.append(result["retry_after_s"])
    assert all("too many connection checks" not in message for message in messages[:2]), messages
    assert "too many connection checks (2/min)" in messages[2], messages
    # a check not run is no verdict on the configuration: the answer says when to ask again (the form does)
    assert waits[:2] == [None, None] and 1 <= waits[2] <= 60, waits
    assert f"try again in {waits[2]} s" in messages[2], messages
    listing = operator.post("/api/connectors/tables/", {"connection_string": f"mongodb://127.0.0.1:{silent.port}/"},
                            format="json")
    assert listing.status_code == 429, listing.content
    assert 1 <= listing.json()["retry_after_s"] <= 60 and listing["Retry-After"] == str(listing.json()["retry_after_s"])


@pytest.mark.parametrize("kind", ["postgres", "mysql"])
def test_another_service_is_not_fingerprinted(operator, settings, kind):
    """A check that lands on another service says so, without quoting anything that service sent."""
    from tests.fake_sources import BANNER
    from tests.integration.control_plane.test_secret_destinations import CONNECTORS, moved

    settings.CDC_CONNECTIVITY_CHECK_MS = CHECK_MS
    fake = FakeSource.start("banner")
    try:
        config = {**CONNECTORS[kind], **moved(kind, fake.port), "name": "elsewhere"}
        result = operator.post("/api/connectors/validate/", {"name": "elsewhere", "config": config},
                               format="json").json()
    finally:
        fake.close()
    message = " ".join(problem["message"] for problem in result["problems"])
    assert fake.connections >= 1 and "did not answer as" in message, result
    banner_words = {BANNER[:1].decode(), str(BANNER[0]), "SSH", "OpenSSH", "HTTP", "received", "got"}
    assert not any(word in message.split() or word + ")" in message for word in banner_words), message

"""connectors.mysql.tls: what a server offered decides later connections' TLS options (pymysql's default first)."""

from __future__ import annotations

import ssl

import pymysql
import pytest
from pymysql.constants import CLIENT

from connectors import SourceUnreachable
from connectors.mysql import connection as mysql_connection
from connectors.mysql import tls
from connectors.mysql.connection import ConnectionSettings


class FakeConnection:
    def __init__(self, offers_tls: bool):
        self.server_capabilities = CLIENT.PROTOCOL_41 | (CLIENT.SSL if offers_tls else 0)


@pytest.fixture
def server():
    settings = ConnectionSettings(host="tls-test.invalid", port=3306)
    yield settings
    tls.forget(settings.server)


def test_options_follow_what_the_server_offered(server):
    assert tls.options(server.server) == {}  # nothing known: pymysql's own default
    tls.learn(server.server, FakeConnection(offers_tls=False))
    assert tls.options(server.server) == {"ssl_disabled": True}
    tls.learn(server.server, FakeConnection(offers_tls=True))
    first, second = tls.options(server.server)["ssl"], tls.options(server.server)["ssl"]
    assert first is second  # one context, not one per connection
    assert (first.verify_mode, first.check_hostname) == (ssl.CERT_NONE, False)  # as pymysql's default without a CA
    assert tls.forget(server.server) and not tls.forget(server.server)
    assert tls.options(server.server) == {}


def test_connect_learns_and_asks_again_when_a_known_server_fails(server, monkeypatch):
    calls: list[dict] = []

    def fake_connect(**kwargs):
        calls.append(kwargs)
        if len(calls) == 2:
            raise pymysql.err.OperationalError(2026, "TLS/SSL error: the server no longer offers it")
        return FakeConnection(offers_tls=len(calls) == 1)

    monkeypatch.setattr(mysql_connection.pymysql, "connect", fake_connect)
    mysql_connection.connect(server)
    assert "ssl" not in calls[0] and "ssl_disabled" not in calls[0]
    mysql_connection.connect(server)  # the second attempt fails with the learnt context, the third starts over
    assert isinstance(calls[1]["ssl"], ssl.SSLContext)
    assert "ssl" not in calls[2] and "ssl_disabled" not in calls[2]
    assert tls.options(server.server) == {"ssl_disabled": True}  # what the third connection found


def test_an_unreachable_known_server_is_not_tried_twice(server, monkeypatch):
    calls: list[dict] = []

    def unreachable(**kwargs):
        calls.append(kwargs)
        raise pymysql.err.OperationalError(2003, "Can't connect to MySQL server on 'tls-test.invalid'")

    tls.learn(server.server, FakeConnection(offers_tls=False))
    monkeypatch.setattr(mysql_connection.pymysql, "connect", unreachable)
    with pytest.raises(SourceUnreachable):
        mysql_connection.connect(server)
    assert len(calls) == 1  # one connect timeout, not two
    assert tls.options(server.server) == {}  # the next attempt starts from pymysql's default

"""TLS for MySQL/MariaDB connections: pymysql's default mode (TLS when the server offers it, its certificate not
checked, like Debezium's `database.ssl.mode=preferred`), without building an SSL context per connection.

pymysql's default builds a new context for every connection and loads the system's CA certificates into it (33 ms
of CPU here) although it checks no certificate; a connector opens several connections as it starts, and the tests open
many more. Once a connection has told what a server offers, later connections to it use plain TCP when it offers no
TLS, else one shared context of the same kind (unchecked), with TLS then required: a server that offered it is not
silently downgraded.
"""

from __future__ import annotations

import functools
import ssl
import threading

from pymysql.constants import CLIENT

_offers: dict[tuple, bool] = {}  # server (host, port, socket) -> whether it offered TLS to the last connection
_lock = threading.Lock()


@functools.cache
def _unchecked_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def options(server: tuple) -> dict:
    """pymysql.connect's TLS options for `server`: none (pymysql's own default) until a connection told what the
    server offers."""
    with _lock:
        offered = _offers.get(server)
    if offered is None:
        return {}
    return {"ssl": _unchecked_context()} if offered else {"ssl_disabled": True}


def learn(server: tuple, connection) -> None:
    """Records what `server` offered to `connection` (one made with `options(server)`)."""
    with _lock:
        _offers[server] = bool(connection.server_capabilities & CLIENT.SSL)


def forget(server: tuple) -> bool:
    """Forgets what `server` offered (its connection failed: it may have changed); whether anything was known."""
    with _lock:
        return _offers.pop(server, None) is not None

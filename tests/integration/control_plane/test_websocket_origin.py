"""The WebSocket Origin check on a real daphne: a logged-in user's socket opens from the site's own origin and is
refused from another port of the same host (a page served elsewhere on the machine riding the session cookie)."""

from __future__ import annotations

import base64
import os
import re
import socket
from urllib.parse import urlparse

import pytest
import requests

from tests.platform_processes import Platform

pytestmark = pytest.mark.integration
REDIS_DB = 3  # apart from a running demo (0) and the other process tests (4-15)


@pytest.fixture(scope="module")
def site(stack, tmp_path_factory):
    platform = Platform(stack, tmp_path_factory.mktemp("websocket-origin"), REDIS_DB)
    try:
        platform.migrate()
        platform.django("from django.contrib.auth.models import Group, User\n"
                        "user = User.objects.create_user('sockets', password='Origin-test-pw-1')\n"
                        "user.groups.add(Group.objects.get_or_create(name='viewer')[0])\n")
        yield platform.start_web()
    finally:
        platform.stop()


def logged_in_cookie(base_url: str) -> str:
    session = requests.Session()
    page = session.get(f"{base_url}/login/", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    answer = session.post(f"{base_url}/login/", timeout=30, allow_redirects=False, headers={"Referer": page.url},
                          data={"username": "sockets", "password": "Origin-test-pw-1", "csrfmiddlewaretoken": token})
    assert answer.status_code == 302, answer.text[:500]
    return "; ".join(f"{name}={value}" for name, value in session.cookies.items())


def handshake_status(base_url: str, origin: str, cookie: str) -> int:
    """The HTTP status daphne answers a WebSocket upgrade of /ws/ping/ with (101: the socket is open)."""
    address = urlparse(base_url)
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET /ws/ping/ HTTP/1.1\r\nHost: {address.netloc}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: {origin}\r\n"
               f"Cookie: {cookie}\r\n\r\n")
    with socket.create_connection((address.hostname, address.port), timeout=30) as connection:
        connection.sendall(request.encode())
        status_line = connection.makefile("rb").readline().decode()
    return int(status_line.split()[1])


def test_socket_opens_only_from_the_sites_own_origin(site):
    cookie = logged_in_cookie(site)
    port = urlparse(site).port
    assert handshake_status(site, site, cookie) == 101
    assert handshake_status(site, f"http://localhost:{port}", cookie) == 403  # same port, another host name
    other_port = 9999 if port != 9999 else 9998
    assert handshake_status(site, f"http://127.0.0.1:{other_port}", cookie) == 403
    assert handshake_status(site, "http://127.0.0.1", cookie) == 403  # port 80
    assert handshake_status(site, f"https://127.0.0.1:{port}", cookie) == 101  # the port is what names the site
    assert handshake_status(site, "null", cookie) == 403

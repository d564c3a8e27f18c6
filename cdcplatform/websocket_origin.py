"""The Origin check of WebSocket handshakes: a browser page may open the dashboard's sockets only from the site's
own origin — the same host AND port the handshake was sent to (its Host header), the host being one of
ALLOWED_HOSTS — or from an origin listed in CSRF_TRUSTED_ORIGINS (a TLS proxy in front, another port on purpose).
Channels' AllowedHostsOriginValidator compares host names only, so a page on another port of the same machine
(http://127.0.0.1:9999) could ride a user's session cookie.

A handshake without a Host header (not something a browser sends) is held to ALLOWED_HOSTS alone."""

from __future__ import annotations

from urllib.parse import urlparse

from channels.security.websocket import OriginValidator, WebsocketDenier
from django.conf import settings


class SameOriginValidator(OriginValidator):
    def __init__(self, application):
        allowed_hosts = settings.ALLOWED_HOSTS
        if settings.DEBUG and not allowed_hosts:
            allowed_hosts = ["localhost", "127.0.0.1", "[::1]"]  # Django's own rule under DEBUG
        super().__init__(application, allowed_hosts)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "websocket":
            raise ValueError("SameOriginValidator guards WebSocket connections only")
        origin = _header(scope, b"origin")
        if origin is not None and self.same_site(urlparse(origin), _header(scope, b"host")):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)

    def same_site(self, origin, host: str | None) -> bool:
        if origin.hostname is None:
            return False
        if any(self.match_allowed_origin(origin, trusted) for trusted in settings.CSRF_TRUSTED_ORIGINS):
            return True
        if not self.validate_origin(origin):
            return False
        if host is None:
            return True
        target = urlparse(f"//{host}")
        # A Host header leaves out the port exactly when it is the default of the scheme the page was loaded with.
        target_port = target.port if target.port is not None else self.get_origin_port(origin)
        return (target.hostname or "").lower() == origin.hostname.lower() and target_port == self.get_origin_port(
            origin)


def _header(scope, name: bytes) -> str | None:
    for header, value in scope.get("headers", []):
        if header == name:
            return value.decode("latin1")
    return None

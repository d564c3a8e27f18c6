"""The ASGI application: HTTP through Django, WebSocket through Channels.

Serve it with `daphne -b 127.0.0.1 -p 8000 cdcplatform.asgi:application`.
WebSocket connections must come from the site's own origin (host and port; cdcplatform/websocket_origin.py) and
carry the Django session cookie; consumers refuse anonymous users themselves.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cdcplatform.settings")
django_http = get_asgi_application()  # sets Django up before anything below imports models

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402

from cdcplatform.routing import websocket_urlpatterns  # noqa: E402
from cdcplatform.websocket_origin import SameOriginValidator  # noqa: E402
from web.dashboard.static_files import PlainStaticFiles  # noqa: E402

application = ProtocolTypeRouter({
    "http": PlainStaticFiles(django_http) if settings.SERVE_STATIC else django_http,
    "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
})

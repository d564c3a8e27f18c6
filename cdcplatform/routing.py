"""WebSocket URL map of the whole project: each app contributes its `websocket_urlpatterns`."""

from web.dashboard.routing import websocket_urlpatterns as dashboard_websockets

websocket_urlpatterns = [*dashboard_websockets]

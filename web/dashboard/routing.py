from django.urls import path

from web.dashboard.consumers import MetricsConsumer, PingConsumer

websocket_urlpatterns = [
    path("ws/ping/", PingConsumer.as_asgi()),
    path("ws/metrics/", MetricsConsumer.as_asgi()),
]

from django.urls import path

from web.dashboard.consumers import MetricsConsumer, PingConsumer
from web.dashboard.topic_tail import TopicTailConsumer

websocket_urlpatterns = [
    path("ws/ping/", PingConsumer.as_asgi()),
    path("ws/metrics/", MetricsConsumer.as_asgi()),
    path("ws/topics/<str:topic>/", TopicTailConsumer.as_asgi()),
]

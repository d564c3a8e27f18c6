"""/connect/: the Kafka Connect REST API surface (paths without trailing slash, as Connect serves them; a trailing
slash is accepted too)."""

from django.urls import re_path

from web.connectors.connect import views

NAME = r"(?P<name>[^/]+)"

urlpatterns = [
    re_path(r"^$", views.RootView.as_view()),
    re_path(r"^connector-plugins/?$", views.PluginsView.as_view()),
    re_path(r"^connector-plugins/(?P<plugin>[^/]+)/config/validate/?$", views.ValidateView.as_view()),
    re_path(r"^connectors/?$", views.ConnectorsView.as_view(), name="connect-connectors"),
    re_path(rf"^connectors/{NAME}/?$", views.ConnectorView.as_view()),
    re_path(rf"^connectors/{NAME}/config/?$", views.ConfigView.as_view()),
    re_path(rf"^connectors/{NAME}/status/?$", views.StatusView.as_view()),
    re_path(rf"^connectors/{NAME}/tasks/?$", views.TasksView.as_view()),
    re_path(rf"^connectors/{NAME}/tasks/(?P<task>[0-9]{{1,9}})/status/?$", views.TaskStatusView.as_view()),
    re_path(rf"^connectors/{NAME}/restart/?$", views.RestartView.as_view()),
    re_path(rf"^connectors/{NAME}/pause/?$", views.PauseView.as_view()),
    re_path(rf"^connectors/{NAME}/resume/?$", views.ResumeView.as_view()),
    re_path(rf"^connectors/{NAME}/stop/?$", views.StopView.as_view()),
    re_path(rf"^connectors/{NAME}/offsets/?$", views.OffsetsView.as_view()),
    re_path(rf"^connectors/{NAME}/tasks/(?P<task>[0-9]{{1,9}})/restart/?$", views.TaskRestartView.as_view()),
    re_path(rf"^connectors/{NAME}/topics/?$", views.TopicsView.as_view()),
    re_path(rf"^connectors/{NAME}/topics/reset/?$", views.TopicsResetView.as_view()),
    re_path(r"^admin/loggers/?$", views.LoggersView.as_view()),
    re_path(r"^admin/loggers/(?P<logger>[^/]+)/?$", views.LoggerView.as_view()),
]

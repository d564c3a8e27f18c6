"""/connect/: the Kafka Connect REST API surface (paths without trailing slash, as Connect serves them; a trailing
slash is accepted too, and left out of the OpenAPI schema so each operation is listed once)."""

from django.urls import re_path

from web.connectors.connect import schema, views  # noqa: F401 - schema annotates the views for drf-spectacular

NAME = r"(?P<name>[^/]+)"
TASK = r"(?P<task>[0-9]{1,9})"


def unlisted(view: type[views.ConnectView]) -> type[views.ConnectView]:
    """The same view, absent from the OpenAPI schema (for the trailing-slash spelling of a path)."""
    return type(view.__name__, (view,), {"schema": None})


def route(pattern: str, view: type[views.ConnectView], **kwargs) -> list:
    return [re_path(rf"^{pattern}$", view.as_view(), **kwargs), re_path(rf"^{pattern}/$", unlisted(view).as_view())]


root_without_slash = unlisted(views.RootView).as_view()  # GET /connect: a client's base URL without the slash

urlpatterns = [
    re_path(r"^$", views.RootView.as_view()),
    *route("connector-plugins", views.PluginsView),
    *route(r"connector-plugins/(?P<plugin>[^/]+)/config/validate", views.ValidateView),
    *route("connectors", views.ConnectorsView, name="connect-connectors"),
    *route(f"connectors/{NAME}", views.ConnectorView),
    *route(f"connectors/{NAME}/config", views.ConfigView),
    *route(f"connectors/{NAME}/status", views.StatusView),
    *route(f"connectors/{NAME}/tasks", views.TasksView),
    *route(f"connectors/{NAME}/tasks/{TASK}/status", views.TaskStatusView),
    *route(f"connectors/{NAME}/tasks/{TASK}/restart", views.TaskRestartView),
    *route(f"connectors/{NAME}/restart", views.RestartView),
    *route(f"connectors/{NAME}/pause", views.PauseView),
    *route(f"connectors/{NAME}/resume", views.ResumeView),
    *route(f"connectors/{NAME}/stop", views.StopView),
    *route(f"connectors/{NAME}/offsets", views.OffsetsView),
    *route(f"connectors/{NAME}/topics", views.TopicsView),
    *route(f"connectors/{NAME}/topics/reset", views.TopicsResetView),
    *route("admin/loggers", views.LoggersView),
    *route(r"admin/loggers/(?P<logger>[^/]+)", views.LoggerView),
]

"""/api/ URL map (docs/api.md)."""

from django.contrib.auth.decorators import login_required
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from web.accounts.api import TokenView
from web.connectors.api.docs import local_only
from web.connectors.api.views import NAME_PATTERN, AuditViewSet, ConnectorViewSet, FilterViewSet, MeView
from web.connectors.verify_api import VerifyRunsView, VerifyRunView, VerifyScheduleView
from web.dashboard.group_api import GroupResetView, GroupsView, GroupView
from web.dashboard.topic_api import ProduceView, TopicConfigView, TopicsView, TopicView

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.register("connectors", ConnectorViewSet, basename="connector")
router.register(f"connectors/(?P<connector_name>{NAME_PATTERN})/filters", FilterViewSet, basename="connector-filter")
router.register("audit", AuditViewSet, basename="audit")

urlpatterns = [
    re_path(rf"^connectors/(?P<name>{NAME_PATTERN})/verify/$", VerifyRunsView.as_view(), name="connector-verify"),
    re_path(rf"^connectors/(?P<name>{NAME_PATTERN})/verify/schedule/$", VerifyScheduleView.as_view(),
            name="connector-verify-schedule"),
    re_path(rf"^connectors/(?P<name>{NAME_PATTERN})/verify/(?P<run_id>[0-9]+)/$", VerifyRunView.as_view(),
            name="connector-verify-run"),
    path("consumer-groups/", GroupsView.as_view(), name="api-groups"),
    path("consumer-groups/<str:group>/", GroupView.as_view(), name="api-group"),
    path("consumer-groups/<str:group>/reset/", GroupResetView.as_view(), name="api-group-reset"),
    path("topics/", TopicsView.as_view(), name="api-topics"),
    path("topics/<str:topic>/", TopicView.as_view(), name="api-topic"),
    path("topics/<str:topic>/config/", TopicConfigView.as_view(), name="api-topic-config"),
    path("topics/<str:topic>/messages/", ProduceView.as_view(), name="api-topic-produce"),
    path("", include(router.urls)),
    path("me/", MeView.as_view(), name="api-me"),
    path("auth/token/", TokenView.as_view(), name="api-token"),
    # Browsable docs: a login page for anonymous browsers (the schema itself answers 401 to scripts).
    path("docs/", login_required(local_only(SpectacularSwaggerView.as_view(url_name="api-schema"))), name="api-docs"),
    path("redoc/", login_required(local_only(SpectacularRedocView.as_view(url_name="api-schema",
                                                                         template_name="api/redoc.html"))),
         name="api-redoc"),
]

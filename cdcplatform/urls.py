"""HTTP URL map. Every page requires a login (web.accounts.middleware) except /login/ and /healthz;
/api/ and /connect/ answer 401/403 through DRF permissions instead of redirecting (docs/api.md);
/metrics takes a viewer's API token as a bearer token (docs/dashboard.md)."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from cdcplatform.health import healthz
from web.connectors.connect.urls import root_without_slash as connect_root
from web.dashboard.views import home

urlpatterns = [
    path("", home, name="home"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/spark/", include("web.sparkjobs.api.urls")),
    path("api/", include("web.connectors.api.urls")),
    path("connect", connect_root),  # a Connect client's base URL without the slash: GET / of Connect
    path("connect/", include("web.connectors.connect.urls")),
    path("spark/", include("web.sparkjobs.urls")),
    path("", include("web.dashboard.urls")),  # overview, connector pages, /metrics (docs/dashboard.md)
]

# Error answers in the site's layout, or JSON under /api/ and /connect/ (web/dashboard/errors.py).
handler400 = "web.dashboard.errors.bad_request"
handler403 = "web.dashboard.errors.permission_denied"
handler404 = "web.dashboard.errors.page_not_found"
handler500 = "web.dashboard.errors.server_error"

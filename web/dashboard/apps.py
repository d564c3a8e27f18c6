"""The dashboard: server-rendered pages and the WebSocket consumers that feed their live parts."""
from django.apps import AppConfig
from django.conf import settings
from django.core import checks


def vendor_files_installed(app_configs=None, **kwargs):
    from web.dashboard.vendor import missing_files

    missing = missing_files(getattr(settings, "STATICFILES_DIRS", []))
    if not missing:
        return []
    return [checks.Warning(
        f"dashboard front-end files missing: {', '.join(missing)}",
        hint="Run `npm ci` at the repository root (scripts/install.sh does) so node_modules holds htmx and uPlot.",
        id="dashboard.W001",
    )]


class DashboardConfig(AppConfig):
    name = "web.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard"

    def ready(self):
        checks.register(vendor_files_installed, checks.Tags.staticfiles)

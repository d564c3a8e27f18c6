from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "web.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard"

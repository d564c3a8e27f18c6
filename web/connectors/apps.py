from django.apps import AppConfig


class ConnectorsConfig(AppConfig):
    name = "web.connectors"
    label = "connectors"
    verbose_name = "Connectors"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from web.connectors import checks  # noqa: F401 - registers the system checks

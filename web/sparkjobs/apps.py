from django.apps import AppConfig


class SparkJobsConfig(AppConfig):
    name = "web.sparkjobs"
    label = "sparkjobs"
    verbose_name = "Spark jobs"
    default_auto_field = "django.db.models.BigAutoField"

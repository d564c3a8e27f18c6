"""/api/spark/ URL map (docs/api.md, "Spark jobs")."""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from web.sparkjobs.api.views import JobViewSet, RunViewSet

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.register("jobs", JobViewSet, basename="spark-job")
router.register("runs", RunViewSet, basename="spark-run")

urlpatterns = [path("", include(router.urls))]

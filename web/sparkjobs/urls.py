"""Spark pages (included at /spark/ by cdcplatform/urls.py)."""

from django.urls import path

from web.sparkjobs import views

app_name = "spark"

urlpatterns = [
    path("", views.job_list, name="jobs"),
    path("jobs/new/", views.job_create, name="job-new"),
    path("jobs/<slug:name>/", views.job_detail, name="job"),
    path("jobs/<slug:name>/edit/", views.job_edit, name="job-edit"),
    path("jobs/<slug:name>/tables/", views.job_tables, name="job-tables"),
    path("jobs/<slug:name>/delete/", views.job_delete, name="job-delete"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("runs/<int:run_id>/preview.csv", views.run_preview_csv, name="run-preview-csv"),
]

"""Spark pages: the job list, a job with its runs, the job form, and the run page (live log, progress, outcome and
preview, refreshed from the API by static/sparkjobs/run.js). Launch and cancel buttons post to the API, which
checks the roles again; the form saves through the API's serializer."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_safe

from web.accounts.roles import ADMIN, OPERATOR, VIEWER, has_role
from web.dashboard.views import role_required
from web.sparkjobs import delta_tables, services
from web.sparkjobs.api.serializers import JobDefinitionSerializer, JobRunSerializer
from web.sparkjobs.arguments import job_dir, masked
from web.sparkjobs.cluster import application_url
from web.sparkjobs.csv_cells import csv_cell
from web.sparkjobs.forms import SparkJobForm
from web.sparkjobs.models import JobDefinition, JobRun


class _ApiRequest:
    """What the API serializer needs of a request (the user), for saving through it from a page."""

    def __init__(self, request):
        self.user = request.user


def _roles(request) -> dict:
    return {"can_operate": has_role(request.user, OPERATOR), "can_admin": has_role(request.user, ADMIN)}


def _may_change(request, definition: JobDefinition | None) -> bool:
    needed = ADMIN if definition is not None and definition.is_script else OPERATOR
    return has_role(request.user, needed)


@require_safe
@role_required(VIEWER)
def job_list(request):
    jobs = JobDefinition.objects.prefetch_related("runs").order_by("name")
    runs = JobRun.objects.select_related("definition", "requested_by")[:20]
    return render(request, "sparkjobs/jobs.html", {"jobs": jobs, "runs": runs, **_roles(request)})


@require_safe
@role_required(VIEWER)
def job_detail(request, name):
    definition = get_object_or_404(JobDefinition, name=name)
    return render(request, "sparkjobs/job.html", {
        "job": definition, "runs": definition.runs.select_related("requested_by")[:50],
        "arguments": json.dumps(masked(definition.arguments or {}), indent=2),
        "may_change": _may_change(request, definition), **_roles(request),
    })


@require_safe
@role_required(VIEWER)
def job_tables(request, name):
    """A Delta sync's tables (rows, versions, last position, lag) and the box that queries them (a Spark run)."""
    definition = get_object_or_404(JobDefinition, name=name)
    try:
        tables, problem = delta_tables.synced_tables(definition), None
    except delta_tables.NotADeltaSync as error:
        tables, problem = None, str(error)
    for table in (tables or {}).get("tables", []):
        for version in table["versions"]:
            version["at"] = datetime.fromtimestamp(version["timestamp_ms"] / 1000, tz=UTC)
    return render(request, "sparkjobs/delta_tables.html", {
        "job": definition, "sync": tables, "problem": problem,
        "may_query": has_role(request.user, OPERATOR), **_roles(request),
    }, status=404 if definition.template != "delta_sync" else 200)


def _save(request, definition: JobDefinition | None):
    admin = has_role(request.user, ADMIN)
    form = SparkJobForm(request.POST or None, definition=definition, admin=admin)
    if request.method == "POST" and form.is_valid():
        serializer = JobDefinitionSerializer(definition, data=form.api_body(),
                                             context={"request": _ApiRequest(request)})
        if serializer.is_valid():
            saved = services.save_definition(serializer, request.user, "dashboard")
            messages.success(request, f"Job {saved.name} saved.")
            return redirect("spark:job", name=saved.name)
        form.add_api_errors(serializer.errors)
    return render(request, "sparkjobs/form.html", {"form": form, "job": definition, **_roles(request)},
                  status=400 if form.errors else 200)


@role_required(OPERATOR)
def job_create(request):
    return _save(request, None)


@role_required(OPERATOR)
def job_edit(request, name):
    definition = get_object_or_404(JobDefinition, name=name)
    if definition.is_script and not has_role(request.user, ADMIN):
        raise PermissionDenied("PySpark script jobs are changed by admins only.")
    return _save(request, definition)


def job_delete(request, name):
    """GET: what deleting means, with the choice to delete the job's output too; POST: delete."""
    definition = get_object_or_404(JobDefinition, name=name)
    if not _may_change(request, definition):
        raise PermissionDenied("Deleting this job needs the " + ("admin" if definition.is_script else "operator")
                               + " role.")
    if request.method == "POST":
        delete_output = request.POST.get("output") == "delete"
        try:
            services.delete_definition(definition, request.user, "dashboard", delete_output=delete_output)
        except services.SparkServiceError as error:
            messages.error(request, f"{name} was not deleted: {error}")
            return redirect("spark:job", name=name)
        messages.success(request, f"Job {name} deleted with its runs"
                                  + ("; its output folder too." if delete_output else "; its output was kept."))
        return redirect("spark:jobs")
    return render(request, "sparkjobs/delete.html", {"job": definition, "folder": job_dir(name), **_roles(request)})


@require_safe
@role_required(VIEWER)
def run_detail(request, run_id):
    run = get_object_or_404(JobRun.objects.select_related("definition"), pk=run_id)
    may_cancel = has_role(request.user, ADMIN if run.template == "script" else OPERATOR)
    return render(request, "sparkjobs/run.html", {
        "run": run, "job": run.definition, "may_cancel": may_cancel,
        "application_url": application_url(run.master, run.app_id),
        "initial": JobRunSerializer(run).data, **_roles(request),
    })


@require_safe
@role_required(VIEWER)
def run_preview_csv(request, run_id):
    """The run's preview (the rows the run page shows) as CSV; nested values as JSON text, formulas defused."""
    run = get_object_or_404(JobRun.objects.select_related("definition"), pk=run_id)
    preview = run.preview or {}
    if not preview.get("columns"):
        raise Http404(f"run #{run.pk} of {run.definition.name} has no preview")
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{run.definition.name}-run-{run.pk}.csv"'
    writer = csv.writer(response)
    writer.writerow([csv_cell(name) for name in preview["columns"]])
    for row in preview.get("rows", []):
        writer.writerow([csv_cell(value) for value in row])
    return response

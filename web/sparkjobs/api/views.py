"""/api/spark/: job definitions, launching and cancelling runs, runs with their outcome and log (docs/api.md).

Roles: viewers read (a Delta sync's tables too); operators create, change, delete and run jobs of the latest_state,
stats, delta_sync and sql templates, query a Delta sync's tables (a Spark run) and cancel their runs; `script` jobs
(arbitrary PySpark code) need the admin role for every change, launch and cancel.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, PermissionDenied, ValidationError
from rest_framework.response import Response

from web.accounts.roles import ADMIN, OPERATOR, has_role
from web.connectors.api.paging import StrictLimitOffsetPagination, check_query
from web.connectors.api.permissions import RolePermission
from web.connectors.api.views import source_of
from web.sparkjobs import delta_tables, services
from web.sparkjobs.api import serializers as s
from web.sparkjobs.models import JobDefinition, JobRun, RunStatus

NAME_PATTERN = r"[-A-Za-z0-9_]+"
ERROR = OpenApiResponse(description='Error: {"detail": …} or field errors')
LOG_PAGE = 1000


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT


def require_script_admin(request, template: str) -> None:
    if template == "script" and not has_role(request.user, ADMIN):
        raise PermissionDenied("PySpark script jobs run arbitrary code: this needs the admin role.")


@extend_schema_view(
    list=extend_schema(summary="List Spark jobs"),
    retrieve=extend_schema(summary="A Spark job"),
    create=extend_schema(summary="Create a Spark job (operator; script jobs: admin)",
                         responses={201: s.JobDefinitionSerializer, 400: ERROR, 403: ERROR}),
    update=extend_schema(summary="Replace a Spark job (operator; script jobs: admin)"),
    partial_update=extend_schema(summary="Change a Spark job (operator; script jobs: admin)"),
    destroy=extend_schema(summary="Delete a Spark job and its runs (operator; script jobs: admin)",
                          responses={204: None, 409: ERROR}),
)
class JobViewSet(viewsets.ModelViewSet):
    serializer_class = s.JobDefinitionSerializer
    permission_classes = [RolePermission]
    lookup_field = "name"
    lookup_value_regex = NAME_PATTERN
    action_roles = {"create": OPERATOR, "update": OPERATOR, "partial_update": OPERATOR, "destroy": OPERATOR,
                    "run": OPERATOR, "query": OPERATOR}

    def get_queryset(self):
        return JobDefinition.objects.select_related("created_by", "updated_by")

    def perform_create(self, serializer):
        require_script_admin(self.request, serializer.validated_data["template"])
        services.save_definition(serializer, self.request.user, "api")

    def perform_update(self, serializer):
        require_script_admin(self.request, serializer.instance.template)
        require_script_admin(self.request, serializer.validated_data["template"])
        services.save_definition(serializer, self.request.user, "api")

    def perform_destroy(self, instance):
        require_script_admin(self.request, instance.template)
        try:
            services.delete_definition(instance, self.request.user,
                                       delete_output=self.request.query_params.get("output") in ("1", "true"))
        except services.SparkServiceError as error:
            raise Conflict(str(error)) from None

    @extend_schema(summary="Launch a run (operator; script jobs: admin)", request=None,
                   responses={202: s.JobRunSerializer, 403: ERROR})
    @action(detail=True, methods=["post"])
    def run(self, request, name=None):
        definition = self.get_object()
        require_script_admin(request, definition.template)
        launched = services.launch(definition, request.user, source=source_of(request))
        return Response(s.JobRunSerializer(launched).data, status=status.HTTP_202_ACCEPTED)


    @extend_schema(summary="A Delta sync job's tables: rows, versions, last source position, lag",
                   responses={200: s.DeltaTablesSerializer, 400: ERROR})
    @action(detail=True, methods=["get"])
    def tables(self, request, name=None):
        definition = self.get_object()
        try:
            return Response(delta_tables.synced_tables(definition))
        except delta_tables.NotADeltaSync as error:
            raise ValidationError({"detail": str(error)}) from None

    @extend_schema(summary="Query a Delta sync job's tables: a read-only SQL run of Spark (operator)",
                   request=s.DeltaQuerySerializer, responses={202: s.JobRunSerializer, 400: ERROR, 403: ERROR})
    @action(detail=True, methods=["post"])
    def query(self, request, name=None):
        definition = self.get_object()
        body = s.DeltaQuerySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            launched = delta_tables.launch_query(definition, body.validated_data["sql"], request.user,
                                                 source=source_of(request))
        except ValueError as error:  # NotADeltaSync too
            raise ValidationError({"detail": str(error)}) from None
        return Response(s.JobRunSerializer(launched).data, status=status.HTTP_202_ACCEPTED)


class OptionalPaging(StrictLimitOffsetPagination):
    default_limit = None  # a plain list unless ?limit= is given

    def get_paginated_response_schema(self, schema):
        return {"oneOf": [super().get_paginated_response_schema(schema), schema],
                "description": "A page ({count, next, previous, results}) with ?limit=, else the plain list."}


@extend_schema_view(
    list=extend_schema(summary="Spark runs, newest first", parameters=[
        OpenApiParameter("job", str, description="Only this job's runs"),
        OpenApiParameter("status", str, enum=RunStatus.values, description="Only runs in this status"),
    ]),
    retrieve=extend_schema(summary="A Spark run: status, progress, outcome, preview"),
)
class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = s.JobRunSerializer
    permission_classes = [RolePermission]
    pagination_class = OptionalPaging
    action_roles = {"cancel": OPERATOR}

    def get_queryset(self):
        runs = JobRun.objects.select_related("definition", "requested_by", "cancel_requested_by")
        if self.action == "list":
            check_query(self.request.query_params, {"job": None, "status": RunStatus.values})
        job = self.request.query_params.get("job")
        if job:
            runs = runs.filter(definition__name=job)
        wanted = self.request.query_params.get("status")
        if wanted:
            runs = runs.filter(status=wanted)
        return runs

    @extend_schema(summary="Cancel a run (operator; runs of script jobs: admin)", request=None,
                   responses={202: s.JobRunSerializer, 403: ERROR, 409: ERROR})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        run = self.get_object()
        require_script_admin(request, run.template)
        try:
            run = services.cancel(run, request.user, source=source_of(request))
        except services.SparkServiceError as error:
            raise Conflict(str(error)) from None
        return Response(s.JobRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(summary="The run's driver log (newest lines kept), after a sequence number",
                   parameters=[OpenApiParameter("after", int, description="Only lines after this `seq`")],
                   responses=s.RunLogSerializer)
    @action(detail=True, methods=["get"])
    def log(self, request, pk=None):
        run = self.get_object()
        try:
            after = int(request.query_params.get("after", 0))
        except ValueError:
            after = 0
        lines = list(run.log_lines.filter(seq__gt=after)[:LOG_PAGE])
        last = lines[-1].seq if lines else after
        return Response({"run": run.pk, "status": run.status, "last": last,
                         "lines": s.RunLogLineSerializer(lines, many=True).data})


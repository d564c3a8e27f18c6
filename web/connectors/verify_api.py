"""/api/connectors/<name>/verify/ (docs/verify.md, docs/api.md): start a Verify run (operator), list a connector's
runs and read one (viewer), and its nightly schedule (read: viewer, set: operator)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from web.accounts.roles import OPERATOR
from web.connectors.api.permissions import RolePermission
from web.connectors.api.views import ERROR, run, source_of
from web.connectors.models import Connector
from web.connectors.verify_models import VerifyRun, VerifySchedule
from web.connectors.verify_service import request_verify, set_schedule

HISTORY = 20  # runs listed by default
NAME = OpenApiParameter("name", OpenApiTypes.STR, OpenApiParameter.PATH, description="The connector's name.")
RUN_ID = OpenApiParameter("run_id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The run's id.")
LIMIT = OpenApiParameter("limit", OpenApiTypes.INT, OpenApiParameter.QUERY, description="Runs listed (1-200).")


class VerifyRunSerializer(serializers.ModelSerializer):
    requested_by = serializers.SerializerMethodField()

    class Meta:
        model = VerifyRun
        fields = ["id", "status", "trigger", "requested_by", "requested_at", "started_at", "finished_at", "progress",
                  "rows", "mismatched", "error", "report"]

    def get_requested_by(self, run: VerifyRun) -> str | None:
        return run.requested_by.get_username() if run.requested_by else None


class VerifyRunListSerializer(serializers.Serializer):
    results = VerifyRunSerializer(many=True)


class ScheduleSerializer(serializers.Serializer):
    nightly = serializers.BooleanField()
    hour = serializers.IntegerField(min_value=0, max_value=23, default=2)


class VerifyRunsView(APIView):
    permission_classes = [RolePermission]
    action_roles = {"POST": OPERATOR}

    @extend_schema(summary="Verify runs of a connector, newest first", parameters=[NAME, LIMIT],
                   operation_id="api_connectors_verify_list",
                   responses={200: VerifyRunListSerializer, 404: ERROR})
    def get(self, request, name: str):
        connector = get_object_or_404(Connector, name=name)
        try:
            limit = max(1, min(200, int(request.query_params.get("limit", HISTORY))))
        except ValueError:
            limit = HISTORY
        runs = connector.verify_runs.select_related("requested_by")[:limit]
        return Response({"results": VerifyRunSerializer(runs, many=True).data})

    @extend_schema(summary="Start a Verify run: the topics compared with the source, row by row (operator)",
                   parameters=[NAME], request=None, responses={202: VerifyRunSerializer, 403: ERROR, 404: ERROR,
                                                               409: ERROR})
    def post(self, request, name: str):
        connector = get_object_or_404(Connector, name=name)
        verify_run = run(request_verify, connector, user=request.user, source=source_of(request))
        return Response(VerifyRunSerializer(verify_run).data, status=status.HTTP_202_ACCEPTED)


class VerifyRunView(APIView):
    permission_classes = [RolePermission]

    @extend_schema(summary="One Verify run with its report", parameters=[NAME, RUN_ID],
                   operation_id="api_connectors_verify_run_retrieve",
                   responses={200: VerifyRunSerializer, 404: ERROR})
    def get(self, request, name: str, run_id: int):
        verify_run = get_object_or_404(VerifyRun.objects.select_related("requested_by"), pk=run_id,
                                       connector__name=name)
        return Response(VerifyRunSerializer(verify_run).data)


class VerifyScheduleView(APIView):
    permission_classes = [RolePermission]
    action_roles = {"PUT": OPERATOR}

    @extend_schema(summary="The connector's nightly Verify schedule", parameters=[NAME],
                   responses={200: ScheduleSerializer, 404: ERROR})
    def get(self, request, name: str):
        connector = get_object_or_404(Connector, name=name)
        schedule = VerifySchedule.objects.filter(connector=connector).first()
        return Response({"nightly": bool(schedule and schedule.nightly), "hour": schedule.hour if schedule else 2})

    @extend_schema(summary="Set the connector's nightly Verify schedule (operator)", parameters=[NAME],
                   request=ScheduleSerializer, responses={200: ScheduleSerializer, 400: ERROR, 403: ERROR, 404: ERROR})
    def put(self, request, name: str):
        connector = get_object_or_404(Connector, name=name)
        body = ScheduleSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        schedule = set_schedule(connector, nightly=body.validated_data["nightly"], hour=body.validated_data["hour"],
                                user=request.user, source=source_of(request))
        return Response({"nightly": schedule.nightly, "hour": schedule.hour})

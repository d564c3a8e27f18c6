"""REST API views: thin. Serializers validate, web.connectors.services writes, audits and notifies."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.authentication import SessionAuthentication
from rest_framework.decorators import action
from rest_framework.exceptions import APIException
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from web.accounts.roles import ADMIN, OPERATOR, VIEWER, highest_role
from web.connectors import activity as activity_log
from web.connectors import connectivity, services, validation
from web.connectors import offsets as offset_views
from web.connectors import state as connector_state
from web.connectors.api import serializers as s
from web.connectors.api import table_preview
from web.connectors.api.paging import StrictLimitOffsetPagination, check_query, whole_number
from web.connectors.api.permissions import RolePermission
from web.connectors.models import AuditEntry, Connector, DesiredState

NAME_PATTERN = r"[-A-Za-z0-9_]+"
ERROR = OpenApiResponse(description="Error: {\"detail\": …} or field errors")


class ServiceFailure(APIException):
    def __init__(self, error: services.ServiceError, detail: str | None = None):
        self.status_code = error.status_code
        super().__init__(detail=detail or str(error))


# How a caller has the pipeline stopped before an offset reset, in the terms of the page or the API.
STOP_HINTS = {"dashboard": 'tick "Stop it first" to have it stopped', "api": 'send "stop": true to have it stopped'}


def source_of(request) -> str:
    """The audit source: "dashboard" for the dashboard's own pages (their scripts send X-CDC-Source with the
    session), else "api"."""
    via_session = isinstance(getattr(request, "successful_authenticator", None), SessionAuthentication)
    return "dashboard" if via_session and request.headers.get("X-CDC-Source") == "dashboard" else "api"


def run(call, *args, **kwargs):
    """Calls a service, turning its errors into HTTP answers (400, 409, 503)."""
    try:
        return call(*args, **kwargs)
    except services.ServiceError as error:
        raise ServiceFailure(error) from None


def problems_of(serializer) -> list[dict[str, str]]:
    """Every error of a failed serializer as [{property, field, message}]."""
    found = getattr(serializer, "problems", None)
    if found is not None:
        return validation.problem_list(found)
    problems = []
    for field, messages in serializer.errors.items():
        if isinstance(messages, dict):
            for prop, inner in messages.items():
                problems += [{"property": prop, "field": field, "message": str(m)} for m in inner]
        else:
            prop = {"name": "name", "topic_prefix": "topic.prefix", "connection_string": "mongodb.connection.string",
                    "password": "mongodb.password"}.get(field, "")
            problems += [{"property": prop, "field": field, "message": str(m)} for m in messages]
    return problems


def accepted(connector: Connector, command: str, request=None) -> Response:
    """202 with the ControlRequest to follow (GET /api/connectors/{name}/requests/ shows how it ended)."""
    request = request or services.latest_request(connector)
    return Response({"name": connector.name, "desired_state": connector.desired_state, "requested": command,
                     "request": request.pk if request else None}, status=status.HTTP_202_ACCEPTED)


@extend_schema_view(
    list=extend_schema(summary="List connectors"),
    retrieve=extend_schema(summary="A connector"),
    create=extend_schema(summary="Create a connector (admin)", responses={201: s.ConnectorSerializer, 400: ERROR}),
    update=extend_schema(summary="Replace a connector's configuration (admin)"),
    partial_update=extend_schema(summary="Change some of a connector's configuration (admin)"),
    destroy=extend_schema(
        summary="Delete a connector (admin); a PostgreSQL connector's slot and publication stay unless dropped",
        parameters=[
            OpenApiParameter("drop_slot", bool, description=(
                "PostgreSQL: also drop the connector's replication slot (once its pipeline has stopped) and, when "
                "the connector creates its publication (publication.autocreate.mode is not disabled), the "
                "publication. Default false: both stay on the server, and the slot keeps WAL until dropped.")),
            OpenApiParameter("drop_publication", bool, description=(
                "PostgreSQL: drop the publication (true) or keep it (false); default: as drop_slot for a "
                "publication the connector creates, kept for one made by hand.")),
        ],
        responses={204: OpenApiResponse(description="Deleted (connectors other than PostgreSQL)"),
                   200: inline_serializer("ConnectorDeleted", {
                       "name": serializers.CharField(),
                       "server_objects": serializers.ListField(child=serializers.DictField(), help_text=(
                           "PostgreSQL: what became of the slot and the publication, each {kind, name, dropped, "
                           "message, sql}; sql drops by hand one that was left behind.")),
                       "warnings": serializers.ListField(child=serializers.CharField(), help_text=(
                           "A sentence for each object left behind, naming it with the SQL to drop it."))}),
                   400: ERROR, 409: ERROR, 503: ERROR}),
)
class ConnectorViewSet(viewsets.ModelViewSet):
    serializer_class = s.ConnectorSerializer
    permission_classes = [RolePermission]
    lookup_field = "name"
    lookup_value_regex = NAME_PATTERN
    action_roles = {
        "validate": VIEWER, "validate_existing": VIEWER, "status": VIEWER, "offsets": VIEWER, "requests": VIEWER,
        "activity": VIEWER,
        "pause": OPERATOR, "resume": OPERATOR, "restart": OPERATOR, "stop": OPERATOR, "snapshot": OPERATOR,
        "snapshot_stop": OPERATOR, "snapshot_pause": OPERATOR, "snapshot_resume": OPERATOR, "log_level": OPERATOR,
        "tables": OPERATOR, "tables_existing": OPERATOR,
        "reset_offsets": ADMIN,
    }

    def get_queryset(self):
        if getattr(self, "action", None) == "list":
            check_query(self.request.query_params, {})  # no filters here: a typo must not look like one
        return Connector.objects.prefetch_related("filters").select_related("created_by", "updated_by")

    def perform_create(self, serializer):
        data = serializer.validated_data
        serializer.instance = run(
            services.create_connector, data["parts"], user=self.request.user, source=source_of(self.request),
            desired_state=data.get("desired_state", DesiredState.RUNNING),
        )

    def perform_update(self, serializer):
        data = serializer.validated_data
        serializer.instance = run(
            services.update_connector, serializer.instance, data["parts"], user=self.request.user,
            source=source_of(self.request), desired_state=data.get("desired_state"),
        )

    def destroy(self, request, *args, **kwargs):
        yes_no = ("true", "false", "1", "0", "yes", "no")
        check_query(request.query_params, {"drop_slot": yes_no, "drop_publication": yes_no})
        flag = {name: request.query_params.get(name, "").lower() for name in ("drop_slot", "drop_publication")}
        connector = self.get_object()
        outcomes = run(services.delete_connector, connector, user=request.user, source=source_of(request),
                       drop_slot=flag["drop_slot"] in ("true", "1", "yes"),
                       drop_publication=flag["drop_publication"] in ("true", "1", "yes")
                       if flag["drop_publication"] else None)
        if not outcomes:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response({"name": connector.name, "server_objects": [outcome.as_dict() for outcome in outcomes],
                         "warnings": [outcome.message for outcome in outcomes if outcome.sql]})

    # -- validation ---------------------------------------------------------------------------------------------

    def _validation(self, serializer, extra: list[dict[str, str]] = ()) -> Response:
        valid = serializer.is_valid()
        problems = ([] if valid else problems_of(serializer)) + list(extra)
        return Response({"valid": not problems, "error_count": len(problems), "problems": problems,
                         "connection_checked": getattr(serializer, "connection_checked", False),
                         "retry_after_s": connectivity.retry_after(getattr(serializer, "problems", None))})

    @extend_schema(summary="Validate a new connector's configuration without saving it",
                   operation_id="connectors_validate",
                   request=s.ConnectorSerializer, responses=s.ValidationResultSerializer)
    @action(detail=False, methods=["post"])
    def validate(self, request):
        # a name already taken is reported here too, so a form hears of it while it is filled in (create: 409)
        name = request.data.get("name") if isinstance(request.data, dict) else None
        taken = isinstance(name, str) and Connector.objects.filter(name=name.strip()).exists()
        extra = [{"property": "name", "field": "name", "message": services.already_exists_message(name.strip())}
                 ] if taken else ()
        return self._validation(self.get_serializer(data=request.data), extra)

    @extend_schema(summary="Validate changes to this connector without saving them (PATCH semantics)",
                   operation_id="connectors_validate_changes",
                   request=s.ConnectorSerializer, responses=s.ValidationResultSerializer)
    @action(detail=True, methods=["post"], url_path="validate")
    def validate_existing(self, request, name=None):
        return self._validation(self.get_serializer(self.get_object(), data=request.data, partial=True))

    # -- table preview ------------------------------------------------------------------------------------------

    def _preview(self, body) -> Response:
        if not connectivity.enabled():  # the role is checked already (action_roles: operator)
            return Response({"detail": "the server makes no connection checks (CDC_CONNECTIVITY_CHECK_MS=0), "
                                       "so it does not list the source's tables either"},
                            status=status.HTTP_409_CONFLICT)
        if not body.is_valid():
            return Response({"detail": "the configuration is not valid yet", "problems": problems_of(body)},
                            status=status.HTTP_400_BAD_REQUEST)
        code, answer = table_preview.preview(body.validated_data["parts"], self.request)
        wait = answer.get("retry_after_s")
        return Response(answer, status=code, headers={"Retry-After": str(wait)} if wait else None)

    @table_preview.preview_schema(operation_id="connectors_tables_preview")
    @action(detail=False, methods=["post"], url_path="tables")
    def tables(self, request):
        data = dict(request.data) if isinstance(request.data, dict) else {}
        data.setdefault("name", table_preview.PREVIEW_NAME)
        data.setdefault("topic_prefix", data["name"] or table_preview.PREVIEW_NAME)
        return self._preview(table_preview.PreviewBody(data=data, context=self.get_serializer_context()))

    @table_preview.preview_schema(operation_id="connectors_tables_preview_changes")
    @action(detail=True, methods=["post"], url_path="tables")
    def tables_existing(self, request, name=None):
        return self._preview(table_preview.PreviewBody(self.get_object(), data=request.data, partial=True,
                                                       context=self.get_serializer_context()))

    # -- desired state ----------------------------------------------------------------------------------------

    def _state(self, state: str):
        connector = self.get_object()
        run(services.request_state, connector, state, user=self.request.user, source=source_of(self.request))
        return accepted(connector, services.STATE_COMMANDS[state])

    @extend_schema(summary="Pause (operator)", request=None, responses={202: s.ActionResultSerializer})
    @action(detail=True, methods=["post"])
    def pause(self, request, name=None):
        return self._state(DesiredState.PAUSED)

    @extend_schema(summary="Resume (operator)", request=None, responses={202: s.ActionResultSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request, name=None):
        return self._state(DesiredState.RUNNING)

    @extend_schema(summary="Stop (operator)", request=None, responses={202: s.ActionResultSerializer})
    @action(detail=True, methods=["post"])
    def stop(self, request, name=None):
        return self._state(DesiredState.STOPPED)

    @extend_schema(summary="Restart the running pipelines (operator)", request=s.RestartSerializer,
                   responses={202: s.ActionResultSerializer})
    @action(detail=True, methods=["post"])
    def restart(self, request, name=None):
        connector = self.get_object()
        body = s.RestartSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        restart = run(services.request_restart, connector, user=request.user, source=source_of(self.request),
                      replica_set=body.validated_data.get("replica_set"))
        return accepted(connector, "restart", restart)

    @extend_schema(summary="Ad-hoc incremental snapshot of some collections (operator)",
                   request=s.SnapshotRequestSerializer, responses={202: s.SnapshotAcceptedSerializer, 400: ERROR})
    @action(detail=True, methods=["post"])
    def snapshot(self, request, name=None):
        connector = self.get_object()
        body = s.SnapshotRequestSerializer(data=request.data, context={"connector": connector})
        body.is_valid(raise_exception=True)
        snap = run(services.request_snapshot, connector, body.validated_data["collections"],
                   body.validated_data.get("filter", ""), user=request.user, source=source_of(self.request))
        return Response({"request": snap.pk, "collections": snap.collections, "filter": snap.filter,
                         "status": snap.status}, status=status.HTTP_202_ACCEPTED)

    def _snapshot_signal(self, signal: str, collections: list[str] | None = None) -> Response:
        connector = self.get_object()
        control = run(services.request_snapshot_signal, connector, signal, collections, user=self.request.user,
                      source=source_of(self.request))
        return accepted(connector, control.command, control)

    @extend_schema(summary="Stop the running incremental snapshot, or only some of its collections (operator); "
                           "Debezium's stop-snapshot signal",
                   request=s.SnapshotStopSerializer, responses={202: s.ActionResultSerializer, 409: ERROR})
    @action(detail=True, methods=["post"], url_path="snapshot/stop")
    def snapshot_stop(self, request, name=None):
        body = s.SnapshotStopSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return self._snapshot_signal("stop", body.validated_data.get("collections"))

    @extend_schema(summary="Pause the running incremental snapshot; streaming goes on (operator); Debezium's "
                           "pause-snapshot signal",
                   request=None, responses={202: s.ActionResultSerializer, 409: ERROR})
    @action(detail=True, methods=["post"], url_path="snapshot/pause")
    def snapshot_pause(self, request, name=None):
        return self._snapshot_signal("pause")

    @extend_schema(summary="Resume a paused incremental snapshot (operator); Debezium's resume-snapshot signal",
                   request=None, responses={202: s.ActionResultSerializer, 409: ERROR})
    @action(detail=True, methods=["post"], url_path="snapshot/resume")
    def snapshot_resume(self, request, name=None):
        return self._snapshot_signal("resume")

    @extend_schema(summary="Set the log level of the connector's running pipelines (operator); each pipeline "
                           "reports its level as log_level in its status",
                   request=s.LogLevelSerializer, responses={202: s.ActionResultSerializer, 400: ERROR, 409: ERROR})
    @action(detail=True, methods=["post"], url_path="log-level")
    def log_level(self, request, name=None):
        connector = self.get_object()
        body = s.LogLevelSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        control = run(services.request_log_level, connector, body.validated_data["level"], user=request.user,
                      source=source_of(self.request))
        return accepted(connector, control.command, control)

    # -- observed state and offsets ---------------------------------------------------------------------------

    @extend_schema(summary="Control and snapshot requests, newest first, with how each ended",
                   responses=s.RequestOutcomeSerializer(many=True))
    @action(detail=True, methods=["get"])
    def requests(self, request, name=None):
        rows = s.request_outcomes(self.get_object())
        return Response(s.RequestOutcomeSerializer(rows, many=True).data)

    @extend_schema(summary="Activity log: requests and how they ended, phase changes, errors, configuration "
                           "changes; newest first",
                   parameters=[OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": 500},
                                                description="1-500, default 100")],
                   responses=s.ActivitySerializer(many=True))
    @action(detail=True, methods=["get"])
    def activity(self, request, name=None):
        check_query(request.query_params, {})
        limit = whole_number(request.query_params, "limit", minimum=1, maximum=500) or 100
        return Response(s.ActivitySerializer(activity_log.timeline(self.get_object(), limit), many=True).data)

    @extend_schema(summary="Observed state per replica set, with the last metrics snapshot",
                   responses=s.StatusSerializer)
    @action(detail=True, methods=["get"])
    def status(self, request, name=None):
        connector = self.get_object()
        try:
            running = services.running_pipelines(connector)
        except services.Unavailable:
            running = None
        rows = list(connector.replica_sets.all())
        status_word = connector_state.connector_status(
            connector.desired_state, [connector_state.live_phase(row) for row in rows],
            None if running is None else bool(running))
        states = s.ReplicaSetStateSerializer(rows, many=True).data
        return Response({"name": connector.name, "desired_state": connector.desired_state, "status": status_word,
                         "running": running, "replica_sets": states})

    @extend_schema(summary="Committed position per replica set (read from Kafka)",
                   responses={200: s.OffsetsSerializer, 503: ERROR})
    @action(detail=True, methods=["get"])
    def offsets(self, request, name=None):
        connector = self.get_object()
        records = run(services.read_offsets, connector)
        return Response({
            "name": connector.name,
            "topic": offset_views.offsets_topic(connector)[0],
            "offsets": [offset_views.describe(records[rs]) for rs in sorted(records)],
        })

    @extend_schema(
        summary="Reset offsets (admin): to latest, a timestamp, a resume token, a new snapshot, or the start",
        request=s.OffsetResetSerializer,
        parameters=[OpenApiParameter("stop", bool, description="Same as the body's stop")],
        responses={200: s.OffsetsSerializer, 400: ERROR, 409: ERROR, 503: ERROR},
    )
    @action(detail=True, methods=["post"], url_path="offsets/reset")
    def reset_offsets(self, request, name=None):
        connector = self.get_object()
        body = s.OffsetResetSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        stop = data["stop"] or request.query_params.get("stop", "").lower() in ("1", "true", "yes")
        source = source_of(self.request)
        try:
            written = services.reset_offsets(
                connector, data["mode"], user=request.user, source=source, replica_sets=data.get("replica_sets"),
                timestamp=data.get("timestamp"), token=data.get("resume_token"), stop=stop,
            )
        except services.PipelineRunning as error:
            raise ServiceFailure(error, error.with_hint(STOP_HINTS[source])) from None
        except services.ServiceError as error:
            raise ServiceFailure(error) from None
        shown = [offset_views.describe(r) if hasattr(r, "startup") else {"replica_set": r.replica_set}
                 for r in written]
        return Response({"name": connector.name, "topic": offset_views.offsets_topic(connector)[0],
                         "offsets": shown})


@extend_schema_view(
    list=extend_schema(summary="A connector's filter rows"),
    create=extend_schema(summary="Add a filter row (admin)"),
    update=extend_schema(summary="Replace a filter row (admin)"),
    partial_update=extend_schema(summary="Change a filter row (admin)"),
    destroy=extend_schema(summary="Remove a filter row (admin)"),
)
class FilterViewSet(viewsets.ModelViewSet):
    serializer_class = s.FilterSerializer
    permission_classes = [RolePermission]

    def connector(self) -> Connector:
        if not hasattr(self, "_connector"):
            self._connector = get_object_or_404(Connector, name=self.kwargs["connector_name"])
        return self._connector

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Connector.objects.none()
        return self.connector().filters.order_by("kind", "position", "id")

    def get_serializer_context(self):
        context = super().get_serializer_context()
        if not getattr(self, "swagger_fake_view", False):
            context["connector"] = self.connector()
        return context

    def perform_create(self, serializer):
        serializer.instance = run(services.save_filter, self.connector(), None, dict(serializer.validated_data),
                                  user=self.request.user, source=source_of(self.request))

    def perform_update(self, serializer):
        serializer.instance = run(services.save_filter, self.connector(), serializer.instance,
                                  dict(serializer.validated_data), user=self.request.user,
                                  source=source_of(self.request))

    def perform_destroy(self, instance):
        run(services.delete_filter, instance, user=self.request.user, source=source_of(self.request))


@extend_schema_view(list=extend_schema(summary="Audit log, newest first (filter with ?target= and ?action=)"))
class AuditViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = s.AuditEntrySerializer
    permission_classes = [RolePermission]
    pagination_class = StrictLimitOffsetPagination

    def get_queryset(self):
        entries = AuditEntry.objects.all()
        params = getattr(self.request, "query_params", {})
        if self.action == "list":
            check_query(params, {"target": None, "action": None})
        if params.get("target"):
            entries = entries.filter(target=params["target"])
        if params.get("action"):
            entries = entries.filter(action__startswith=params["action"])
        return entries


class MeView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(summary="The calling user and their role",
                   responses={200: {"type": "object", "properties": {"username": {"type": "string"},
                                                                     "role": {"type": "string", "nullable": True}}}})
    def get(self, request):
        return Response({"username": request.user.get_username(), "role": highest_role(request.user)})

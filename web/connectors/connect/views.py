"""The Kafka Connect REST API (connectors, status, pause/resume/stop/restart, KIP-875 offsets) over our models, so
Connect tooling and scripts work unchanged. Shapes and status codes follow Kafka Connect; writes go through
web.connectors.services (audited as source "connect"). Roles: reads viewer, lifecycle operator, the rest admin."""

from __future__ import annotations

import json

from django.http import HttpResponse
from rest_framework import status
from rest_framework.authentication import SessionAuthentication
from rest_framework.response import Response
from rest_framework.views import APIView

from cdcplatform.celery import app as celery_app
from connectors.kafka.offset_record import PARTITION_KEYS, OffsetDecodeError, OffsetRecord, OffsetTombstone, encode_key
from connectors.sources import DEBEZIUM_CLASSES
from web.accounts.api import LockoutBasicAuthentication
from web.accounts.roles import ADMIN, OPERATOR, VIEWER
from web.accounts.tokens import HashedTokenAuthentication
from web.connectors import audit, connectivity, drafts, kafka_cluster, services
from web.connectors import properties as props
from web.connectors.api.permissions import RolePermission
from web.connectors.connect import active_topics, loggers, shapes
from web.connectors.connect.config_infos import config_infos
from web.connectors.connect.errors import ConnectError, connect_exception_handler
from web.connectors.models import Connector, DesiredState, Phase, SourceKind
from web.connectors.offsets import connect_partition, resume_token_problem
from workers import loggers as worker_loggers

INITIAL_STATES = {"RUNNING": DesiredState.RUNNING, "PAUSED": DesiredState.PAUSED, "STOPPED": DesiredState.STOPPED}
NOT_STOPPED = (
    "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the "
    "specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint"
)


class ConnectView(APIView):
    authentication_classes = [LockoutBasicAuthentication, HashedTokenAuthentication, SessionAuthentication]
    permission_classes = [RolePermission]
    action_roles: dict[str, str] = {}

    def get_exception_handler(self):
        return connect_exception_handler

    def connector(self, name: str) -> Connector:
        connector = Connector.objects.filter(name=name).first()
        if connector is None:
            raise ConnectError(404, f"Connector {name} not found")
        return connector

    def call(self, function, *args, **kwargs):
        try:
            return function(*args, **kwargs)
        except services.ServiceError as error:
            raise ConnectError(error.status_code, str(error)) from None


def config_body(data) -> dict:
    if not isinstance(data, dict):
        raise ConnectError(400, "the request body must be a JSON object")
    return data


def check_name(url_name: str, config: dict) -> dict:
    included = config.get("name")
    if included is not None and included != url_name:
        raise ConnectError(400, f"Connector name configuration ({included}) doesn't match connector name in the URL "
                                f"({url_name})")
    return {**config, "name": url_name}


def prepare(config: dict, request, current: Connector | None = None):
    try:
        parts = drafts.prepare(config, current)
    except drafts.InvalidConfiguration as error:
        raise ConnectError(400, shapes.invalid_config_message(error.problems)) from None
    problems = connectivity.check(parts, request) if connectivity.allowed(request) else []
    if problems:
        raise ConnectError(400, shapes.invalid_config_message(problems))
    return parts


def no_content() -> HttpResponse:
    return HttpResponse(status=status.HTTP_204_NO_CONTENT)


def accepted() -> HttpResponse:
    return HttpResponse(status=status.HTTP_202_ACCEPTED)


class RootView(ConnectView):
    def get(self, request):
        return Response({"version": "cdcplatform-0.1.0", "commit": "", "kafka_cluster_id": kafka_cluster.cluster_id()})


class PluginsView(ConnectView):
    def get(self, request):
        return Response([{"class": name, "type": "source", "version": "cdcplatform-0.1.0"}
                         for name in DEBEZIUM_CLASSES.values()])


def plugin_class(plugin: str) -> str | None:
    """The connector class a plugin path names: its full class name or its simple name (PostgresConnector)."""
    return next((name for name in DEBEZIUM_CLASSES.values() if plugin in (name, name.rsplit(".", 1)[-1])), None)


class ValidateView(ConnectView):
    """PUT /connector-plugins/{plugin}/config/validate: every property with its errors (ConfigInfos)."""

    action_roles = {"PUT": VIEWER}

    def put(self, request, plugin):
        config = config_body(request.data)
        named = plugin_class(plugin)
        if named is not None and not config.get("connector.class"):
            config = {**config, "connector.class": named}  # the path names the plugin; Connect's body may not
        problems = drafts.check(config)
        if connectivity.allowed(request):
            checkable = reachable_parts(config, problems)
            if checkable is not None:
                problems = [*problems, *connectivity.check(checkable, request)]
        return Response(config_infos(plugin, config, problems))


# Properties the connectivity check reads (where and how to connect, what the source must provide): while one of
# them is invalid, the check would judge another configuration than the one given, so it waits for the fix.
CHECKED_PREFIXES = ("connector.class", "mongodb.", "database.", "slot.", "publication.", "signal.", "snapshot.locking",
                    "table.", "schema.", "plugin.name")


def reachable_parts(config: dict, problems) -> props.Parts | None:
    """What the connectivity check can be run on: the configuration itself when it is valid; without its invalid
    properties when none of them is one the check reads (so Connect's validate reports whether the source answers
    beside an unrelated mistake); None otherwise."""
    invalid = {problem.property for problem in problems}
    if "" in invalid or any(prop.startswith(CHECKED_PREFIXES) for prop in invalid):
        return None
    try:
        return drafts.prepare({key: value for key, value in config.items() if key not in invalid})
    except drafts.InvalidConfiguration:
        return None


class ConnectorsView(ConnectView):
    action_roles = {"GET": VIEWER, "POST": ADMIN}

    def get(self, request):
        connectors = Connector.objects.prefetch_related("filters", "replica_sets").order_by("name")
        expand = request.query_params.getlist("expand")
        if not expand:
            return Response([c.name for c in connectors])
        out = {}
        for connector in connectors:
            entry = {}
            if "status" in expand:
                entry["status"] = shapes.status(connector)
            if "info" in expand:
                entry["info"] = shapes.info(connector)
            out[connector.name] = entry
        return Response(out)

    def post(self, request):
        body = config_body(request.data)
        name = body.get("name")
        name = name.strip() if isinstance(name, str) else ""
        config = body.get("config")
        if not isinstance(config, dict):
            raise ConnectError(400, "Connector config must be a JSON object of properties")
        initial = body.get("initial_state", "RUNNING")
        if not isinstance(initial, str) or initial not in INITIAL_STATES:
            raise ConnectError(400, f"Invalid initial state {initial!r}; use RUNNING, PAUSED or STOPPED")
        config = check_name(name, config)
        if Connector.objects.filter(name=name).exists():
            raise ConnectError(409, f"Connector {name} already exists")
        parts = prepare(config, request)
        connector = self.call(services.create_connector, parts, user=request.user, source="connect",
                              desired_state=INITIAL_STATES[initial])
        response = Response(shapes.info(connector), status=status.HTTP_201_CREATED)
        response["Location"] = request.build_absolute_uri(f"/connect/connectors/{connector.name}")
        return response


class ConnectorView(ConnectView):
    action_roles = {"GET": VIEWER, "DELETE": ADMIN}

    def get(self, request, name):
        return Response(shapes.info(self.connector(name)))

    def delete(self, request, name):
        self.call(services.delete_connector, self.connector(name), user=request.user, source="connect")
        return no_content()


class ConfigView(ConnectView):
    action_roles = {"GET": VIEWER, "PUT": ADMIN}

    def get(self, request, name):
        return Response(shapes.config(self.connector(name)))

    def put(self, request, name):
        config = check_name(name, config_body(request.data))
        current = Connector.objects.filter(name=name).first()
        parts = prepare(config, request, current)
        if current is None:
            connector = self.call(services.create_connector, parts, user=request.user, source="connect")
            response = Response(shapes.info(connector), status=status.HTTP_201_CREATED)
            response["Location"] = request.build_absolute_uri(f"/connect/connectors/{name}")
            return response
        connector = self.call(services.update_connector, current, parts, user=request.user, source="connect")
        return Response(shapes.info(connector))


class StatusView(ConnectView):
    def get(self, request, name):
        return Response(shapes.status(self.connector(name)))


class TasksView(ConnectView):
    def get(self, request, name):
        connector = self.connector(name)
        config = shapes.config(connector)
        return Response([
            {"id": {"connector": name, "task": index}, "config": {**config, "replica.set": state.replica_set}}
            for index, state in enumerate(shapes.replica_sets(connector))
        ])


class TaskStatusView(ConnectView):
    def get(self, request, name, task):
        connector, task = self.connector(name), int(task)
        states = shapes.replica_sets(connector)
        if not 0 <= task < len(states):
            raise ConnectError(404, f"Task {name}-{task} not found")
        return Response(shapes.task_status(connector, task, states[task]))


def _flag(request, name: str) -> bool:
    return request.query_params.get(name, "false").lower() == "true"


class RestartView(ConnectView):
    action_roles = {"POST": OPERATOR}

    def post(self, request, name):
        connector = self.connector(name)
        include_tasks, only_failed = _flag(request, "includeTasks"), _flag(request, "onlyFailed")
        if not include_tasks and not only_failed:
            self.call(services.request_restart, connector, user=request.user, source="connect")
            return no_content()
        # Connect semantics: includeTasks restarts tasks too (onlyFailed: the failed ones only); the connector
        # instance itself is restarted unless onlyFailed (ours never fails on its own: its tasks do).
        states = shapes.replica_sets(connector)
        targets = [s.replica_set for s in states if s.phase == Phase.FAILED] if only_failed else []
        if not only_failed:
            self.call(services.request_restart, connector, user=request.user, source="connect")
            targets = [s.replica_set for s in states] if include_tasks else []
        elif include_tasks:
            for replica_set in targets:
                self.call(services.request_restart, connector, user=request.user, source="connect",
                          replica_set=replica_set)
        else:
            targets = []
        return Response(shapes.status(connector, frozenset(targets), connector_restarting=not only_failed),
                        status=status.HTTP_202_ACCEPTED)


class StateView(ConnectView):
    action_roles = {"PUT": OPERATOR}
    state: str = DesiredState.RUNNING
    no_content = False

    def put(self, request, name):
        self.call(services.request_state, self.connector(name), self.state, user=request.user, source="connect")
        return no_content() if self.no_content else accepted()


class PauseView(StateView):
    state = DesiredState.PAUSED


class ResumeView(StateView):
    state = DesiredState.RUNNING


class StopView(StateView):
    state = DesiredState.STOPPED
    no_content = True


class OffsetsView(ConnectView):
    """KIP-875: GET the offsets; PATCH (alter) and DELETE (reset) them while the connector is STOPPED."""

    action_roles = {"GET": VIEWER, "PATCH": ADMIN, "DELETE": ADMIN}

    def get(self, request, name):
        connector = self.connector(name)
        records = self.call(services.read_offsets, connector)
        return Response({"offsets": [connect_partition(records[rs]) for rs in sorted(records)]})

    def _stopped(self, name: str) -> Connector:
        connector = self.connector(name)
        if connector.desired_state != DesiredState.STOPPED:
            raise ConnectError(400, NOT_STOPPED.format(name=name))
        return connector

    def patch(self, request, name):
        connector = self._stopped(name)
        if connector.source != SourceKind.MONGODB:
            self.call(services.alter_offsets, connector, [], user=request.user, source="connect")  # says why not
        entries = config_body(request.data).get("offsets")
        if not isinstance(entries, list) or not entries:
            raise ConnectError(400, "Partitions / offsets cannot be empty for an alter offsets request")
        records = [self._record(name, entry) for entry in entries]
        known = services.known_replica_sets(connector, self.call(services.read_offsets, connector))
        unknown = sorted({record.replica_set for record in records} - set(known))
        if known and unknown:
            raise ConnectError(400, f"Unknown partition(s) {', '.join(repr(rs) for rs in unknown)} of connector "
                                    f"{name}; its partitions are {', '.join(repr(rs) for rs in known)}")
        self.call(services.alter_offsets, connector, records, user=request.user, source="connect")
        return Response({"message": "The offsets for this connector have been altered successfully"})

    def delete(self, request, name):
        connector = self._stopped(name)
        if connector.source != SourceKind.MONGODB:
            self.call(services.reset_offsets, connector, "initial", user=request.user, source="connect")
            return Response({"message": "The offsets for this connector have been reset successfully"})
        current = self.call(services.read_offsets, connector)
        records = [OffsetTombstone(name, rs, services.partition_key_field(current.get(rs)))
                   for rs in services.known_replica_sets(connector, current)]
        if records:
            self.call(services.alter_offsets, connector, records, user=request.user, source="connect")
        return Response({"message": "The offsets for this connector have been reset successfully"})

    @staticmethod
    def _record(name: str, entry) -> OffsetRecord | OffsetTombstone:
        partition = entry.get("partition") if isinstance(entry, dict) else None
        fields = [field for field in PARTITION_KEYS if isinstance(partition, dict) and field in partition]
        replica_set = partition[fields[0]] if len(fields) == 1 and len(partition) == 1 else None
        if not isinstance(replica_set, str) or not replica_set:
            raise ConnectError(400, 'Each partition must be {"rs": "<replica set name>"} or, for a sharded cluster '
                                    'read through mongos, {"server_id": "<topic.prefix>"}')
        key_field = fields[0]
        offset = entry.get("offset")
        if offset is None:
            return OffsetTombstone(name, replica_set, key_field)
        if not isinstance(offset, dict):
            raise ConnectError(400, f"The offset of partition {replica_set} must be a JSON object or null")
        if offset.get("resume_token") is not None:
            problem = resume_token_problem(offset["resume_token"])
            if problem:
                raise ConnectError(400, f"Invalid offset for partition {replica_set}: {problem}")
        try:
            return OffsetRecord.from_kafka(encode_key(name, replica_set, key_field), json.dumps(offset).encode())
        except OffsetDecodeError as error:
            raise ConnectError(400, f"Invalid offset for partition {replica_set}: {error}") from None


class TaskRestartView(ConnectView):
    """POST /connectors/{name}/tasks/{task}/restart: restarts that replica set's pipeline (204, as Connect)."""

    action_roles = {"POST": OPERATOR}

    def post(self, request, name, task):
        connector, task = self.connector(name), int(task)
        states = shapes.replica_sets(connector)
        if not 0 <= task < len(states):
            raise ConnectError(404, f"Task {name}-{task} not found")
        self.call(services.request_restart, connector, user=request.user, source="connect",
                  replica_set=states[task].replica_set)
        return no_content()


class TopicsView(ConnectView):
    """KIP-558: GET /connectors/{name}/topics -> {name: {"topics": [...]}}."""

    def get(self, request, name):
        connector = self.connector(name)
        try:
            topics = active_topics.active_topics(connector)
        except active_topics.KafkaUnavailable as error:
            raise ConnectError(503, f"Kafka is unreachable: {error}") from None
        return Response({name: {"topics": topics}})


class TopicsResetView(ConnectView):
    """KIP-558: PUT /connectors/{name}/topics/reset empties the set; topics written afterwards show again (202)."""

    action_roles = {"PUT": OPERATOR}

    def put(self, request, name):
        active_topics.reset(self.connector(name), user=request.user, source="connect")
        return accepted()


class LoggersView(ConnectView):
    """GET /admin/loggers: the root and every logger with a level of its own, with when it was last changed."""

    def get(self, request):
        return Response(loggers.explicit())


class LoggerView(ConnectView):
    """GET/PUT /admin/loggers/{logger}. PUT sets the level in this process (200, the loggers changed) or, with
    ?scope=cluster, in every worker too (204)."""

    action_roles = {"GET": VIEWER, "PUT": ADMIN}

    def get(self, request, logger):
        found = loggers.known(logger)
        if found is None:
            raise ConnectError(404, f"Logger {logger} not found.")
        return Response(found)

    def put(self, request, logger):
        body = config_body(request.data)
        scope = request.query_params.get("scope", "worker").lower()
        if scope not in ("worker", "cluster"):
            raise ConnectError(400, f"Invalid scope '{scope}'; use worker or cluster")
        if body.get("level") is None:
            raise ConnectError(400, "Desired 'level' parameter was not specified in request.")
        try:
            level = loggers.parse_level(body["level"])
        except loggers.UnknownLevel as error:
            raise ConnectError(404, str(error)) from None  # Kafka Connect answers 404 here
        changed = loggers.set_level(logger, level)
        audit.record(request.user, "connect", "logger.level", f"logger:{logger}", None,
                     {"level": loggers.level_name(level), "scope": scope})
        if scope == "cluster":
            worker_loggers.broadcast(celery_app, logger, loggers.level_name(level))
            return no_content()
        return Response(changed)

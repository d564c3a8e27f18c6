"""API serializers. They validate everything that enters: a connector's configuration goes through
web.connectors.drafts (the engine's validator) and every problem is reported under the field that carries it."""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from connectors.config.types import SKIPPABLE_OPERATIONS, ConfigError
from connectors.config.values import split_list
from connectors.core.snapshot.signal_table import parse_sql_condition
from connectors.mongodb.config_values import check_namespace, parse_json_query
from connectors.postgres.events import TableFilter
from connectors.secrets import MASK, redact_connection_string
from web.connectors import connectivity, drafts, validation
from web.connectors import properties as props
from web.connectors import state as connector_state
from web.connectors.connect.loggers import LEVELS as LOG_LEVELS
from web.connectors.definitions import engine_config, masked_config, parts_of
from web.connectors.models import (
    AuditEntry,
    Connector,
    ConnectorFilter,
    DesiredState,
    FilterKind,
    ReplicaSetState,
    SourceKind,
)
from web.connectors.offsets import RESET_MODES, parse_timestamp, resume_token_problem

TOP_LEVEL = (props.NAME, props.TOPIC_PREFIX, props.TOPIC_PREFIX_ALIAS, props.CONNECTION_STRING, *props.PASSWORDS)


class MaskedConnectionStringField(serializers.CharField):
    """Written in clear, read back with the password and secret options masked."""

    def to_representation(self, value):
        return redact_connection_string(value) if value else ""


@extend_schema_field({"type": "object", "additionalProperties": True,
                      "example": {"snapshot.mode": "initial", "collection.include.list": "inventory.orders"}})
class PropertiesField(serializers.DictField):
    pass


class FilterSerializer(serializers.ModelSerializer):
    salt = serializers.CharField(
        write_only=True, required=False, allow_blank=True, trim_whitespace=False,
        help_text="field_mask_hash and column_mask_hash only: the salt (never returned).",
    )
    property = serializers.SerializerMethodField(help_text="The Debezium property this row is an item of.")

    class Meta:
        model = ConnectorFilter
        fields = ["id", "kind", "value", "argument", "salt", "position", "property"]
        read_only_fields = ["id"]
        extra_kwargs = {"position": {"required": False}, "argument": {"required": False}}

    def get_property(self, row) -> str:
        return props.property_of(props.FilterRow(row.kind, row.value, row.argument))

    def validate(self, attrs):
        connector: Connector = self.context["connector"]
        row = self.instance
        kind = attrs.get("kind", row.kind if row else None)
        value = attrs.get("value", row.value if row else "").strip()
        argument = attrs.get("argument", row.argument if row else "").strip()
        salt = attrs.get("salt") or (row.salt if row else "")
        errors: dict[str, list[str]] = {}
        try:
            items = split_list(value)
        except ValueError as error:
            items = ()
            errors["value"] = [str(error)]
        if not errors and len(items) != 1:
            errors["value"] = ["give exactly one item per row (escape a literal comma as \\,)"]
        if kind == FilterKind.SKIPPED_OPERATION and value.lower() not in (*SKIPPABLE_OPERATIONS, "none"):
            errors["value"] = [f"use one of {', '.join(SKIPPABLE_OPERATIONS)} or none"]
        if kind == FilterKind.FIELD_RENAME and not argument:
            errors["argument"] = ["give the new field name"]
        hashed = kind in (FilterKind.FIELD_MASK_HASH, FilterKind.COLUMN_MASK_HASH)
        if hashed:
            if not argument:
                errors["argument"] = ["give the hash algorithm, e.g. SHA-256"]
            if not salt:
                errors["salt"] = ["give the salt"]
        if kind == FilterKind.SNAPSHOT_FILTER_OVERRIDE and argument:
            try:
                argument = parse_json_query(argument)
            except ValueError as error:
                errors["argument"] = [f"the query {error}"]
        if errors:
            raise serializers.ValidationError(errors)
        candidate = props.FilterRow(kind, value, argument, salt if hashed else "")
        self._check_composed(connector, row, candidate)
        attrs.update(kind=kind, value=value, argument=argument, salt=candidate.salt)
        return attrs

    def _check_composed(self, connector, row, candidate) -> None:
        others = [r for r in connector.filters.all() if row is None or r.pk != row.pk]
        problems = drafts.check_rows(connector, [*drafts.rows_of(others), candidate])
        if not problems:
            return
        own = props.property_of(candidate)
        errors: dict[str, list[str]] = {}
        for problem in problems:
            mine = problem.property == own or problem.property.startswith(own + ".")
            errors.setdefault("value" if mine else "non_field_errors", []).append(problem.message)
        raise serializers.ValidationError(errors)


class ConnectorSerializer(serializers.ModelSerializer):
    """A connector: identity, secrets (write-only or masked), every other engine option in `config`."""

    name = serializers.CharField(max_length=validation.MAX_NAME_LENGTH, help_text="Unique name (A-Z a-z 0-9 - _).")
    topic_prefix = serializers.CharField(required=False, allow_blank=True, help_text="topic.prefix")
    connection_string = MaskedConnectionStringField(
        required=False, allow_blank=True,
        help_text="mongodb.connection.string; returned with the password masked. Omit on update to keep it.",
    )
    password = serializers.CharField(
        write_only=True, required=False, allow_blank=True, trim_whitespace=False, style={"input_type": "password"},
        help_text="mongodb.password (with mongodb.user in config), or database.password for PostgreSQL and "
        "MySQL/MariaDB; never returned. Omit on update to keep it.",
    )
    has_password = serializers.SerializerMethodField()
    source = serializers.CharField(read_only=True, help_text="What it reads, from config['connector.class']: "
                                   "mongodb, postgres, mysql or mariadb.")
    config = PropertiesField(
        required=False,
        help_text="Every other engine option by its Debezium property name (docs/configuration.md), filter lists "
        "included. Secrets come back masked; sending a masked value back keeps the stored secret.",
    )
    desired_state = serializers.ChoiceField(choices=DesiredState.choices, required=False)
    filters = FilterSerializer(many=True, read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    updated_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = Connector
        fields = [
            "name", "source", "topic_prefix", "connection_string", "password", "has_password", "config",
            "desired_state",
            "filters", "created_at", "updated_at", "created_by", "updated_by",
        ]
        read_only_fields = ["created_at", "updated_at"]

    def get_has_password(self, connector) -> bool:
        return bool(connector.password) or props.uri_has_password(connector.connection_string)

    def to_representation(self, connector):
        data = super().to_representation(connector)
        data["config"] = {k: v for k, v in masked_config(connector).items() if k not in TOP_LEVEL}
        return data

    def given_properties(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The Debezium property map this request gives (top-level fields folded into `config`)."""
        config = dict(attrs.get("config") or {})
        errors: dict[str, list[str]] = {}
        names_class = config if props.CONNECTOR_CLASS in config else (self.instance.properties if self.instance
                                                                       else {})
        password = props.password_property(names_class or {})  # mongodb.password or database.password
        for field, prop in (("name", props.NAME), ("topic_prefix", props.TOPIC_PREFIX),
                            ("connection_string", props.CONNECTION_STRING), ("password", password)):
            if field not in attrs:
                continue
            if prop in config and config[prop] != attrs[field]:
                errors[field] = [f"{field} and config[{prop!r}] differ; give one of them"]
            config[prop] = attrs[field] if attrs[field] != "" else None
        if self.instance is not None:
            if config.get(props.NAME, self.instance.name) != self.instance.name:
                errors["name"] = ["a connector cannot be renamed; create a new one"]
            config.setdefault(props.NAME, self.instance.name)
            if not self.partial:  # PUT: secrets not given are kept (they are never returned), where they were
                stored = parts_of(self.instance)
                if props.CONNECTION_STRING not in config and stored.connection_string:
                    config[props.CONNECTION_STRING] = redact_connection_string(stored.connection_string)
                if password not in config and stored.password:
                    config[password] = MASK
                if props.TOPIC_PREFIX not in config and props.TOPIC_PREFIX_ALIAS not in config:
                    config[props.TOPIC_PREFIX] = stored.topic_prefix
        if errors:
            raise serializers.ValidationError(errors)
        return config

    def prepare_parts(self, attrs) -> None:
        """The body made into the connector's parts (`attrs["parts"]`), without connecting; its problems refused."""
        given = self.given_properties(attrs)
        try:
            attrs["parts"] = drafts.prepare(given, self.instance, merge=self.partial)
        except drafts.InvalidConfiguration as error:
            self.problems = error.problems
            raise serializers.ValidationError(validation.api_errors(error.problems)) from None

    def validate(self, attrs):
        self.prepare_parts(attrs)
        request = self.context.get("request")
        self.connection_checked = False
        if (self.instance is None or self._connection_changed(attrs["parts"])) and connectivity.allowed(request):
            problems = connectivity.check(attrs["parts"], request)
            self.connection_checked = True
            if problems:
                self.problems = problems
                raise serializers.ValidationError(validation.api_errors(problems))
        return attrs

    def _connection_changed(self, parts) -> bool:
        stored = parts_of(self.instance)
        return (parts.connection_string, parts.password, parts.properties) != (
            stored.connection_string, stored.password, stored.properties)


class ProblemSerializer(serializers.Serializer):
    property = serializers.CharField(help_text="The Debezium property (empty for the whole configuration).")
    field = serializers.CharField(help_text="The API field carrying it: name, topic_prefix, …, or config.")
    message = serializers.CharField()


class ValidationResultSerializer(serializers.Serializer):
    valid = serializers.BooleanField()
    error_count = serializers.IntegerField()
    problems = ProblemSerializer(many=True)
    connection_checked = serializers.BooleanField(
        help_text="Whether the server connected to the source: only for operators and admins, only for a new "
                  "connector or a changed connection, and only while CDC_CONNECTIVITY_CHECK_MS is not 0.")
    retry_after_s = serializers.IntegerField(
        allow_null=True, help_text="Set when the connection check was not run now (the user's rate of checks, or "
                                   "as many running as the server allows): ask again after this many seconds.")


class ActionResultSerializer(serializers.Serializer):
    name = serializers.CharField()
    desired_state = serializers.ChoiceField(choices=DesiredState.choices)
    requested = serializers.CharField(help_text="The command sent to the running pipelines.")
    request = serializers.IntegerField(allow_null=True, help_text="The control request: see …/requests/.")


class ActivitySerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    kind = serializers.ChoiceField(choices=["request", "sent", "outcome", "received", "state", "error", "config"],
                                   help_text="request (asked), sent (published to the pipelines, with how many "
                                             "listened), received (a pipeline took it up), outcome (how it ended), "
                                             "state (a phase change, or stale), error, config (audit)")
    replica_set = serializers.CharField(allow_blank=True)
    text = serializers.CharField()
    by = serializers.CharField(allow_blank=True, help_text="Who asked, or the worker that reported.")
    status = serializers.CharField(allow_blank=True, help_text="Of a request: requested, running, done, failed.")


class RequestOutcomeSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["control", "snapshot"])
    id = serializers.IntegerField()
    command = serializers.CharField(help_text="pause, resume, stop, restart or snapshot.")
    replica_set = serializers.CharField(allow_blank=True)
    collections = serializers.ListField(child=serializers.CharField(), required=False)
    status = serializers.CharField(help_text="requested, running (snapshots), done or failed.")
    reason = serializers.CharField(allow_blank=True, help_text="What happened, or why it failed.")
    requested_by = serializers.CharField(allow_null=True)
    requested_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


def request_outcomes(connector: Connector, limit: int = 50) -> list[dict]:
    """The connector's control and snapshot requests, newest first, with how they ended."""
    rows = []
    for request in connector.control_requests.select_related("requested_by")[:limit]:
        rows.append({"kind": "control", "id": request.pk, "command": request.command,
                     "replica_set": request.replica_set, "status": request.status, "reason": request.reason,
                     "requested_by": request.requested_by.username if request.requested_by else None,
                     "requested_at": request.requested_at, "finished_at": request.finished_at})
    for request in connector.snapshot_requests.select_related("requested_by")[:limit]:
        rows.append({"kind": "snapshot", "id": request.pk, "command": "snapshot", "replica_set": "",
                     "collections": list(request.collections), "status": request.status, "reason": request.reason,
                     "requested_by": request.requested_by.username if request.requested_by else None,
                     "requested_at": request.requested_at, "finished_at": request.finished_at})
    rows.sort(key=lambda row: row["requested_at"], reverse=True)
    return rows[:limit]


class RestartSerializer(serializers.Serializer):
    replica_set = serializers.CharField(required=False, help_text="Restart only this replica set's pipeline.")


class LogLevelSerializer(serializers.Serializer):
    level = serializers.ChoiceField(choices=list(LOG_LEVELS), help_text=(
        "log4j's names, as /connect/admin/loggers: the level of the pipelines' connectors.* and workers.* loggers "
        "until they restart"))

    def to_internal_value(self, data):
        if isinstance(data, dict) and isinstance(data.get("level"), str):
            data = {**data, "level": data["level"].upper()}
        return super().to_internal_value(data)


class SnapshotStopSerializer(serializers.Serializer):
    collections = serializers.ListField(child=serializers.CharField(), required=False, min_length=1,
                                        help_text="Optional: stop only these collections (names or regexes, as "
                                                  "Debezium's data-collections); without it the whole snapshot.")


class SnapshotRequestSerializer(serializers.Serializer):
    collections = serializers.ListField(child=serializers.CharField(), min_length=1,
                                        help_text="<database>.<collection> names captured by the connector "
                                                  "(PostgreSQL: <schema>.<table>, MySQL/MariaDB: "
                                                  "<database>.<table>, or regexes of them).")
    filter = serializers.JSONField(
        required=False, allow_null=True,
        help_text='Optional. MongoDB: a query (object or extended JSON text), e.g. {"a": 1}; '
                  "PostgreSQL, MySQL/MariaDB: an SQL condition on the table's columns, e.g. "
                  "\"status = 'A'\" (Debezium's additional-conditions filter).")

    def validate_collections(self, collections):
        from connectors.mongodb.filters import NamespaceFilter
        from connectors.mongodb.records import Namespace
        from web.connectors.definitions import engine_config

        connector = self.context["connector"]
        if connector.source in (SourceKind.POSTGRES, SourceKind.MYSQL, SourceKind.MARIADB):
            return _captured_tables(connector, collections)
        if connector.source != SourceKind.MONGODB:
            return collections  # refused with its reason by services.snapshot_refusal (409)
        problems = []
        try:
            namespaces = NamespaceFilter.from_config(engine_config(connector))
        except ValueError:
            namespaces = None
        for name in collections:
            try:
                check_namespace(name)
            except ValueError as error:
                problems.append(str(error))
                continue
            if namespaces is not None and not namespaces.includes(Namespace.parse(name)):
                problems.append(f"{name!r} is not captured by this connector (see its include/exclude filters)")
        if problems:
            raise serializers.ValidationError(problems)
        return list(dict.fromkeys(collections))

    def validate_filter(self, value):
        if value in (None, "", {}):
            return ""
        if self.context["connector"].source in (SourceKind.POSTGRES, SourceKind.MYSQL, SourceKind.MARIADB):
            try:
                return parse_sql_condition(value)
            except ValueError as error:
                raise serializers.ValidationError(str(error)) from None
        try:
            return parse_json_query(value)
        except ValueError as error:
            raise serializers.ValidationError(f"the filter {error}") from None


def _captured_tables(connector, tables: list[str]) -> list[str]:
    """`tables` (<schema>.<table> for PostgreSQL, <database>.<table> for MySQL/MariaDB, or regexes of them as
    Debezium's data-collections) when each may be captured."""
    try:
        config = engine_config(connector)
    except ConfigError:
        return tables  # refused with its reason by services.snapshot_refusal (409)
    captured = TableFilter(config) if connector.source == SourceKind.POSTGRES else config.captures_table
    what = "<schema>.<table>" if connector.source == SourceKind.POSTGRES else "<database>.<table>"
    problems = []
    for name in tables:
        schema, dot, table = name.partition(".")
        if not dot or not schema or not table:
            problems.append(f"{name!r} is not {what}")
            continue
        try:
            re.compile(name)
        except re.error as error:
            problems.append(f"{name!r} is not a regular expression: {error}")
            continue
        if re.escape(name) == name and not captured(schema, table):
            problems.append(f"{name!r} is not captured by this connector (see its include/exclude lists)")
    if problems:
        raise serializers.ValidationError(problems)
    return list(dict.fromkeys(tables))


class SnapshotAcceptedSerializer(serializers.Serializer):
    request = serializers.IntegerField()
    collections = serializers.ListField(child=serializers.CharField())
    filter = serializers.CharField(allow_blank=True)
    status = serializers.CharField()


class ReplicaSetStateSerializer(serializers.ModelSerializer):
    """One partition of the state model (web/connectors/state.py): observed phase with its timestamps, and what
    the pages show from it."""

    stale = serializers.SerializerMethodField(
        help_text="A running pipeline (snapshot or streaming) without a report from its worker for 15 s; never for a "
                  "stopped, paused or failed one, which does not report.")
    live_phase = serializers.SerializerMethodField(
        help_text="The phase every surface shows: the observed phase, or stale for a running one without reports.")
    current_error = serializers.SerializerMethodField(
        help_text="The last error while it still applies (empty once the pipeline runs again after it).")

    class Meta:
        model = ReplicaSetState
        fields = ["replica_set", "worker", "phase", "live_phase", "since", "heartbeat_at", "stale", "current_error",
                  "last_error", "last_error_at", "metrics"]

    def get_stale(self, state) -> bool:
        return connector_state.live_phase(state) == "stale"

    def get_live_phase(self, state) -> str:
        return connector_state.live_phase(state)

    def get_current_error(self, state) -> str:
        return connector_state.current_error(state)


class StatusSerializer(serializers.Serializer):
    name = serializers.CharField()
    desired_state = serializers.CharField()
    status = serializers.CharField(help_text="The connector's one word, as the dashboard shows it: running, "
                                             "snapshot, starting, failed, stale, pausing, paused, stopping, stopped.")
    running = serializers.DictField(child=serializers.CharField(), allow_null=True,
                                    help_text="{replica set: worker} holding a pipeline lease now (null: unknown).")
    replica_sets = ReplicaSetStateSerializer(many=True)


class TimestampJsonSerializer(serializers.Serializer):
    t = serializers.IntegerField()
    i = serializers.IntegerField()
    iso = serializers.CharField()


class OffsetSerializer(serializers.Serializer):
    """One partition's committed position. MongoDB's has resume_token, cluster_time and token_cluster_time;
    PostgreSQL's and MySQL/MariaDB's have `position` (Debezium's offset fields: lsn, txId…; file, pos, gtids…).
    A MongoDB offset deleted by a reset to `initial` is shown as its `replica_set` alone."""

    replica_set = serializers.CharField(help_text="The replica set, or the partition of another source.")
    partition = serializers.JSONField(required=False, help_text='MongoDB only: the record\'s key, {"rs": …} or, '
                                      'for a sharded cluster read through mongos, {"server_id": …}.')
    resume_token = serializers.JSONField(allow_null=True, required=False, help_text="MongoDB only.")
    cluster_time = TimestampJsonSerializer(allow_null=True, required=False, help_text="MongoDB only.")
    token_cluster_time = TimestampJsonSerializer(allow_null=True, required=False, help_text="MongoDB only.")
    position = serializers.JSONField(allow_null=True, required=False,
                                     help_text="PostgreSQL and MySQL/MariaDB only: the stored offset fields.")
    snapshot = serializers.JSONField(allow_null=True, required=False)
    pending_reset = serializers.JSONField(allow_null=True, required=False)


class OffsetsSerializer(serializers.Serializer):
    name = serializers.CharField()
    topic = serializers.CharField()
    offsets = OffsetSerializer(many=True)


class OffsetResetSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(
        choices=RESET_MODES,
        help_text="latest: stream from now; timestamp: stream from `timestamp`; token: resume after `resume_token`; "
        "snapshot: take a new snapshot; initial: delete the offset (start as on a first run).",
    )
    timestamp = serializers.JSONField(required=False, help_text="ms since the epoch or ISO-8601 (mode=timestamp).")
    resume_token = serializers.JSONField(required=False, help_text='{"_data": "82…"} (mode=token).')
    replica_sets = serializers.ListField(child=serializers.CharField(), required=False,
                                         help_text="Default: every replica set known.")
    stop = serializers.BooleanField(default=False, help_text="Stop the running pipeline first (else 409).")

    def validate(self, attrs):
        mode = attrs["mode"]
        if mode == "timestamp":
            if "timestamp" not in attrs:
                raise serializers.ValidationError({"timestamp": ["mode=timestamp needs a timestamp"]})
            try:
                attrs["timestamp"] = parse_timestamp(attrs["timestamp"])
            except ValueError as error:
                raise serializers.ValidationError({"timestamp": [str(error)]}) from None
        if mode == "token":
            token = attrs.get("resume_token")
            if not isinstance(token, dict) or not token:
                raise serializers.ValidationError(
                    {"resume_token": ['mode=token needs a resume token such as {"_data": "82…"}']}
                )
            problem = resume_token_problem(token)
            if problem:
                raise serializers.ValidationError({"resume_token": [problem]})
        return attrs


class AuditEntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEntry
        fields = ["id", "at", "username", "source", "action", "target", "before", "after"]

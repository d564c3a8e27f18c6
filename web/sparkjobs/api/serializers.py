"""Serializers of the Spark jobs API: definitions are validated by `web.sparkjobs.arguments` (roles' limits and the
template's own checks), runs are read-only (the worker writes them)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied

from web.accounts.roles import ADMIN, has_role
from web.sparkjobs import arguments as job_args
from web.sparkjobs.models import JobDefinition, JobRun, RunLogLine

_OBJECT = {"type": "object", "additionalProperties": True}


@extend_schema_field({**_OBJECT, "example": {"window": "1 minute", "include_tombstones": True}})
class ArgumentsField(serializers.DictField):
    def to_representation(self, value):
        return job_args.masked(value or {})


class JobDefinitionSerializer(serializers.ModelSerializer):
    topics = serializers.ListField(child=serializers.CharField(max_length=249), required=False)
    arguments = ArgumentsField(required=False)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    updated_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    last_run = serializers.SerializerMethodField()

    class Meta:
        model = JobDefinition
        fields = ["name", "description", "template", "mode", "topics", "arguments", "script", "restricted",
                  "created_at", "updated_at", "created_by", "updated_by", "last_run"]
        read_only_fields = ["restricted", "created_at", "updated_at"]

    @extend_schema_field({"type": "object", "nullable": True, "properties": {
        "id": {"type": "integer"}, "status": {"type": "string"}, "created_at": {"type": "string"}}})
    def get_last_run(self, definition):
        run = definition.runs.order_by("-id").first()
        return {"id": run.pk, "status": run.status, "created_at": run.created_at} if run else None

    def validate(self, attrs):
        current = self.instance
        values = {
            "name": attrs.get("name", current.name if current else None),
            "template": attrs.get("template", current.template if current else None),
            "mode": attrs.get("mode", current.mode if current else "batch"),
            "topics": attrs.get("topics", current.topics if current else []),
            "arguments": attrs.get("arguments", current.arguments if current else {}),
            "script": attrs.get("script", current.script if current else ""),
        }
        user = self.context["request"].user
        admin = has_role(user, ADMIN)
        if not admin and (values["template"] == "script" or (current is not None and current.is_script)):
            raise PermissionDenied("PySpark script jobs run arbitrary code: this needs the admin role.")
        try:
            if current is not None and "arguments" in attrs:
                values["arguments"] = job_args.unmask(attrs["arguments"], current.arguments or {})
            job_args.check_definition(values, admin=admin)
        except job_args.ArgumentProblem as error:
            raise serializers.ValidationError(error.problems) from None
        values["restricted"] = not admin
        return values


class RunLogLineSerializer(serializers.ModelSerializer):
    class Meta:
        model = RunLogLine
        fields = ["seq", "stream", "text"]


class JobRunSerializer(serializers.ModelSerializer):
    job = serializers.SlugRelatedField(source="definition", slug_field="name", read_only=True)
    arguments = ArgumentsField(read_only=True)
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    cancel_requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    finished = serializers.BooleanField(read_only=True)
    preview = serializers.JSONField(read_only=True)
    result = serializers.JSONField(read_only=True)
    progress = serializers.JSONField(read_only=True)

    class Meta:
        model = JobRun
        fields = ["id", "job", "status", "finished", "template", "mode", "arguments", "requested_by", "created_at",
                  "started_at", "finished_at", "heartbeat_at", "duration_s", "rows_in", "rows_out", "output_path",
                  "preview", "result", "progress", "error", "error_type", "exit_code", "app_id", "master", "worker",
                  "pid", "driver_pid", "cancel_requested_at", "cancel_requested_by"]
        read_only_fields = fields


class RunLogSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    status = serializers.CharField()
    last = serializers.IntegerField(help_text="Pass it as `after` to get only newer lines.")
    lines = RunLogLineSerializer(many=True)


class DeltaVersionSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    timestamp_ms = serializers.IntegerField(help_text="The version's time (Delta's history), ms since the epoch.")
    operation = serializers.CharField(allow_null=True)
    rows_affected = serializers.IntegerField(allow_null=True, help_text="Rows inserted, updated or deleted.")


class DeltaPositionSerializer(serializers.Serializer):
    version = serializers.IntegerField(help_text="The version whose commit recorded it.")
    batch_id = serializers.IntegerField(allow_null=True)
    offsets = serializers.DictField(child=serializers.IntegerField(),
                                    help_text="Highest Kafka offset merged, per partition.")


class DeltaPartitionLagSerializer(serializers.Serializer):
    partition = serializers.IntegerField()
    end_offset = serializers.IntegerField()
    last_merged = serializers.IntegerField(allow_null=True)
    position = serializers.IntegerField(help_text="The stream's next offset in the partition.")
    lag = serializers.IntegerField()


class DeltaLagSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    partitions = DeltaPartitionLagSerializer(many=True)


class DeltaTableSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The table's name in a query.")
    topic = serializers.CharField(allow_null=True)
    path = serializers.CharField()
    exists = serializers.BooleanField()
    rows = serializers.IntegerField(allow_null=True, help_text="Live rows (soft-deleted ones included); null: "
                                                               "not known from the log's newest commits.")
    version = serializers.IntegerField(allow_null=True)
    versions = DeltaVersionSerializer(many=True, help_text="The newest versions, newest first.")
    older_versions = serializers.IntegerField()
    last_position = DeltaPositionSerializer(allow_null=True)
    lag = DeltaLagSerializer(allow_null=True)


class DeltaTablesSerializer(serializers.Serializer):
    job = serializers.CharField()
    output_path = serializers.CharField()
    tables = DeltaTableSerializer(many=True)
    lag_problem = serializers.CharField(allow_null=True)


class DeltaQuerySerializer(serializers.Serializer):
    sql = serializers.CharField(trim_whitespace=False, help_text=(
        "One read-only query over the job's tables (by name); `VERSION AS OF n` reads a table's version n."))

"""Connector definitions (desired state), their filter rows, observed per-replica-set state, and the audit log.

A connector's engine configuration is the Debezium property map composed from: the identity fields (`name`,
`topic.prefix`), the encrypted secrets (`mongodb.connection.string`, `mongodb.password` or, for PostgreSQL and
MySQL/MariaDB, `database.password`), the filter rows and `properties` (every other engine option as given, with
`connector.class`; `source` records the kind it names). `web.connectors.properties` composes and splits it; every write
is validated by the engine's own `connectors.config.validate`, so the API and the engine never disagree.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from web.connectors.fields import EncryptedTextField


class DesiredState(models.TextChoices):
    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"


class SourceKind(models.TextChoices):
    """What a connector reads (from its connector.class; connectors.sources): each runs one pipeline per
    partition, a MongoDB replica set or shard, a PostgreSQL database's slot, a MySQL/MariaDB server."""

    MONGODB = "mongodb", "MongoDB"
    POSTGRES = "postgres", "PostgreSQL"
    MYSQL = "mysql", "MySQL"
    MARIADB = "mariadb", "MariaDB"


class Connector(models.Model):
    name = models.SlugField(max_length=100, unique=True, help_text="Unique name; keys offsets and transactional ids.")
    source = models.CharField(max_length=16, choices=SourceKind.choices, default=SourceKind.MONGODB,
                              help_text="The source connector.class names (set from it on every save).")
    topic_prefix = models.CharField(max_length=200, help_text="topic.prefix: prefix of every topic written.")
    connection_string = EncryptedTextField(blank=True, help_text="mongodb.connection.string (encrypted at rest).")
    password = EncryptedTextField(blank=True, help_text="mongodb.password or database.password (encrypted at rest).")
    properties = models.JSONField(default=dict, blank=True, help_text="Every other engine option, by Debezium name.")
    desired_state = models.CharField(max_length=16, choices=DesiredState.choices, default=DesiredState.RUNNING)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class FilterKind(models.TextChoices):
    """Each kind is one Debezium property; rows of a kind are the items of that property's list."""

    DATABASE_INCLUDE = "database_include", "database.include.list"
    DATABASE_EXCLUDE = "database_exclude", "database.exclude.list"
    COLLECTION_INCLUDE = "collection_include", "collection.include.list"
    COLLECTION_EXCLUDE = "collection_exclude", "collection.exclude.list"
    FIELD_EXCLUDE = "field_exclude", "field.exclude.list"
    FIELD_RENAME = "field_rename", "field.renames"
    FIELD_MASK_HASH = "field_mask_hash", "field.mask.hash.<algorithm>.with.salt.<salt>"
    COLUMN_MASK_HASH = "column_mask_hash", "column.mask.hash[.v2].<algorithm>.with.salt.<salt>"
    FIELD_MASK_REDACT = "field_mask_redact", "field.mask.redact"
    SKIPPED_OPERATION = "skipped_operation", "skipped.operations"
    SNAPSHOT_INCLUDE = "snapshot_include", "snapshot.include.collection.list"
    SNAPSHOT_FILTER_OVERRIDE = "snapshot_filter_override", "snapshot.collection.filter.overrides"


class ConnectorFilter(models.Model):
    connector = models.ForeignKey(Connector, on_delete=models.CASCADE, related_name="filters")
    kind = models.CharField(max_length=32, choices=FilterKind.choices)
    value = models.TextField(help_text="Regex, <db>.<collection>, field path or operation (c, u, d, t, none).")
    argument = models.TextField(
        blank=True,
        help_text="New name (rename), algorithm (hash mask) or query (snapshot filter override).",
    )
    salt = EncryptedTextField(blank=True, help_text="field_mask_hash, column_mask_hash: the salt (encrypted at rest, "
                                                    "never shown).")
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["kind", "position", "id"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.value}"


class Phase(models.TextChoices):
    SNAPSHOT = "snapshot"
    STREAMING = "streaming"
    STOPPED = "stopped"
    FAILED = "failed"


class ReplicaSetState(models.Model):
    """What a worker last reported about one replica set's pipeline (observed state)."""

    connector = models.ForeignKey(Connector, on_delete=models.CASCADE, related_name="replica_sets")
    replica_set = models.CharField(max_length=200)
    worker = models.CharField(max_length=300, blank=True)
    phase = models.CharField(max_length=16, choices=Phase.choices, default=Phase.STOPPED)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True, help_text="When the last error was reported.")
    since = models.DateTimeField(help_text="When the pipeline entered this phase.")
    metrics = models.JSONField(default=dict, blank=True, help_text="The last metrics snapshot.")
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="The worker's last report.")

    class Meta:
        ordering = ["connector__name", "replica_set"]
        constraints = [models.UniqueConstraint(fields=["connector", "replica_set"], name="one_state_per_replica_set")]

    def __str__(self) -> str:
        return f"{self.connector.name}/{self.replica_set}: {self.phase}"


class SnapshotStatus(models.TextChoices):
    REQUESTED = "requested"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class SnapshotRequest(models.Model):
    """An ad-hoc incremental snapshot asked for through the API; the worker side marks its progress."""

    connector = models.ForeignKey(Connector, on_delete=models.CASCADE, related_name="snapshot_requests")
    collections = models.JSONField(default=list, help_text="<database>.<collection> names.")
    filter = models.TextField(blank=True, help_text="Optional MongoDB query (extended JSON) selecting documents.")
    status = models.CharField(max_length=16, choices=SnapshotStatus.choices, default=SnapshotStatus.REQUESTED)
    reason = models.TextField(blank=True, help_text="What happened: the outcome, or why it failed.")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-requested_at"]

    def __str__(self) -> str:
        return f"snapshot of {', '.join(self.collections)} ({self.status})"


class RequestStatus(models.TextChoices):
    REQUESTED = "requested"
    DONE = "done"
    FAILED = "failed"


class ControlRequest(models.Model):
    """A pause, resume, stop or restart asked for, until a pipeline (or the supervisor) says how it ended."""

    connector = models.ForeignKey(Connector, on_delete=models.CASCADE, related_name="control_requests")
    command = models.CharField(max_length=16)
    replica_set = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=RequestStatus.choices, default=RequestStatus.REQUESTED)
    reason = models.TextField(blank=True, help_text="What happened: the outcome, or why it failed.")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-requested_at", "-id"]

    def __str__(self) -> str:
        return f"{self.command} of {self.connector.name} ({self.status})"


class ActivityKind(models.TextChoices):
    SENT = "sent"  # a command published to the pipelines, with how many were listening
    RECEIVED = "received"  # a pipeline's control listener received a command
    STATE = "state"  # an observed phase changed
    ERROR = "error"  # a pipeline, snapshot or worker error


class ActivityEntry(models.Model):
    """What the pipelines of a connector did, for its activity log (web.connectors.activity): commands received,
    phase changes and errors, with time and reason. Requests and configuration changes have their own tables."""

    connector = models.ForeignKey(Connector, on_delete=models.CASCADE, related_name="activity")
    replica_set = models.CharField(max_length=200, blank=True)
    at = models.DateTimeField(db_index=True)
    kind = models.CharField(max_length=16, choices=ActivityKind.choices)
    text = models.TextField()
    worker = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name_plural = "activity entries"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.connector.name}/{self.replica_set} {self.kind}: {self.text}"


class AuditEntry(models.Model):
    """Who did what to which object, with before/after snapshots whose secrets are masked."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    username = models.CharField(max_length=150, blank=True, help_text="Kept when the user is deleted.")
    source = models.CharField(max_length=16, help_text="api, connect, admin, cli or system")
    action = models.CharField(max_length=64)
    target = models.CharField(max_length=255, db_index=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.username or '-'} {self.action} {self.target}"


from web.connectors.verify_models import VerifyRun, VerifySchedule  # noqa: E402, F401 - registered with this app

"""Spark job definitions, their runs, and each run's driver log (docs/spark.md, "Launching jobs").

A `JobDefinition` names a template of `sparkjobs` (latest_state, stats, sql, script), the topics it reads and the
rest of the template's arguments. A `JobRun` is one launch of it: the Celery task `workers.spark.run_job` starts
spark-submit, follows its `CDCJOB` lines and stores progress, outcome and a preview here; `RunLogLine` keeps the
tail of the driver's log for the run page.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Template(models.TextChoices):
    LATEST_STATE = "latest_state", "Latest state per document"
    STATS = "stats", "Change statistics"
    DELTA_SYNC = "delta_sync", "Sync to a Delta table"
    SQL = "sql", "Spark SQL over topics"
    SCRIPT = "script", "PySpark script (admin only)"


class RunTemplate(models.TextChoices):
    """What a run runs: its job's template, or a query of a Delta sync's tables (started from the job's tables
    page; no job is of this template)."""

    LATEST_STATE = Template.LATEST_STATE.value, Template.LATEST_STATE.label
    STATS = Template.STATS.value, Template.STATS.label
    DELTA_SYNC = Template.DELTA_SYNC.value, Template.DELTA_SYNC.label
    DELTA_QUERY = "delta_query", "Query of the synced Delta tables"
    SQL = Template.SQL.value, Template.SQL.label
    SCRIPT = Template.SCRIPT.value, Template.SCRIPT.label


class Mode(models.TextChoices):
    BATCH = "batch"
    STREAM = "stream"


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)


class JobDefinition(models.Model):
    name = models.SlugField(max_length=100, unique=True)
    description = models.CharField(max_length=500, blank=True)
    template = models.CharField(max_length=32, choices=Template.choices)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.BATCH)
    topics = models.JSONField(default=list, blank=True, help_text="Topic names read (or `topic_pattern`).")
    arguments = models.JSONField(default=dict, blank=True, help_text="The template's other arguments.")
    script = models.TextField(blank=True, help_text="PySpark code of a `script` job.")
    restricted = models.BooleanField(
        default=True, help_text="Last saved by a non-admin: its paths stay inside its folder (arguments.py)."
    )
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

    @property
    def is_script(self) -> bool:
        return self.template == Template.SCRIPT


class JobRun(models.Model):
    definition = models.ForeignKey(JobDefinition, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True)
    template = models.CharField(max_length=32, choices=RunTemplate.choices)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.BATCH)
    arguments = models.JSONField(default=dict, help_text="The arguments the job was started with.")
    script = models.TextField(blank=True, help_text="The script of a `script` job as it was when launched.")
    restricted = models.BooleanField(default=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="Last sign of life from the worker.")
    duration_s = models.FloatField(null=True, blank=True)
    rows_in = models.BigIntegerField(null=True, blank=True)
    rows_out = models.BigIntegerField(null=True, blank=True)
    output_path = models.CharField(max_length=1000, blank=True)
    preview = models.JSONField(null=True, blank=True, help_text='{"columns": [...], "rows": [[...], ...]}')
    result = models.JSONField(default=dict, blank=True, help_text="Template-specific outcome (totals, batches…).")
    progress = models.JSONField(default=dict, blank=True, help_text="Current step, Spark stage, batches.")
    error = models.TextField(blank=True)
    error_type = models.CharField(max_length=100, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    app_id = models.CharField(max_length=200, blank=True)
    master = models.CharField(max_length=500, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    task_id = models.CharField(max_length=100, blank=True)
    pid = models.IntegerField(null=True, blank=True, help_text="spark-submit's pid (its process group).")
    driver_pid = models.IntegerField(null=True, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.definition.name} #{self.pk}"

    @property
    def finished(self) -> bool:
        return self.status not in ACTIVE

    @property
    def elapsed_s(self) -> float | None:
        """The run's duration as its page counts it while it runs (started → finished); duration_s, the driver's
        own time, when one of them is unknown."""
        if self.started_at and self.finished_at:
            return max(0.0, (self.finished_at - self.started_at).total_seconds())
        return self.duration_s


class RunLogLine(models.Model):
    run = models.ForeignKey(JobRun, on_delete=models.CASCADE, related_name="log_lines")
    seq = models.IntegerField()
    stream = models.CharField(max_length=8)  # stderr (Spark's log), event (a CDCJOB line), launcher
    text = models.TextField()

    class Meta:
        ordering = ["seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="sparkjobs_log_line_unique")]

    def __str__(self) -> str:
        return f"{self.run_id}:{self.seq} {self.text[:80]}"

"""Verify runs of a connector (docs/verify.md): who asked, how far it got, and the report it stored."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class VerifyStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class VerifyRun(models.Model):
    connector = models.ForeignKey("connectors.Connector", on_delete=models.CASCADE, related_name="verify_runs")
    status = models.CharField(max_length=16, choices=VerifyStatus.choices, default=VerifyStatus.QUEUED)
    trigger = models.CharField(max_length=16, default="manual", help_text="manual or schedule")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    requested_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    progress = models.JSONField(default=dict, blank=True, help_text="The table and chunk being compared.")
    rows = models.BigIntegerField(null=True, blank=True, help_text="Source rows checked.")
    mismatched = models.BigIntegerField(null=True, blank=True, help_text="Rows missing, extra or different.")
    report = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, help_text="Why the run could not compare.")

    class Meta:
        app_label = "connectors"
        ordering = ["-requested_at", "-id"]

    def __str__(self) -> str:
        return f"verify #{self.pk} of {self.connector_id}: {self.status}"


class VerifySchedule(models.Model):
    """A connector's optional nightly Verify, at `hour` (UTC)."""

    connector = models.OneToOneField("connectors.Connector", on_delete=models.CASCADE, related_name="verify_schedule")
    nightly = models.BooleanField(default=False)
    hour = models.PositiveSmallIntegerField(default=2, help_text="Hour of the day (UTC) the nightly run starts.")

    class Meta:
        app_label = "connectors"

    def __str__(self) -> str:
        return f"nightly verify of {self.connector_id} at {self.hour}:00 UTC: {'on' if self.nightly else 'off'}"

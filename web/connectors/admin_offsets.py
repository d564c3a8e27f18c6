"""The admin's offsets page of one connector: the committed position of each partition (a MongoDB replica set's
resume token decoded to cluster time; another source's Debezium offset as stored; snapshot progress, pending
reset) and resets behind a confirmation step. Writes go through services.reset_offsets (409 while the pipeline
runs unless "stop first" is ticked; audited as source "admin")."""

from __future__ import annotations

import json

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse

from web.accounts.roles import ADMIN, has_role
from web.connectors import offsets as offset_views
from web.connectors import services
from web.connectors.models import Connector, SourceKind
from web.connectors.partition_offsets import RESET_MODES as PARTITION_MODES

MODES = [
    ("latest", "Latest: stream from now, no snapshot"),
    ("timestamp", "Timestamp: stream the changes after a point in time"),
    ("token", "Resume token: stream after this token"),
    ("snapshot", "Re-snapshot: take a new full snapshot, then stream"),
    ("initial", "Initial: delete the offset (start as on a first run)"),
]


class ResetForm(forms.Form):
    mode = forms.ChoiceField(choices=MODES)
    replica_sets = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple,
                                             help_text="None ticked: every replica set listed.")
    timestamp = forms.CharField(required=False, help_text="ISO-8601 (2024-01-01T00:00:00Z) or ms since the epoch.")
    resume_token = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 80}),
                                   help_text='JSON, e.g. {"_data": "8265…"}')
    stop = forms.BooleanField(required=False, help_text="Stop the running pipeline first.")

    def __init__(self, *args, replica_sets=(), mongodb: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["replica_sets"].choices = [(rs, rs) for rs in replica_sets]
        if not mongodb:  # timestamps and resume tokens are MongoDB's (web.connectors.partition_offsets)
            self.fields["mode"].choices = [(mode, label) for mode, label in MODES if mode in PARTITION_MODES]
            del self.fields["timestamp"], self.fields["resume_token"]
            self.fields["replica_sets"].label = "Partitions"
            self.fields["replica_sets"].help_text = "None ticked: every partition listed."

    def clean(self):
        data = super().clean()
        if data.get("mode") == "timestamp":
            try:
                data["parsed_timestamp"] = offset_views.parse_timestamp(data.get("timestamp") or "")
            except ValueError as error:
                self.add_error("timestamp", str(error))
        if data.get("mode") == "token":
            try:
                token = json.loads(data.get("resume_token") or "")
            except ValueError:
                token = None
            if not isinstance(token, dict) or not token:
                self.add_error("resume_token", 'give the token as a JSON object such as {"_data": "82…"}')
            elif problem := offset_views.resume_token_problem(token):
                self.add_error("resume_token", problem)
            data["parsed_token"] = token
        return data


def offsets_view(model_admin, request, object_id):
    connector = get_object_or_404(Connector, pk=object_id)
    error = None
    try:
        records = services.read_offsets(connector)
    except services.ServiceError as failure:
        records, error = {}, str(failure)
    mongodb = connector.source == SourceKind.MONGODB
    known = services.known_replica_sets(connector, records) if mongodb else services.partition_names(connector)
    form = ResetForm(request.POST or None, replica_sets=known, mongodb=mongodb)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "connector": connector,
        "title": f"Offsets of {connector.name}",
        "positions": [offset_views.describe(records[rs]) for rs in sorted(records)],
        "topic": offset_views.offsets_topic(connector)[0],
        "read_error": error,
        "form": form,
        "can_reset": has_role(request.user, ADMIN),
        "mongodb": mongodb,
    }
    if request.method == "POST":
        if not context["can_reset"]:
            raise PermissionDenied
        if form.is_valid():
            data = form.cleaned_data
            targets = data["replica_sets"] or known
            if "confirm" not in request.POST:
                context.update(confirming=True, targets=targets, mode_label=dict(MODES)[data["mode"]])
                return TemplateResponse(request, "admin/connectors/connector/offsets_confirm.html", context)
            try:
                services.reset_offsets(
                    connector, data["mode"], user=request.user, source="admin", replica_sets=targets or None,
                    timestamp=data.get("parsed_timestamp"), token=data.get("parsed_token"), stop=data["stop"],
                )
            except services.ServiceError as failure:
                text = failure.with_hint('tick "Stop" to have it stopped') if isinstance(
                    failure, services.PipelineRunning) else str(failure)
                messages.error(request, f"Not reset: {text}")
            else:
                messages.success(request, f"Offsets of {connector.name} reset ({data['mode']}) for "
                                          f"{', '.join(targets) or 'every replica set'}.")
                return redirect("admin:connectors_connector_offsets", connector.pk)
    return TemplateResponse(request, "admin/connectors/connector/offsets.html", context)

"""The Spark job form: common fields, one group of fields per template, and *Other arguments* as JSON.

Like the connector form it only translates: its fields become the API's body (`name`, `description`, `template`,
`mode`, `topics`, `arguments`, `script`) and the API's serializer validates it; problems come back per field.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms

from web.sparkjobs.models import JobDefinition, Mode, Template

# form field -> (template it belongs to, argument name)
TEMPLATE_FIELDS = {
    "output_path": ("latest_state stats sql delta_sync", "output_path"),
    "delete_mode": ("delta_sync", "delete_mode"),
    "include_deleted": ("latest_state", "include_deleted"),
    "window": ("stats", "window"),
    "slide": ("stats", "slide"),
    "time_field": ("stats", "time_field"),
    "include_tombstones": ("stats", "include_tombstones"),
    "sql": ("sql", "sql"),
}
ARGUMENT_FIELDS = {argument: name for name, (_, argument) in TEMPLATE_FIELDS.items()}
TIME_FIELDS = [("source", "MongoDB's cluster time (source)"), ("capture", "when the connector captured it"),
               ("kafka", "the Kafka record timestamp")]


class SparkJobForm(forms.Form):
    name = forms.SlugField(max_length=100, help_text="Letters, digits, - and _; part of URLs and output folders.")
    description = forms.CharField(max_length=500, required=False)
    template = forms.ChoiceField(choices=Template.choices)
    mode = forms.ChoiceField(choices=Mode.choices, initial=Mode.BATCH,
                             help_text="stream: latest_state, stats and delta_sync (always), continuing from a "
                                       "checkpoint")
    topics = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False,
                             help_text="One topic per line (or a <code>topic_pattern</code> in other arguments).")
    output_path = forms.CharField(required=False, help_text="Relative to the job's folder under SPARK_OUTPUT_ROOT "
                                                            "(only admins may give another place).")
    include_deleted = forms.BooleanField(required=False, label="Keep deleted rows or documents (as deleted = true)")
    delete_mode = forms.ChoiceField(choices=[("hard", "hard: remove the row"),
                                             ("soft", "soft: keep it with _cdc_deleted and the delete's time")],
                                    initial="hard", required=False, label="Deletes")
    window = forms.CharField(required=False, initial="1 minute", help_text="e.g. 1 minute, 1 hour")
    slide = forms.CharField(required=False, help_text="Sliding windows: how far apart they start")
    time_field = forms.ChoiceField(choices=TIME_FIELDS, initial="source", label="Time of an event")
    include_tombstones = forms.BooleanField(required=False, label="Count tombstones")
    sql = forms.CharField(widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}), required=False,
                          label="SQL", help_text="Each topic is a view named after it (non-alphanumerics as _), "
                                                 "with <code>_latest</code> for its latest state.")
    script = forms.CharField(widget=forms.Textarea(attrs={"rows": 10, "spellcheck": "false"}), required=False,
                             label="PySpark script", help_text="Globals: spark, args, topics, read_events, "
                                                               "latest_state, change_stats, emit, F; set result.")
    other = forms.CharField(widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}), required=False,
                            label="Other arguments (JSON)", help_text="Any other argument of the template, "
                                                                      "e.g. {\"starting_timestamp\": 1700000000000}")

    def __init__(self, *args, definition: JobDefinition | None = None, admin: bool = False, **kwargs):
        if definition is not None and not args:
            kwargs.setdefault("initial", initial_of(definition))
        super().__init__(*args, **kwargs)
        if not admin:
            self.fields["template"].choices = [c for c in Template.choices if c[0] != Template.SCRIPT]
            del self.fields["script"]
        self.fields["template"].widget.attrs["data-template-select"] = ""

    def clean_other(self) -> dict[str, Any]:
        text = self.cleaned_data.get("other", "").strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except ValueError as error:
            raise forms.ValidationError(f"not valid JSON: {error}") from None
        if not isinstance(value, dict):
            raise forms.ValidationError("a JSON object of arguments")
        return value

    def api_body(self) -> dict[str, Any]:
        data = self.cleaned_data
        template = data["template"]
        arguments = dict(data.get("other") or {})
        for name, (templates, argument) in TEMPLATE_FIELDS.items():
            if template not in templates.split():
                continue
            value = data.get(name)
            if isinstance(value, bool):
                if value:
                    arguments[argument] = True
            elif value not in (None, ""):
                arguments[argument] = value
        return {
            "name": data["name"], "description": data.get("description", ""), "template": template,
            "mode": data["mode"], "topics": [t.strip() for t in data.get("topics", "").splitlines() if t.strip()],
            "arguments": arguments, "script": data.get("script", "") if template == Template.SCRIPT else "",
        }

    def add_api_errors(self, errors: dict[str, Any]) -> None:
        for key, messages in errors.items():
            messages = messages if isinstance(messages, list) else [messages]
            argument = key.removeprefix("arguments.") if key.startswith("arguments.") else None
            field = ARGUMENT_FIELDS.get(argument) if argument else key
            if argument and field is None:
                field = "other"
            if field in (None, "non_field_errors") or field not in self.fields:
                field = None
            for message in messages:
                self.add_error(field, str(message))


def initial_of(definition: JobDefinition) -> dict[str, Any]:
    from web.sparkjobs.arguments import masked

    arguments = masked(definition.arguments or {})
    initial: dict[str, Any] = {"name": definition.name, "description": definition.description,
                               "template": definition.template, "mode": definition.mode,
                               "topics": "\n".join(definition.topics or []), "script": definition.script}
    other = {}
    for argument, value in arguments.items():
        field = ARGUMENT_FIELDS.get(argument)
        if field and definition.template in TEMPLATE_FIELDS[field][0].split():
            initial[field] = value
        else:
            other[argument] = value
    initial["other"] = json.dumps(other, indent=2) if other else ""
    return initial

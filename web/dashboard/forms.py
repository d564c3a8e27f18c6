"""The connector form: friendly fields for the common options, `key=value` lines for every other one.

The form only translates. It turns its fields into the body the REST API takes (`name`, `topic_prefix`,
`connection_string`, `password`, `config`), and the API's own serializer validates it, so the form, the API's
`validate` action (used live by static/dashboard/connector-form.js with the same translation) and the engine never
disagree. Problems come back per Debezium property and are shown next to the field that carries the property.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms

from connectors.config_values import join_list, split_list
from web.connectors import properties as props
from web.connectors.definitions import masked_config
from web.connectors.models import Connector

SNAPSHOT_MODES = [
    ("initial", "initial: snapshot when there is no offset, then stream"),
    ("initial_only", "initial_only: snapshot, then stop"),
    ("no_data", "no_data: stream from now on"),
    ("never", "never: stream from now on (legacy name)"),
    ("when_needed", "when_needed: snapshot again when the oplog position is lost"),
    ("always", "always: snapshot at every start"),
]
OPERATIONS = [("c", "inserts (c)"), ("u", "updates (u)"), ("d", "deletes (d)"), ("t", "truncates (t)")]

# form field -> Debezium property, for the fields holding one item per line
LIST_FIELDS = {
    "database_include": "database.include.list",
    "database_exclude": "database.exclude.list",
    "collection_include": "collection.include.list",
    "collection_exclude": "collection.exclude.list",
    "field_exclude": "field.exclude.list",
    "field_renames": "field.renames",
    "field_redact": "field.mask.redact",
}
FIELD_PROPERTIES = {
    "name": props.NAME,
    "topic_prefix": props.TOPIC_PREFIX,
    "connection_string": props.CONNECTION_STRING,
    "password": props.PASSWORD,
    "snapshot_mode": "snapshot.mode",
    **LIST_FIELDS,
    "skipped_operations": "skipped.operations",
}
PROPERTY_FIELDS = {prop: name for name, prop in FIELD_PROPERTIES.items()}
PROPERTY_FIELDS[props.TOPIC_PREFIX_ALIAS] = "topic_prefix"
MANAGED = set(PROPERTY_FIELDS)

REGEX_HELP = ("Regular expressions are matched against the whole name (Debezium semantics: anchored, so "
              "<code>inventory</code> does not match <code>inventory2</code>); escape dots, as in "
              "<code>inventory\\.orders</code>. Give an include list or the matching exclude list, not both. "
              "Nothing given: every database and collection is captured.")


def lines(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def parse_other(text: str) -> tuple[dict[str, str], list[str]]:
    """`key=value` lines (blank lines and `#` comments ignored) -> properties, and the lines that are not that."""
    found: dict[str, str] = {}
    bad: list[str] = []
    for number, raw in enumerate((text or "").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            bad.append(f"line {number}: expected key=value, got {line!r}")
            continue
        found[key.strip()] = value.strip()
    return found, bad


class ConnectorForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Unique; letters, digits, - and _. Cannot change later.")
    topic_prefix = forms.CharField(
        max_length=200, required=False,
        help_text="topic.prefix: topics are named &lt;prefix&gt;.&lt;db&gt;.&lt;collection&gt;.")
    connection_string = forms.CharField(
        max_length=2000, required=False,
        help_text="mongodb.connection.string, e.g. mongodb://host1:27017,host2:27017/?replicaSet=rs0. "
                  "Stored encrypted; shown with the password masked.")
    password = forms.CharField(
        required=False, strip=False, widget=forms.PasswordInput(render_value=False),
        help_text="mongodb.password (with mongodb.user below). Leave empty to keep the stored one.")
    snapshot_mode = forms.ChoiceField(choices=SNAPSHOT_MODES, initial="initial",
                                      help_text="snapshot.mode: what happens when the connector starts.")
    database_include = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}),
                                       help_text="database.include.list: database names, one regex per line.")
    database_exclude = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}),
                                       help_text="database.exclude.list: database names, one regex per line.")
    collection_include = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}),
        help_text="collection.include.list: &lt;database&gt;.&lt;collection&gt; names, one regex per line.")
    collection_exclude = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}),
        help_text="collection.exclude.list: &lt;database&gt;.&lt;collection&gt; names, one regex per line.")
    field_exclude = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}),
                                    help_text="One field per line: &lt;db&gt;.&lt;collection&gt;.&lt;field path&gt;.")
    field_renames = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}),
        help_text="One per line: &lt;db&gt;.&lt;collection&gt;.&lt;field path&gt;:&lt;new name&gt;.")
    field_redact = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}),
                                   help_text="Fields whose values are replaced by a mask, one per line.")
    skipped_operations = forms.MultipleChoiceField(choices=OPERATIONS, required=False,
                                                   widget=forms.CheckboxSelectMultiple,
                                                   help_text="skipped.operations: changes not published.")
    other = forms.CharField(
        required=False, label="Other properties", widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        help_text="Every other engine option, one <code>key=value</code> per line (docs/configuration.md), e.g. "
                  "<code>capture.mode=change_streams_update_full</code>.")
    start = forms.BooleanField(required=False, initial=True, label="Start the connector now",
                               help_text="Unchecked: saved stopped; start it with Resume.")

    def __init__(self, data=None, *args, connector: Connector | None = None, **kwargs):
        self.connector = connector
        if connector is not None and kwargs.get("initial") is None:
            kwargs["initial"] = initial_of(connector)
        super().__init__(data, *args, **kwargs)
        for name, field in self.fields.items():
            prop = FIELD_PROPERTIES.get(name)
            if prop and name != "skipped_operations":  # its fieldset carries the property
                field.widget.attrs["data-property"] = prop
            if name in LIST_FIELDS:
                field.widget.attrs.update({"data-list": "lines", "spellcheck": "false", "autocapitalize": "off"})
        self.fields["other"].widget.attrs["data-other"] = "1"
        if connector is not None:
            self.fields["name"].disabled = True
            self.fields.pop("start")
        else:
            self.fields["password"].help_text = "mongodb.password (with mongodb.user below), if not in the URI."

    regex_help = REGEX_HELP

    def api_body(self) -> dict[str, Any]:
        """The REST API body of this (bound, cleaned) form."""
        data = self.cleaned_data
        config, _ = parse_other(data.get("other", ""))
        config = {key: value for key, value in config.items() if key not in MANAGED}
        config["snapshot.mode"] = data.get("snapshot_mode") or "initial"
        for name, prop in LIST_FIELDS.items():
            items = lines(data.get(name, ""))
            if items:
                config[prop] = items
        if data.get("skipped_operations"):
            config["skipped.operations"] = list(data["skipped_operations"])
        body: dict[str, Any] = {"name": data.get("name") or (self.connector.name if self.connector else ""),
                                "topic_prefix": data.get("topic_prefix", ""),
                                "connection_string": data.get("connection_string", ""),
                                "config": config}
        if data.get("password"):
            body["password"] = data["password"]
        if self.connector is None:
            body["desired_state"] = "running" if data.get("start") else "stopped"
        return body

    def clean_other(self):
        _, bad = parse_other(self.cleaned_data.get("other", ""))
        if bad:
            raise forms.ValidationError(bad)
        return self.cleaned_data.get("other", "")

    def add_problems(self, problems: list[dict[str, str]]) -> None:
        """Problems from the API ({property, field, message}) next to the form field carrying the property."""
        for problem in problems:
            prop = problem.get("property") or ""
            field = PROPERTY_FIELDS.get(prop)
            if field is None and prop.startswith("skipped.operations"):
                field = "skipped_operations"
            if field is None and prop:
                field = "other"
            if field is not None and field in self.fields:
                self.add_error(field, problem["message"])
            else:
                self.add_error(None, problem["message"])


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return join_list(str(item) for item in value)
    return json.dumps(value)


def initial_of(connector: Connector) -> dict[str, Any]:
    """Form values of a stored connector (secrets masked, as the API returns them)."""
    flat = masked_config(connector)
    initial: dict[str, Any] = {
        "name": connector.name,
        "topic_prefix": flat.get(props.TOPIC_PREFIX) or flat.get(props.TOPIC_PREFIX_ALIAS) or "",
        "connection_string": flat.get(props.CONNECTION_STRING) or "",
        "snapshot_mode": flat.get("snapshot.mode") or "initial",
    }
    for name, prop in LIST_FIELDS.items():
        if flat.get(prop):
            initial[name] = "\n".join(split_list(flat[prop]))
    if flat.get("skipped.operations"):
        initial["skipped_operations"] = [op for op in split_list(flat["skipped.operations"]) if op != "none"]
    other = {key: value for key, value in flat.items() if key not in MANAGED}
    initial["other"] = "\n".join(f"{key}={_text(value)}" for key, value in sorted(other.items()))
    return initial

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

from connectors.config.types import HASH_MASK_PREFIX
from connectors.config.values import join_list, split_list
from connectors.secrets import MASK
from web.connectors import properties as props
from web.connectors.definitions import masked_config
from web.connectors.models import Connector
from web.connectors.validation import NAME_RULE
from web.dashboard.form_sections import SECTION_PROPERTIES, TopicAndEventFormatFields, shown_value

SNAPSHOT_MODES = [
    ("initial", "initial: snapshot when there is no offset, then stream"),
    ("initial_only", "initial_only: snapshot, then stop"),
    ("no_data", "no_data: stream from now on"),
    ("never", "never: stream from now on (legacy name)"),
    ("when_needed", "when_needed: snapshot again when the oplog position is lost"),
    ("always", "always: snapshot at every start"),
]
OPERATIONS = [("c", "inserts (c)"), ("u", "updates (u)"), ("d", "deletes (d)"), ("t", "truncates (t)")]
HASH_ALGORITHMS = [("SHA-256", "SHA-256"), ("SHA-512", "SHA-512")]

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
    "user": "mongodb.user",
    "password": props.PASSWORD,
    "snapshot_mode": "snapshot.mode",
    "signal_collection": "signal.data.collection",
    "heartbeat_interval": "heartbeat.interval.ms",
    "heartbeat_prefix": "heartbeat.topics.prefix",
    **LIST_FIELDS,
    "skipped_operations": "skipped.operations",
    **SECTION_PROPERTIES,
}
# single-value fields: the property's value as typed (empty: not set)
VALUE_FIELDS = ("user", "signal_collection", "heartbeat_interval", "heartbeat_prefix")
PROPERTY_FIELDS = {prop: name for name, prop in FIELD_PROPERTIES.items()}
PROPERTY_FIELDS[props.TOPIC_PREFIX_ALIAS] = "topic_prefix"
MANAGED = set(PROPERTY_FIELDS)

REGEX_HELP = ("Regular expressions are matched against the whole name (Debezium semantics: anchored, so "
              "<code>inventory</code> does not match <code>inventory2</code>); escape dots, as in "
              "<code>inventory\\.orders</code>. Give an include list or the matching exclude list, not both. "
              "Nothing given: every database and collection is captured.")


def hash_key(algorithm: str, salt: str) -> str:
    return f"{HASH_MASK_PREFIX}{algorithm}.with.salt.{salt}"


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
            bad.append(f'line {number}: expected key=value, got "{line}"')
            continue
        found[key.strip()] = value.strip()
    return found, bad


class ConnectorForm(TopicAndEventFormatFields):
    name = forms.CharField(max_length=100, help_text=f"Unique; {NAME_RULE}.")
    topic_prefix = forms.CharField(
        max_length=200, required=False,
        help_text="topic.prefix: topics are named &lt;prefix&gt;.&lt;db&gt;.&lt;collection&gt;.")
    connection_string = forms.CharField(
        max_length=2000, required=False,
        help_text="mongodb.connection.string, e.g. mongodb://host1:27017,host2:27017/?replicaSet=rs0. "
                  "Stored encrypted; shown with the password masked.")
    user = forms.CharField(
        max_length=200, required=False, label="User",
        help_text="mongodb.user: the database user, if not in the connection string.")
    password = forms.CharField(
        required=False, strip=False, widget=forms.PasswordInput(render_value=False),
        help_text="mongodb.password: the password of the user above (mongodb.user) or of the connection "
                  "string's user. Stored encrypted; leave empty to keep the stored one.")
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
    hash_fields = forms.CharField(
        required=False, label="Hashed fields", widget=forms.Textarea(attrs={"rows": 2}),
        help_text="field.mask.hash.&lt;algorithm&gt;.with.salt.&lt;salt&gt;: fields replaced by the hex hash of "
                  "salt + value, one &lt;db&gt;.&lt;collection&gt;.&lt;field path&gt; per line.")
    hash_algorithm = forms.ChoiceField(choices=HASH_ALGORITHMS, initial="SHA-256", required=False,
                                       label="Hash algorithm")
    hash_salt = forms.CharField(
        required=False, strip=False, label="Hash salt", widget=forms.PasswordInput(render_value=False),
        help_text="Stored encrypted, never shown; leave empty to keep the stored one.")
    signal_collection = forms.CharField(
        max_length=300, required=False, label="Signal collection",
        help_text="signal.data.collection: &lt;database&gt;.&lt;collection&gt; the connector reads signals from "
                  "(ad-hoc snapshots need it; it is always captured).")
    heartbeat_interval = forms.CharField(
        max_length=20, required=False, label="Heartbeat interval (ms)",
        widget=forms.TextInput(attrs={"inputmode": "numeric"}),
        help_text="heartbeat.interval.ms: after this long without a change, a heartbeat moves the committed "
                  "position (empty or 0: off).")
    heartbeat_prefix = forms.CharField(
        max_length=200, required=False, label="Heartbeat prefix",
        help_text="heartbeat.topics.prefix: heartbeats go to &lt;prefix&gt;.&lt;topic prefix&gt; "
                  "(default __debezium-heartbeat).")
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
        self.fields["hash_fields"].widget.attrs.update({"data-hash": "fields", "data-property": HASH_MASK_PREFIX,
                                                        "spellcheck": "false", "autocapitalize": "off"})
        self.fields["hash_algorithm"].widget.attrs["data-hash"] = "algorithm"
        self.fields["hash_salt"].widget.attrs.update({"data-hash": "salt", "autocomplete": "new-password"})
        for name in (*VALUE_FIELDS, *SECTION_PROPERTIES):
            self.fields[name].widget.attrs["data-value"] = "1"
        self.initial_hash_key = (self.initial or {}).get("hash_key", "")
        self.fields["hash_fields"].widget.attrs["data-initial-key"] = self.initial_hash_key
        if connector is not None:
            self.fields["name"].disabled = True
            self.fields.pop("start")
        else:
            self.fields["password"].help_text = ("mongodb.password: the password of the user above (mongodb.user) "
                                                 "or of the connection string's user, if not in the connection "
                                                 "string. Stored encrypted.")

    regex_help = REGEX_HELP

    def api_body(self) -> dict[str, Any]:
        """The REST API body of this (bound, cleaned) form."""
        data = self.cleaned_data
        given, _ = parse_other(self.data.get("other", "") if self.is_bound else data.get("other", ""))
        config = {key: value for key, value in given.items()
                  if key not in MANAGED and not (self.initial_hash_key and key == self.initial_hash_key)}
        config["snapshot.mode"] = data.get("snapshot_mode") or "initial"
        for name in VALUE_FIELDS:  # the field, or else the same property written in Other properties
            prop = FIELD_PROPERTIES[name]
            value = (data.get(name) or "").strip() or given.get(prop, "")
            if value:
                config[prop] = value
        for name, prop in SECTION_PROPERTIES.items():
            value = data.get(name)
            if value in (None, ""):
                value = given.get(prop, "")
            if value != "":
                config[prop] = value
        hashed = lines(data.get("hash_fields", ""))
        if hashed:
            # an empty salt keeps the stored one: the masked key means "the stored salt" to the API
            config[hash_key(data.get("hash_algorithm") or "SHA-256", data.get("hash_salt") or MASK)] = join_list(hashed)
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

    def clean(self):
        data = super().clean()
        check_with_api(self)
        return data

    def add_problems(self, problems: list[dict[str, str]], skip: set[str] = frozenset()) -> None:
        """Problems from the API ({property, field, message}) next to the form field carrying the property
        (fields in `skip` already show their own errors)."""
        for problem in problems:
            prop = problem.get("property") or ""
            field = PROPERTY_FIELDS.get(prop)
            if field is None and prop.startswith("skipped.operations"):
                field = "skipped_operations"
            if field is None and prop.startswith(HASH_MASK_PREFIX) and self.data.get("hash_fields", "").strip():
                field = "hash_fields"
            if field is None and prop:
                field = "other"
            if field in skip:
                continue
            if field is not None and field in self.fields:
                self.add_error(field, problem["message"])
            else:
                self.add_error(None, problem["message"])


def api_problems(form, request=None) -> tuple[list[dict[str, str]], Any]:
    """Every problem the API would report for the form's body ({property, field, message}), a name already taken
    included, and the serializer (validated when there are none)."""
    from web.connectors.api.serializers import ConnectorSerializer
    from web.connectors.api.views import problems_of
    from web.connectors.services import already_exists_message

    body = form.api_body()
    serializer = ConnectorSerializer(form.connector, data=body, context={"request": request} if request else {})
    problems = [] if serializer.is_valid() else problems_of(serializer)
    name = (body.get("name") or "").strip()
    if form.connector is None and name and Connector.objects.filter(name=name).exists():
        problems.insert(0, {"property": props.NAME, "field": "name", "message": already_exists_message(name)})
    return problems, serializer


def check_with_api(form) -> None:
    """A form with errors of its own (e.g. a line of Other properties that is not key=value) is also checked by the
    API, so every problem shows at once after submit; a form without any is checked when saved. Fields whose own
    value was refused are not blamed again, except Other properties, whose valid lines are still checked."""
    if not form.errors:
        return
    problems, _ = api_problems(form)
    form.add_problems(problems, skip=set(form.errors) - {"other"})


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
    for name in VALUE_FIELDS:
        if flat.get(FIELD_PROPERTIES[name]) not in (None, ""):
            initial[name] = _text(flat[FIELD_PROPERTIES[name]])
    for name, prop in SECTION_PROPERTIES.items():
        if flat.get(prop) not in (None, ""):
            initial[name] = shown_value(flat[prop])
    hashes = [key for key in flat if key.startswith(HASH_MASK_PREFIX)]
    if len(hashes) == 1:  # one algorithm: its own fields (several stay in Other properties)
        match = props.HASH_PROPERTY.match(hashes[0])
        if match and match.group("algorithm") in dict(HASH_ALGORITHMS):
            initial.update(hash_key=hashes[0], hash_algorithm=match.group("algorithm"),
                           hash_fields="\n".join(split_list(flat[hashes[0]])))
    other = {key: value for key, value in flat.items() if key not in MANAGED and key != initial.get("hash_key")}
    initial["other"] = "\n".join(f"{key}={_text(value)}" for key, value in sorted(other.items()))
    return initial

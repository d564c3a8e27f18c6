"""The connector form for PostgreSQL and MySQL/MariaDB: their connection and capture properties as fields,
`key=value` lines for every other one. Like the MongoDB form (web.dashboard.forms) it only translates into the REST
API's body; the API's serializer validates it (and connects to the server), and each problem is shown next to the
field that carries its property."""

from __future__ import annotations

from typing import Any

from django import forms

from connectors.config.values import split_list
from connectors.sources import DEBEZIUM_CLASSES, MARIADB, MYSQL, POSTGRES
from web.connectors import properties as props
from web.connectors.definitions import masked_config
from web.connectors.models import Connector
from web.connectors.validation import NAME_RULE
from web.dashboard.form_sections import SECTION_PROPERTIES, TopicAndEventFormatFields, shown_value
from web.dashboard.forms import check_with_api, lines, parse_other

SOURCES = [(POSTGRES, "PostgreSQL"), (MARIADB, "MariaDB"), (MYSQL, "MySQL")]
SNAPSHOT_MODES = [
    ("initial", "initial: snapshot when there is no offset, then stream"),
    ("initial_only", "initial_only: snapshot, then stop"),
    ("no_data", "no_data: stream from now on"),
    ("when_needed", "when_needed: snapshot again when the stored position is gone"),
    ("always", "always: snapshot at every start"),
]
PUBLICATION_MODES = [("filtered", "filtered: the captured tables (the user must own them)"),
                     ("all_tables", "all_tables: FOR ALL TABLES (needs a superuser)"),
                     ("disabled", "disabled: the publication must exist")]
# form field -> Debezium property; which sources show it (None: every one)
FIELDS = {
    "hostname": ("database.hostname", None),
    "port": ("database.port", None),
    "user": ("database.user", None),
    "dbname": ("database.dbname", (POSTGRES,)),
    "server_id": ("database.server.id", (MYSQL, MARIADB)),
    "slot_name": ("slot.name", (POSTGRES,)),
    "publication_name": ("publication.name", (POSTGRES,)),
    "publication_mode": ("publication.autocreate.mode", (POSTGRES,)),
    "snapshot_mode": ("snapshot.mode", None),
    "schema_include": ("schema.include.list", (POSTGRES,)),
    "database_include": ("database.include.list", (MYSQL, MARIADB)),
    "table_include": ("table.include.list", None),
    "table_exclude": ("table.exclude.list", None),
    "signal_collection": ("signal.data.collection", None),
    "heartbeat_interval": ("heartbeat.interval.ms", None),
    **{name: (prop, None) for name, prop in SECTION_PROPERTIES.items()},
}
LIST_FIELDS = ("schema_include", "database_include", "table_include", "table_exclude")
PROPERTY_FIELDS = {prop: name for name, (prop, _) in FIELDS.items()}


def _area() -> forms.Textarea:
    return forms.Textarea(attrs={"rows": 2, "spellcheck": "false", "autocapitalize": "off"})


class RelationalConnectorForm(TopicAndEventFormatFields):
    source = forms.ChoiceField(choices=SOURCES, help_text="connector.class: what the connector reads.")
    name = forms.CharField(max_length=100, help_text=f"Unique; {NAME_RULE}.")
    topic_prefix = forms.CharField(max_length=200, required=False,
                                   help_text="topic.prefix: topics are named &lt;prefix&gt;.&lt;schema or "
                                             "database&gt;.&lt;table&gt;.")
    hostname = forms.CharField(max_length=255, label="Host", help_text="database.hostname")
    port = forms.IntegerField(min_value=1, max_value=65535, required=False, label="Port",
                              help_text="database.port (default 5432 for PostgreSQL, 3306 for MySQL/MariaDB)")
    user = forms.CharField(max_length=200, label="User", help_text="database.user")
    password = forms.CharField(required=False, strip=False, widget=forms.PasswordInput(render_value=False),
                               help_text="database.password. Stored encrypted, never shown; leave empty to keep "
                                         "the stored one.")
    dbname = forms.CharField(max_length=200, required=False, label="Database",
                             help_text="database.dbname (PostgreSQL): the database whose changes are captured.")
    server_id = forms.IntegerField(min_value=1, required=False, label="Server id",
                                   help_text="database.server.id (MySQL/MariaDB): this connector's replication "
                                             "client id, unique among the server's replicas.")
    slot_name = forms.CharField(max_length=63, required=False, label="Slot",
                                help_text="slot.name (PostgreSQL), default debezium.")
    publication_name = forms.CharField(max_length=63, required=False, label="Publication",
                                       help_text="publication.name (PostgreSQL), default dbz_publication.")
    publication_mode = forms.ChoiceField(choices=PUBLICATION_MODES, required=False, label="Publication mode",
                                         help_text="publication.autocreate.mode (PostgreSQL).")
    snapshot_mode = forms.ChoiceField(choices=SNAPSHOT_MODES, initial="initial",
                                      help_text="snapshot.mode: what happens when the connector starts.")
    schema_include = forms.CharField(required=False, widget=_area(),
                                     help_text="schema.include.list (PostgreSQL): schema names, one regex per line.")
    database_include = forms.CharField(required=False, widget=_area(),
                                       help_text="database.include.list (MySQL/MariaDB): one regex per line.")
    table_include = forms.CharField(required=False, widget=_area(),
                                    help_text="table.include.list: &lt;schema or database&gt;.&lt;table&gt;, one "
                                              "regex per line.")
    table_exclude = forms.CharField(required=False, widget=_area(),
                                    help_text="table.exclude.list: the same, for tables left out.")
    signal_collection = forms.CharField(
        max_length=200, required=False, label="Signal table",
        help_text="signal.data.collection: &lt;schema or database&gt;.&lt;table&gt; with columns id, type, data "
                  "(e.g. shop.dbz_signal). Needed for ad-hoc snapshots and the stop/pause/resume signals.")
    heartbeat_interval = forms.IntegerField(
        min_value=0, required=False, label="Heartbeat interval (ms)",
        help_text="heartbeat.interval.ms: commit the position this often while no captured table changes "
                  "(0: never), so the slot or binlog is not held back by quiet tables.")
    other = forms.CharField(
        required=False, label="Other properties", widget=forms.Textarea(attrs={"rows": 5, "spellcheck": "false"}),
        help_text="Every other option, one <code>key=value</code> per line (docs/postgres.md, docs/mariadb.md).")
    start = forms.BooleanField(required=False, initial=True, label="Start the connector now")

    def __init__(self, data=None, *args, connector: Connector | None = None, source: str = POSTGRES, **kwargs):
        self.connector = connector
        if connector is not None and kwargs.get("initial") is None:
            kwargs["initial"] = initial_of(connector)
        elif connector is None:
            kwargs.setdefault("initial", {}).setdefault("source", source)
        super().__init__(data, *args, **kwargs)
        if connector is not None:
            for name in ("name", "source"):
                self.fields[name].disabled = True
            self.fields.pop("start")
        else:
            self.fields["password"].help_text = "database.password. Stored encrypted, never shown."

    def chosen_source(self) -> str:
        if self.connector is not None:
            return self.connector.source
        return (self.data.get("source") if self.is_bound else None) or self.initial.get("source") or POSTGRES

    def api_body(self) -> dict[str, Any]:
        data = self.cleaned_data
        source = self.chosen_source()
        config, _ = parse_other(self.data.get("other", ""))
        config = {key: value for key, value in config.items()
                  if key not in PROPERTY_FIELDS and key not in (props.CONNECTOR_CLASS, *props.PASSWORDS)}
        config[props.CONNECTOR_CLASS] = DEBEZIUM_CLASSES[source]
        for name, (prop, sources) in FIELDS.items():
            if sources is not None and source not in sources:
                continue
            value = data.get(name)
            if name in LIST_FIELDS:
                value = lines(value or "")
            if value not in (None, "", []):
                config[prop] = value
        body: dict[str, Any] = {"name": data.get("name") or (self.connector.name if self.connector else ""),
                                "topic_prefix": data.get("topic_prefix", ""), "config": config}
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
        for problem in problems:
            prop = problem.get("property") or ""
            field = PROPERTY_FIELDS.get(prop) or {props.NAME: "name", props.TOPIC_PREFIX: "topic_prefix",
                                                  props.DATABASE_PASSWORD: "password"}.get(prop)
            if field is None and prop:
                field = "other"
            if field in skip:
                continue
            self.add_error(field if field in self.fields else None, problem["message"])


def initial_of(connector: Connector) -> dict[str, Any]:
    shown = masked_config(connector)
    initial: dict[str, Any] = {"source": connector.source, "name": connector.name,
                               "topic_prefix": connector.topic_prefix}
    for name, (prop, _) in FIELDS.items():
        value = shown.get(prop)
        if value is None:
            continue
        value = shown_value(value)
        initial[name] = "\n".join(split_list(value)) if name in LIST_FIELDS else value
    managed = {*PROPERTY_FIELDS, props.NAME, props.TOPIC_PREFIX, props.CONNECTOR_CLASS, *props.PASSWORDS}
    initial["other"] = "\n".join(f"{key}={value}" for key, value in shown.items() if key not in managed)
    return initial


def live_check_spec(source: str) -> dict[str, Any]:
    """What the page's live checks (static/dashboard/relational-form.js) need to build the API body as api_body
    does: each shown field's property, the list fields, the source's connector.class."""
    return {"fields": {name: prop for name, (prop, sources) in FIELDS.items() if sources is None or source in sources},
            "lists": list(LIST_FIELDS), "connector_class": DEBEZIUM_CLASSES[source]}

"""Form sections every connector form shows alike: "Topic creation" (topic.creation.default.*) and "Event format"
(schemas.enable, tombstones.on.delete). The MongoDB form (web.dashboard.forms) and the relational one
(web.dashboard.relational_form) inherit these fields and map them to the same properties."""

from __future__ import annotations

from django import forms

# form field -> Debezium property
SECTION_PROPERTIES = {
    "topic_partitions": "topic.creation.default.partitions",
    "topic_replication": "topic.creation.default.replication.factor",
    "topic_cleanup": "topic.creation.default.cleanup.policy",
    "schemas_enable": "schemas.enable",
    "tombstones": "tombstones.on.delete",
}
CLEANUP_POLICIES = [("", "default: delete"), ("delete", "delete: removed after retention.ms"),
                    ("compact", "compact: the last event of each key kept"),
                    ("compact,delete", "compact,delete: both")]
SCHEMAS = [("", "default: off, payload only"), ("true", "on: schema and payload, as Kafka Connect's JsonConverter"),
           ("false", "off: payload only")]
TOMBSTONES = [("", "default: on"), ("true", "on: each delete followed by a tombstone"), ("false", "off")]


class TopicAndEventFormatFields(forms.Form):
    topic_partitions = forms.IntegerField(
        min_value=-1, required=False, label="Partitions",
        help_text="topic.creation.default.partitions of the change topics the connector creates (-1: the "
                  "broker's default).")
    topic_replication = forms.IntegerField(
        min_value=-1, required=False, label="Replication factor",
        help_text="topic.creation.default.replication.factor (-1: the broker's default).")
    topic_cleanup = forms.ChoiceField(
        choices=CLEANUP_POLICIES, required=False, label="Cleanup policy",
        help_text="topic.creation.default.cleanup.policy of the change topics it creates.")
    schemas_enable = forms.ChoiceField(
        choices=SCHEMAS, required=False, label="Schemas in events",
        help_text="schemas.enable: each key and value as {schema, payload}, as Kafka Connect's JsonConverter "
                  "writes them (key.converter.schemas.enable / value.converter.schemas.enable in Other "
                  "properties override it for one side).")
    tombstones = forms.ChoiceField(
        choices=TOMBSTONES, required=False, label="Tombstones after deletes",
        help_text="tombstones.on.delete: a delete event is followed by a null value with the same key, so a "
                  "compacted topic forgets the row or document.")


def shown_value(value):
    """A stored section property as its field shows it: a JSON body may store true/false, the choice is the
    text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value

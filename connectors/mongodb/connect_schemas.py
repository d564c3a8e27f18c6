"""Kafka Connect JSON schemas of the messages, for ``schemas.enable`` (the JsonConverter envelope
``{"schema": …, "payload": …}``). Names and versions are Debezium's, so consumers that read
Debezium's schemas (JDBC sinks, schema-aware deserialisers) accept ours.
"""

from __future__ import annotations

from typing import Any

JSON_NAME = "io.debezium.data.Json"
ENUM_NAME = "io.debezium.data.Enum"
SNAPSHOT_VALUES = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"


def _field(field_name: str, type_: str, *, optional: bool = False, **extra: Any) -> dict[str, Any]:
    return {"type": type_, "optional": optional, **extra, "field": field_name}


def _array_field(name: str, items: dict[str, Any]) -> dict[str, Any]:
    """An optional array field, its members in JsonConverter's order (the element schema before `optional`)."""
    return {"type": "array", "items": items, "optional": True, "field": name}


def _json_field(name: str) -> dict[str, Any]:
    return _field(name, "string", optional=True, name=JSON_NAME, version=1)


def _struct(fields: list[dict[str, Any]], *, name: str, optional: bool = False, version: int | None = None) -> dict:
    schema: dict[str, Any] = {"type": "struct", "fields": fields, "optional": optional, "name": name}
    if version is not None:
        schema["version"] = version
    return schema


def _as_field(schema: dict[str, Any], name: str) -> dict[str, Any]:
    return {**schema, "field": name}


def wrap(schema: dict[str, Any], payload: Any) -> dict[str, Any]:
    return {"schema": schema, "payload": payload}


def key_schema(topic: str) -> dict[str, Any]:
    return _struct([_field("id", "string")], name=f"{topic}.Key")


def _snapshot_field() -> dict[str, Any]:
    return _field(
        "snapshot",
        "string",
        optional=True,
        name=ENUM_NAME,
        version=1,
        parameters={"allowed": SNAPSHOT_VALUES},
        default="false",
    )


def _common_source_fields(debezium_2x: bool = True) -> list[dict[str, Any]]:
    common = [
        _field("version", "string"),
        _field("connector", "string"),
        _field("name", "string"),
        _field("ts_ms", "int64"),
        _snapshot_field(),
        _field("db", "string"),
        _field("sequence", "string", optional=True),
    ]
    if debezium_2x:
        common.append(_field("rs", "string"))
    else:
        common += [_field("ts_us", "int64", optional=True), _field("ts_ns", "int64", optional=True)]
    return [*common, _field("collection", "string"), _field("ord", "int32")]


def source_schema(debezium_2x: bool = False) -> dict[str, Any]:
    fields = [
        *_common_source_fields(debezium_2x),
        _field("lsid", "string", optional=True),
        _field("txnNumber", "int64", optional=True),
        _field("wallTime", "int64", optional=True),
    ]
    # Debezium 3.x versions the source schema; 2.x did not
    return _struct(fields, name="io.debezium.connector.mongo.Source", version=None if debezium_2x else 1)


def legacy_source_schema() -> dict[str, Any]:
    fields = [
        *_common_source_fields(),
        _field("h", "int64", optional=True),
        _field("tord", "int64", optional=True),
        _field("stxnid", "string", optional=True),
        _field("lsid", "string", optional=True),
        _field("txnNumber", "int64", optional=True),
    ]
    return _struct(fields, name="io.debezium.connector.mongo.Source")


def update_description_schema() -> dict[str, Any]:
    truncated = _struct(
        [_field("field", "string"), _field("size", "int32")],
        name="io.debezium.connector.mongodb.changestream.truncatedarray",
        version=1,
    )
    fields = [
        _array_field("removedFields", {"type": "string", "optional": False}),
        _json_field("updatedFields"),
        _array_field("truncatedArrays", truncated),
    ]
    return _struct(
        fields, name="io.debezium.connector.mongodb.changestream.updatedescription", optional=True, version=1
    )


def transaction_block_schema() -> dict[str, Any]:
    fields = [_field("id", "string"), _field("total_order", "int64"), _field("data_collection_order", "int64")]
    return _struct(fields, name="event.block", optional=True, version=1)


def envelope_schema(topic: str, debezium_2x: bool = False) -> dict[str, Any]:
    fields = [
        _json_field("before"),
        _json_field("after"),
        _as_field(update_description_schema(), "updateDescription"),
        _as_field(source_schema(debezium_2x), "source"),
        _field("op", "string", optional=True),
        _field("ts_ms", "int64", optional=True),
        _as_field(transaction_block_schema(), "transaction"),
    ]
    return _struct(fields, name=f"{topic}.Envelope")


def legacy_envelope_schema(topic: str) -> dict[str, Any]:
    fields = [
        _json_field("after"),
        _json_field("patch"),
        _json_field("filter"),
        _as_field(legacy_source_schema(), "source"),
        _field("op", "string", optional=True),
        _field("ts_ms", "int64", optional=True),
        _as_field(transaction_block_schema(), "transaction"),
    ]
    return _struct(fields, name=f"{topic}.Envelope")


def transaction_key_schema() -> dict[str, Any]:
    return _struct([_field("id", "string")], name="io.debezium.connector.common.TransactionMetadataKey", version=1)


def transaction_value_schema() -> dict[str, Any]:
    per_collection = _struct(
        [_field("data_collection", "string"), _field("event_count", "int64")], name="event.collection",
        optional=True, version=1,
    )
    fields = [
        _field("status", "string"),
        _field("id", "string"),
        _field("event_count", "int64", optional=True),
        _array_field("data_collections", per_collection),
        _field("ts_ms", "int64"),
    ]
    return _struct(fields, name="io.debezium.connector.common.TransactionMetadataValue", version=1)


def heartbeat_key_schema() -> dict[str, Any]:
    return _struct([_field("serverName", "string")], name="io.debezium.connector.common.ServerNameKey", version=1)


def heartbeat_value_schema() -> dict[str, Any]:
    return _struct([_field("ts_ms", "int64")], name="io.debezium.connector.common.Heartbeat", version=1)

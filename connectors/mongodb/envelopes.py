"""Message value payloads, one builder per ``event.format``.

* ``debezium``: the Debezium 3.x MongoDB change-stream envelope ``{before, after, updateDescription, source, op,
  ts_ms, transaction}`` (2.x's source block on request) with documents as strict Extended JSON strings.
* ``legacy``: the Debezium 1.x oplog-era envelope ``{after, patch, filter, source, op, ts_ms,
  transaction}``: inserts and reads carry ``after``; updates carry ``patch`` (``$set``/``$unset``, or
  the whole new document for a replace) and ``filter`` (the document key); deletes carry ``filter``.
* ``flattened``: the document itself (Debezium's ExtractNewDocumentState), as relaxed Extended
  JSON, optionally with envelope fields added under a prefix.

Payloads are plain JSON-ready structures; `connectors.mongodb.events` serialises them.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bson.datetime_ms import DatetimeMS
from bson.raw_bson import RawBSONDocument

from connectors.config.types import ENVELOPE_FIELDS
from connectors.events.version import SOURCE_VERSION
from connectors.mongodb import extjson, rawjson
from connectors.mongodb.records import ChangeRecord, Operation, SnapshotMarker, UpdateDescription
from connectors.mongodb.update_paths import apply_update_description

CONNECTOR_VERSION = SOURCE_VERSION
CONNECTOR_TYPE = "mongodb"
DELETED_FIELD = "__deleted"
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_NAIVE_EPOCH = datetime.datetime(1970, 1, 1)
_MILLISECOND = datetime.timedelta(milliseconds=1)


@dataclass(frozen=True)
class SourceContext:
    """What the source block says about where events come from."""

    name: str  # topic.prefix, Debezium's logical name
    replica_set: str
    version: str = CONNECTOR_VERSION
    debezium_2x: bool = False  # debezium.compatibility=2: the 2.0-2.5 source block (rs, cluster-time ts_ms)
    bare_non_finite: bool = True  # json.non.finite.doubles=bare: NaN/Infinity in documents as the Java driver writes


def _position(record: ChangeRecord) -> tuple[int, int]:
    # Debezium reads ts_ms and ord from the event's cluster time (seconds, increment).
    if record.cluster_time is None:
        return 0, 0
    return record.cluster_time.time * 1000, record.cluster_time.inc


def _millis(moment: Any) -> int | None:
    """Milliseconds since the epoch of a BSON date (pymongo gives naive UTC datetimes, or DatetimeMS)."""
    if moment is None:
        return None
    if isinstance(moment, DatetimeMS):
        return int(moment)
    if moment.tzinfo is None:
        return (moment - _NAIVE_EPOCH) // _MILLISECOND
    return (moment - _EPOCH) // _MILLISECOND


def event_ms(record: ChangeRecord, context: SourceContext) -> int | None:
    """A streamed event's ``source.ts_ms``, which Debezium's transaction metadata stamps BEGIN and END with (the
    END with the next event's)."""
    wall = None if context.debezium_2x else _millis(record.wall_time)
    if wall is not None:
        return wall
    return _position(record)[0] if record.cluster_time is not None else None


def _snapshot(record: ChangeRecord) -> str:
    return (record.snapshot or SnapshotMarker.FALSE).value


def source_block(record: ChangeRecord, context: SourceContext, ts_ms: int | None = None) -> dict[str, Any]:
    """Debezium 3.x's block (2.x's with ``context.debezium_2x``). ``ts_ms``: when the event was built, which for a
    snapshot read is when the document was read (3.x's snapshot ``ts_ms``)."""
    if context.debezium_2x:
        return _source_block_2x(record, context)
    wall = _millis(record.wall_time)
    if record.is_snapshot:
        when, order = (ts_ms if ts_ms is not None else 0), -1
    elif wall is not None:
        when, order = wall, record.cluster_time.inc if record.cluster_time is not None else 0
    else:  # MongoDB before 6.0 sends no wallTime
        when, order = _position(record)
    return {
        "version": context.version,
        "connector": CONNECTOR_TYPE,
        "name": context.name,
        "ts_ms": when,
        "snapshot": _snapshot(record),
        "db": record.namespace.db,
        "sequence": None,
        "ts_us": when * 1000,
        "ts_ns": when * 1_000_000,
        "collection": record.namespace.collection,
        "ord": order,
        "lsid": _lsid(record, context),
        "txnNumber": record.txn_number,
        "wallTime": wall,
    }


def _lsid(record: ChangeRecord, context: SourceContext) -> str | None:
    if record.lsid is None:
        return None
    return extjson.document_json(record.lsid, bare_non_finite=context.bare_non_finite)


def _source_block_2x(record: ChangeRecord, context: SourceContext) -> dict[str, Any]:
    ts_ms, order = _position(record)
    return {
        "version": context.version,
        "connector": CONNECTOR_TYPE,
        "name": context.name,
        "ts_ms": ts_ms,
        "snapshot": _snapshot(record),
        "db": record.namespace.db,
        "sequence": None,
        "rs": context.replica_set,
        "collection": record.namespace.collection,
        "ord": order,
        "lsid": _lsid(record, context),
        "txnNumber": record.txn_number,
        "wallTime": _millis(record.wall_time),
    }


def legacy_source_block(record: ChangeRecord, context: SourceContext) -> dict[str, Any]:
    ts_ms, order = _position(record)
    return {
        "version": context.version,
        "connector": CONNECTOR_TYPE,
        "name": context.name,
        "ts_ms": ts_ms,
        "snapshot": _snapshot(record),
        "db": record.namespace.db,
        "sequence": None,
        "rs": context.replica_set,
        "collection": record.namespace.collection,
        "ord": order,
        # Oplog-only identifiers: change streams have no `h` and no transaction ordinal.
        "h": None,
        "tord": None,
        "stxnid": record.transaction_id,
        "lsid": _lsid(record, context),
        "txnNumber": record.txn_number,
    }


def document_text(document: Mapping[str, Any] | None, context: SourceContext) -> str | None:
    """A document as an event's `before`/`after` text (relaxed Extended JSON, Debezium's writer settings)."""
    if document is None:
        return None
    if type(document) is RawBSONDocument:  # a full document of a change stream read raw (stream.py)
        return rawjson.document_json(document.raw, bare_non_finite=context.bare_non_finite)
    return extjson.document_json(document, bare_non_finite=context.bare_non_finite)


def update_description_block(description: UpdateDescription | None) -> dict[str, Any] | None:
    if description is None:
        return None
    truncated = [{"field": item.field, "size": item.new_size} for item in description.truncated_arrays]
    return {
        "removedFields": list(description.removed_fields) or None,
        "updatedFields": extjson.updated_fields_json(description.updated_fields),
        "truncatedArrays": truncated or None,
    }


def debezium_value(
    record: ChangeRecord, context: SourceContext, ts_ms: int, transaction: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    after = record.full_document if record.operation is not Operation.DELETE else None
    before = record.full_document_before_change if record.operation in (Operation.UPDATE, Operation.DELETE) else None
    description = record.update_description if record.operation is Operation.UPDATE else None
    return {
        "before": document_text(before, context),
        "after": document_text(after, context),
        "updateDescription": update_description_block(description),
        "source": source_block(record, context, ts_ms),
        "op": record.operation.value,
        "ts_ms": ts_ms,
        "transaction": dict(transaction) if transaction is not None else None,
    }


def legacy_patch(record: ChangeRecord) -> dict[str, Any] | None:
    """The update as the oplog recorded it: a replacement document, or update operators."""
    if record.operation is not Operation.UPDATE:
        return None
    description = record.update_description
    if record.source_operation == "replace" or description is None:
        return dict(rawjson.decoded(record.full_document)) if record.full_document is not None else None
    patch: dict[str, Any] = {}
    if description.updated_fields:
        patch["$set"] = dict(description.updated_fields)
    if description.removed_fields:
        patch["$unset"] = {path: True for path in description.removed_fields}
    if description.truncated_arrays:
        # A truncation is the update {$push: {<array>: {$each: [], $slice: <new size>}}}.
        patch["$push"] = {item.field: {"$each": [], "$slice": item.new_size} for item in description.truncated_arrays}
    return patch


def legacy_value(
    record: ChangeRecord,
    context: SourceContext,
    ts_ms: int,
    transaction: Mapping[str, Any] | None = None,
    *,
    document_filter: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    after = record.full_document if record.operation in (Operation.CREATE, Operation.READ) else None
    filter_document = document_filter if record.operation in (Operation.UPDATE, Operation.DELETE) else None
    return {
        "after": document_text(after, context),
        "patch": document_text(legacy_patch(record), context),
        "filter": document_text(filter_document, context),
        "source": legacy_source_block(record, context),
        "op": record.operation.value,
        "ts_ms": ts_ms,
        "transaction": dict(transaction) if transaction is not None else None,
    }


def flattened_document(record: ChangeRecord) -> dict[str, Any]:
    """The document's state after the change, as completely as the event allows."""
    before = rawjson.decoded(record.full_document_before_change)
    if record.operation is Operation.DELETE:
        return dict(before) if before is not None else {"_id": record.document_id}
    if record.full_document is not None:
        return dict(rawjson.decoded(record.full_document))
    description = record.update_description or UpdateDescription()
    if before is not None:
        return apply_update(before, description)
    # Without any image, Debezium's partial document: _id plus the changed paths as written.
    document: dict[str, Any] = {"_id": record.document_id}
    document.update(description.updated_fields)
    return document


def flattened_value(
    record: ChangeRecord,
    context: SourceContext,
    ts_ms: int,
    *,
    add_fields: Sequence[str] = (),
    prefix: str = "__",
    rewrite: bool = False,
) -> dict[str, Any]:
    value = extjson.to_relaxed_fragments(flattened_document(record))
    if add_fields:
        envelope = {"op": record.operation.value, "ts_ms": ts_ms}
        source = source_block(record, context, ts_ms)
        source.setdefault("rs", context.replica_set)  # flattened.add.fields=rs stays available in the 3.x shape
        for name in add_fields:
            if name in ENVELOPE_FIELDS:
                value[prefix + name] = envelope[name]
            else:
                value[prefix + name.replace(".", "_")] = source[name.removeprefix("source.")]
    if rewrite:
        value[DELETED_FIELD] = record.operation is Operation.DELETE
    return value


# --- applying an update description to a pre-image --------------------------------------------


def apply_update(before: Mapping[str, Any], description: UpdateDescription) -> dict[str, Any]:
    """The post-image MongoDB would compute from a pre-image and an update description."""
    return apply_update_description(
        before,
        description.updated_fields,
        description.removed_fields,
        [(item.field, item.new_size) for item in description.truncated_arrays],
    )

"""What the MongoDB source yields: one `ChangeRecord` per captured document change.

A record is a faithful, format-neutral copy of a change stream event (or of a document read by a
snapshot). Filters, field rules and envelopes are applied later, by the transformer; records are
never mutated after creation.

Operations follow Debezium: ``insert`` → ``c``, ``update`` and ``replace`` → ``u`` (a replace
carries the new document in ``full_document`` and no update description), ``delete`` → ``d``, a
snapshot read → ``r``. The raw MongoDB operation type is kept in ``source_operation`` for the
legacy format, which renders a replace as a whole-document patch.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bson.timestamp import Timestamp

from connectors.mongodb import extjson, rawjson


class Operation(StrEnum):
    CREATE = "c"
    UPDATE = "u"
    DELETE = "d"
    READ = "r"


class SnapshotMarker(StrEnum):
    """Values of ``source.snapshot`` (Debezium's SnapshotRecord)."""

    TRUE = "true"
    FIRST = "first"
    FIRST_IN_DATA_COLLECTION = "first_in_data_collection"
    LAST_IN_DATA_COLLECTION = "last_in_data_collection"
    LAST = "last"
    FALSE = "false"
    INCREMENTAL = "incremental"


_OPERATIONS_BY_TYPE = {
    "insert": Operation.CREATE,
    "update": Operation.UPDATE,
    "replace": Operation.UPDATE,
    "delete": Operation.DELETE,
}
DATA_OPERATION_TYPES = frozenset(_OPERATIONS_BY_TYPE)


class UnsupportedChangeEvent(ValueError):
    """A change stream event that is not a document change (drop, rename, invalidate, …)."""


@dataclass(frozen=True, slots=True)
class Namespace:
    db: str
    collection: str

    @property
    def full_name(self) -> str:
        return f"{self.db}.{self.collection}"

    @classmethod
    def parse(cls, full_name: str) -> Namespace:
        db, sep, collection = full_name.partition(".")
        if not sep or not db or not collection:
            raise ValueError(f"namespace {full_name!r} is not of the form <database>.<collection>")
        return cls(db, collection)

    def __str__(self) -> str:
        return self.full_name


_NAMESPACES: dict[tuple[str, str], Namespace] = {}


def shared_namespace(db: str, collection: str) -> Namespace:
    """One Namespace object per collection: the per-collection caches downstream then find it by identity."""
    namespace = _NAMESPACES.get((db, collection))
    if namespace is None:
        if len(_NAMESPACES) >= 10_000:
            _NAMESPACES.clear()
        namespace = _NAMESPACES[(db, collection)] = Namespace(db, collection)
    return namespace


def transaction_id(lsid: Mapping[str, Any] | None, txn_number: int | None) -> str | None:
    """Debezium's transaction id of an event with these `lsid` and `txnNumber`: ``<lsid as JSON>:<txnNumber>``;
    None outside a transaction."""
    return transaction_id_of_json(None if lsid is None else extjson.document_json(lsid), txn_number)


def transaction_id_of_json(lsid_json: str | None, txn_number: int | None) -> str | None:
    """`transaction_id` of an lsid already written as JSON."""
    if lsid_json is None and txn_number is None:
        return None
    if lsid_json is None:
        return str(txn_number)
    return lsid_json if txn_number is None else f"{lsid_json}:{txn_number}"


@dataclass(frozen=True, slots=True)
class TruncatedArray:
    field: str
    new_size: int


@dataclass(frozen=True, slots=True)
class UpdateDescription:
    """``updateDescription`` of an update event; paths use MongoDB's dot notation."""

    updated_fields: Mapping[str, Any] = field(default_factory=dict)
    removed_fields: tuple[str, ...] = ()
    truncated_arrays: tuple[TruncatedArray, ...] = ()

    @classmethod
    def from_event(cls, raw: Mapping[str, Any]) -> UpdateDescription:
        return cls(
            updated_fields=dict(raw.get("updatedFields") or {}),
            removed_fields=tuple(raw.get("removedFields") or ()),
            truncated_arrays=tuple(
                TruncatedArray(item["field"], int(item["newSize"])) for item in raw.get("truncatedArrays") or ()
            ),
        )


@dataclass(frozen=True, slots=True)
class ChangeRecord:
    operation: Operation
    namespace: Namespace
    document_key: Mapping[str, Any]
    full_document: Mapping[str, Any] | None = None
    full_document_before_change: Mapping[str, Any] | None = None
    update_description: UpdateDescription | None = None
    cluster_time: Timestamp | None = None
    wall_time: datetime.datetime | None = None
    resume_token: Mapping[str, Any] | None = None
    lsid: Mapping[str, Any] | None = None
    txn_number: int | None = None
    snapshot: SnapshotMarker | None = None
    source_operation: str = ""

    def __post_init__(self) -> None:
        if "_id" not in self.document_key:
            raise ValueError("document_key must contain _id")

    @property
    def document_id(self) -> Any:
        return self.document_key["_id"]

    @property
    def is_snapshot(self) -> bool:
        return self.snapshot is not None and self.snapshot is not SnapshotMarker.FALSE

    @property
    def transaction_id(self) -> str | None:
        """Debezium's transaction id: ``<lsid as JSON>:<txnNumber>``; None outside a transaction."""
        return transaction_id(self.lsid, self.txn_number)

    @classmethod
    def from_change_event(cls, event: Mapping[str, Any]) -> ChangeRecord:
        """Build a record from a change stream event as pymongo returns it."""
        operation_type = event.get("operationType")
        operation = _OPERATIONS_BY_TYPE.get(operation_type)
        if operation is None:
            raise UnsupportedChangeEvent(f"change stream event {operation_type!r} is not a document change")
        ns = event["ns"]
        raw_update = event.get("updateDescription")
        txn_number = event.get("txnNumber")
        return cls(
            operation=operation,
            namespace=shared_namespace(ns["db"], ns["coll"]),
            document_key=event["documentKey"],
            full_document=event.get("fullDocument"),
            full_document_before_change=event.get("fullDocumentBeforeChange"),
            update_description=UpdateDescription.from_event(raw_update) if raw_update is not None else None,
            cluster_time=event.get("clusterTime"),
            wall_time=event.get("wallTime"),
            resume_token=event.get("_id"),
            lsid=event.get("lsid"),
            txn_number=int(txn_number) if txn_number is not None else None,
            source_operation=operation_type,
        )

    @classmethod
    def snapshot_read(
        cls,
        namespace: Namespace,
        document: Mapping[str, Any],
        *,
        cluster_time: Timestamp | None,
        marker: SnapshotMarker = SnapshotMarker.TRUE,
        resume_token: Mapping[str, Any] | None = None,
    ) -> ChangeRecord:
        """A document read by a snapshot; ``cluster_time`` is the stream position the snapshot started at."""
        return cls(
            operation=Operation.READ,
            namespace=namespace,
            document_key=rawjson.document_key(document),
            full_document=document,
            cluster_time=cluster_time,
            resume_token=resume_token,
            snapshot=marker,
            source_operation="read",
        )


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """An idle tick: the stream moved (``postBatchResumeToken``) without a captured change."""

    resume_token: Mapping[str, Any] | None
    cluster_time: Timestamp | None = None

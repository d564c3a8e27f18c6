"""Namespace and operation filters, the watch() scope and the server-side $match."""

from __future__ import annotations

import itertools

import mongomock
import pytest
from bson.regex import Regex

from connectors.mongodb.config import CaptureScope, ConnectorConfig
from connectors.mongodb.filters import (
    BUILT_IN_DATABASES,
    LIFECYCLE_OPERATION_TYPES,
    EventFilter,
    NamePatterns,
    NamespaceFilter,
    WatchTarget,
    change_stream_match,
    change_stream_pipeline,
    watch_target,
)
from connectors.mongodb.records import ChangeRecord, Namespace, Operation, SnapshotMarker

BASE = {"name": "c", "topic.prefix": "p", "mongodb.connection.string": "mongodb://h1"}


def config(**props) -> ConnectorConfig:
    return ConnectorConfig.from_properties({**BASE, **{k.replace("__", "."): v for k, v in props.items()}})


def record(db: str, collection: str, operation: Operation = Operation.CREATE, **extra) -> ChangeRecord:
    return ChangeRecord(operation, Namespace(db, collection), {"_id": 1}, **extra)


# --- name patterns ----------------------------------------------------------------------------


def test_patterns_match_the_whole_name_ignoring_case():
    patterns = NamePatterns(["inv.*", "sales"])
    assert patterns.matches("inventory")
    assert patterns.matches("INVENTORY")
    assert patterns.matches("Sales")
    assert not patterns.matches("my_inventory")
    assert not patterns.matches("salesforce")


def test_alternatives_inside_a_pattern_stay_anchored():
    patterns = NamePatterns(["a|b"])
    assert patterns.matches("a") and patterns.matches("b")
    assert not patterns.matches("ab") and not patterns.matches("xa")
    assert patterns.server_regex() == "^(?:(?:a|b))$"


def test_empty_patterns_are_falsy():
    assert not NamePatterns([])
    assert NamePatterns(["x"])


# --- namespace filter -------------------------------------------------------------------------


def test_no_lists_capture_everything_but_built_in_databases():
    namespaces = NamespaceFilter()
    assert namespaces.includes(Namespace("inventory", "customers"))
    for db in BUILT_IN_DATABASES:
        assert not namespaces.includes(Namespace(db, "anything"))


def test_database_include_list():
    namespaces = NamespaceFilter(database_include=["inventory", "sales_.*"])
    assert namespaces.includes(Namespace("inventory", "a"))
    assert namespaces.includes(Namespace("sales_eu", "a"))
    assert not namespaces.includes(Namespace("hr", "a"))
    assert not namespaces.includes(Namespace("inventory2", "a"))


def test_database_include_list_cannot_bring_back_built_in_databases():
    assert not NamespaceFilter(database_include=["admin"]).includes(Namespace("admin", "x"))


def test_database_exclude_list():
    namespaces = NamespaceFilter(database_exclude=["hr"])
    assert not namespaces.includes(Namespace("hr", "a"))
    assert namespaces.includes(Namespace("hr2", "a"))


def test_collection_include_matches_qualified_names():
    namespaces = NamespaceFilter(collection_include=[r"inventory\.cust.*"])
    assert namespaces.includes(Namespace("inventory", "customers"))
    assert namespaces.includes(Namespace("Inventory", "CUSTOMERS"))
    assert not namespaces.includes(Namespace("inventory", "orders"))
    assert not namespaces.includes(Namespace("sales", "customers"))


def test_collection_exclude_list():
    namespaces = NamespaceFilter(collection_exclude=[r"inventory\.tmp_.*"])
    assert not namespaces.includes(Namespace("inventory", "tmp_1"))
    assert namespaces.includes(Namespace("inventory", "orders"))


def test_database_and_collection_lists_combine():
    namespaces = NamespaceFilter(database_include=["inventory"], collection_exclude=[r".*\.audit"])
    assert namespaces.includes(Namespace("inventory", "orders"))
    assert not namespaces.includes(Namespace("inventory", "audit"))
    assert not namespaces.includes(Namespace("sales", "orders"))


def test_signal_collection_is_watched_but_only_emitted_when_included():
    namespaces = NamespaceFilter(collection_include=[r"inventory\.orders"], signal_collection="inventory.signals")
    signals = Namespace("inventory", "signals")
    assert namespaces.is_signal(signals)
    assert namespaces.watches(signals)
    assert not namespaces.includes(signals)
    assert not namespaces.is_signal(Namespace("inventory", "orders"))
    assert not NamespaceFilter().is_signal(signals)


def test_snapshot_include_list_narrows_the_captured_collections():
    namespaces = NamespaceFilter(database_include=["inventory"], snapshot_include=[r"inventory\.orders"])
    assert namespaces.includes_in_snapshot(Namespace("inventory", "orders"))
    assert not namespaces.includes_in_snapshot(Namespace("inventory", "customers"))
    assert not namespaces.includes_in_snapshot(Namespace("sales", "orders"))
    assert NamespaceFilter().includes_in_snapshot(Namespace("sales", "orders"))


def test_from_config():
    namespaces = NamespaceFilter.from_config(
        config(
            **{
                "database.include.list": "inventory",
                "collection.exclude.list": r"inventory\.tmp",
                "signal.data.collection": "inventory.signals",
                "snapshot.include.collection.list": r"inventory\.orders",
            }
        )
    )
    assert namespaces.includes(Namespace("inventory", "orders"))
    assert not namespaces.includes(Namespace("inventory", "tmp"))
    assert namespaces.signal_collection == Namespace("inventory", "signals")
    assert not namespaces.includes_in_snapshot(Namespace("inventory", "customers"))


# --- event filter -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("skipped", "operation", "accepted"),
    [
        ("c", Operation.CREATE, False),
        ("c", Operation.UPDATE, True),
        ("u", Operation.UPDATE, False),
        ("d", Operation.DELETE, False),
        ("c,u,d", Operation.DELETE, False),
        ("t", Operation.CREATE, True),
        ("none", Operation.DELETE, True),
    ],
)
def test_skipped_operations(skipped, operation, accepted):
    events = EventFilter.from_config(config(**{"skipped.operations": skipped}))
    assert events.accepts(record("inventory", "orders", operation)) is accepted


def test_snapshot_reads_are_never_skipped():
    events = EventFilter.from_config(config(**{"skipped.operations": "c,u,d"}))
    assert events.accepts(record("inventory", "orders", Operation.READ, snapshot=SnapshotMarker.TRUE))


def test_event_filter_applies_namespace_lists():
    events = EventFilter.from_config(config(**{"database.exclude.list": "hr"}))
    assert not events.accepts(record("hr", "people"))
    assert events.accepts(record("inventory", "people"))


# --- watch scope ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({}, WatchTarget(CaptureScope.DEPLOYMENT)),
        ({"database.include.list": "inventory"}, WatchTarget(CaptureScope.DATABASE, "inventory")),
        ({"database.include.list": "inventory,sales"}, WatchTarget(CaptureScope.DEPLOYMENT)),
        ({"database.include.list": "inv.*"}, WatchTarget(CaptureScope.DEPLOYMENT)),
        ({"database.exclude.list": "hr"}, WatchTarget(CaptureScope.DEPLOYMENT)),
        (
            {"collection.include.list": r"inventory\.orders"},
            WatchTarget(CaptureScope.COLLECTION, "inventory", "orders"),
        ),
        (
            {"collection.include.list": "inventory.orders"},
            WatchTarget(CaptureScope.COLLECTION, "inventory", "orders"),
        ),
        (
            {"collection.include.list": r"inventory\.orders,inventory\.customers"},
            WatchTarget(CaptureScope.DATABASE, "inventory"),
        ),
        ({"collection.include.list": r"inventory\.orders,sales\.orders"}, WatchTarget(CaptureScope.DEPLOYMENT)),
        ({"collection.include.list": r"inventory\.ord.*"}, WatchTarget(CaptureScope.DEPLOYMENT)),
        (
            {"collection.include.list": r"inventory\.a\.b"},
            WatchTarget(CaptureScope.COLLECTION, "inventory", "a.b"),
        ),
        # An unescaped dot next to others is ambiguous: a.b.c also matches a.bXc.
        ({"collection.include.list": "inventory.a.b"}, WatchTarget(CaptureScope.DEPLOYMENT)),
        (
            {"database.include.list": "inventory", "collection.include.list": r"inventory\.orders"},
            WatchTarget(CaptureScope.COLLECTION, "inventory", "orders"),
        ),
        (
            {"database.include.list": "inventory", "collection.include.list": "inventory.*"},
            WatchTarget(CaptureScope.DATABASE, "inventory"),
        ),
        (
            {"database.include.list": "inventory", "collection.include.list": r"inventory\.a,sales\.b"},
            WatchTarget(CaptureScope.COLLECTION, "inventory", "a"),
        ),
        (
            {"collection.include.list": r"inventory\.orders", "signal.data.collection": "inventory.signals"},
            WatchTarget(CaptureScope.DATABASE, "inventory"),
        ),
        (
            {"collection.include.list": r"inventory\.orders", "signal.data.collection": "inventory.orders"},
            WatchTarget(CaptureScope.COLLECTION, "inventory", "orders"),
        ),
        (
            {"database.include.list": "inventory", "signal.data.collection": "ops.signals"},
            WatchTarget(CaptureScope.DEPLOYMENT),
        ),
        (
            {"capture.scope": "database", "capture.target": "sales", "database.include.list": "inventory"},
            WatchTarget(CaptureScope.DATABASE, "sales"),
        ),
        (
            {"capture.scope": "collection", "capture.target": "sales.orders"},
            WatchTarget(CaptureScope.COLLECTION, "sales", "orders"),
        ),
    ],
)
def test_watch_target_is_the_narrowest_scope(props, expected):
    assert watch_target(config(**props)) == expected


def test_watch_target_requires_names():
    with pytest.raises(ValueError):
        WatchTarget(CaptureScope.DATABASE)
    with pytest.raises(ValueError):
        WatchTarget(CaptureScope.COLLECTION, "db")


# --- server-side $match -----------------------------------------------------------------------


def test_no_filters_no_match_stage():
    cfg = config()
    assert change_stream_match(cfg, watch_target(cfg)) is None
    assert change_stream_pipeline(cfg) == []


def test_skipped_operations_become_an_operation_type_filter():
    cfg = config(**{"skipped.operations": "u"})
    match = change_stream_match(cfg, watch_target(cfg))
    assert match == {
        "$or": [
            {"operationType": {"$in": list(LIFECYCLE_OPERATION_TYPES)}},
            {"operationType": {"$in": ["insert", "delete"]}},
        ]
    }


def test_database_lists_become_case_insensitive_anchored_regexes():
    cfg = config(**{"database.include.list": "inv.*,sales"})
    match = change_stream_match(cfg, WatchTarget(CaptureScope.DEPLOYMENT))
    assert match["$or"][1] == {"ns.db": Regex("^(?:(?:inv.*)|(?:sales))$", "i")}
    cfg = config(**{"database.exclude.list": "hr"})
    match = change_stream_match(cfg, WatchTarget(CaptureScope.DEPLOYMENT))
    assert match["$or"][1] == {"ns.db": {"$not": Regex("^(?:(?:hr))$", "i")}}


def test_database_scope_needs_no_database_condition():
    cfg = config(**{"database.include.list": "inventory"})
    assert change_stream_match(cfg, watch_target(cfg)) is None


def test_collection_scope_needs_no_namespace_condition():
    cfg = config(**{"collection.include.list": r"inventory\.orders", "skipped.operations": "d"})
    match = change_stream_match(cfg, watch_target(cfg))
    assert match["$or"][1] == {"operationType": {"$in": ["insert", "update", "replace"]}}


def test_pipeline_order_with_user_stages():
    stage = '[{"$match": {"fullDocument.status": "A"}}]'
    user = [{"$match": {"fullDocument.status": "A"}}]
    props = {"database.exclude.list": "hr", "cursor.pipeline": stage}
    internal = change_stream_pipeline(config(**props))[0]
    assert change_stream_pipeline(config(**props)) == [internal, *user]
    assert change_stream_pipeline(config(**props, **{"cursor.pipeline.order": "user_first"})) == [*user, internal]
    assert change_stream_pipeline(config(**props, **{"cursor.pipeline.order": "user_only"})) == user


# The server-side filter, evaluated by mongomock's query engine, must admit every change the
# client-side filter accepts (and every lifecycle event), and reject what it rejects.

NAMESPACES = [
    ("inventory", "customers"),
    ("inventory", "orders"),
    ("inventory", "tmp_1"),
    ("INVENTORY", "Customers"),
    ("inventory", "a.b"),
    ("inventoryXa", "b"),
    ("sales", "orders"),
    ("sales_eu", "customers"),
    ("hr", "people"),
    ("ops", "signals"),
]
OPERATION_TYPES = ["insert", "update", "replace", "delete"]
CONFIGS = [
    {},
    {"database.include.list": "inventory"},
    {"database.include.list": "inventory,sales_.*"},
    {"database.exclude.list": "hr,sales.*"},
    {"collection.include.list": r"inventory\.cust.*,sales\.orders"},
    {"collection.include.list": r"inventory\.orders"},
    {"collection.include.list": "inventory.a.b"},
    {"collection.exclude.list": r"inventory\.tmp_.*,.*\.people"},
    {"database.include.list": "inventory|sales", "collection.exclude.list": r".*\.orders"},
    {"skipped.operations": "c,d"},
    {"database.include.list": "inventory", "skipped.operations": "u", "signal.data.collection": "ops.signals"},
    {"collection.include.list": r"sales\.orders", "signal.data.collection": "ops.signals"},
]

_OPERATIONS = {"insert": Operation.CREATE, "update": Operation.UPDATE, "replace": Operation.UPDATE}


def _events(target: WatchTarget):
    for (db, coll), operation_type in itertools.product(NAMESPACES, OPERATION_TYPES):
        if target.database and db != target.database:
            continue
        if target.collection and coll != target.collection:
            continue
        yield {"operationType": operation_type, "ns": {"db": db, "coll": coll}}
    for lifecycle in ("drop", "rename"):
        yield {"operationType": lifecycle, "ns": {"db": "inventory", "coll": "customers"}}
    yield {"operationType": "dropDatabase", "ns": {"db": "inventory"}}
    yield {"operationType": "invalidate"}


@pytest.mark.parametrize("props", CONFIGS, ids=[str(p) for p in CONFIGS])
def test_server_filter_agrees_with_client_filter(props):
    cfg = config(**props)
    target = watch_target(cfg)
    events = EventFilter.from_config(cfg)
    collection = mongomock.MongoClient().db.events
    documents = list(_events(target))
    for index, document in enumerate(documents):
        collection.insert_one({"_id": index, **document})
    pipeline = change_stream_pipeline(cfg, target)
    admitted = (
        {document["_id"] for document in collection.aggregate(pipeline)} if pipeline else set(range(len(documents)))
    )

    for index, document in enumerate(documents):
        operation_type = document["operationType"]
        if operation_type in LIFECYCLE_OPERATION_TYPES:
            assert index in admitted, document
            continue
        namespace = Namespace(document["ns"]["db"], document["ns"]["coll"])
        change = ChangeRecord(_OPERATIONS.get(operation_type, Operation.DELETE), namespace, {"_id": 1})
        wanted = events.accepts(change) or events.namespaces.is_signal(namespace)
        assert (index in admitted) == wanted, (document, pipeline)

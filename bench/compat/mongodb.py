"""The MongoDB side of bench.compat: a private database, the workload, both connectors' properties, the masks.

The workload reads a few documents in the initial snapshot, then streams inserts of many BSON types, updates
($set, $unset of fields whose names hold non-ASCII and control characters, $push with $slice, which truncates
arrays), replaces, deletes, and multi-collection transactions (provide.transaction.metadata on both sides), in
collections whose names hold non-ASCII and control characters too. Every collection keeps pre- and post-images, so
each capture.mode can be run; full updates are read from post-images (capture.mode.full.update.type=post_image), as
a lookup would read whatever the document is when each connector gets to the event.
"""

from __future__ import annotations

import datetime
import threading
import uuid

import bson
from bson import Binary, Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp

from bench.compat.compare import Intentional, Mask, mask_members, mask_snapshot_source
from connectors.mongodb.client import open_client
from connectors.mongodb.config import ConnectorConfig
from connectors.runner import ConnectorRunner
from devstack import settings
from devstack import stack as devstack

CONNECTOR_ARTIFACT = "debezium-connector-mongodb"
CAPTURE_MODES = ("change_streams_update_full", "change_streams_update_full_with_pre_image", "change_streams",
                 "change_streams_with_pre_image")
END_COLLECTION = "compat_end"
# collection names: plain, non-ASCII, a control character, a line separator, an emoji (two UTF-16 units)
DOCS, NON_ASCII, CONTROL, SEPARATOR, EMOJI = "docs", "ünïcødé", "ctl\x01name", "sep\u2028x", "emo😀"
# a transaction over more collections than 12 grows Debezium's per-collection HashMap (data_collections' order)
MANY = tuple(f"many_{number}" for number in range(13))
COLLECTIONS = (DOCS, NON_ASCII, CONTROL, SEPARATOR, EMOJI, *MANY, END_COLLECTION)
# field names that Jackson and our writer must escape alike
ODD_NAMES = ("ünï", "tab\tname", "ctl\x01\x1f", "quote\"back\\slash", "sep\u2028para\u2029", "emo😀", "del\x7f",
             "</script>", "é\u0301")


def _typed_document(doc_id) -> dict:
    return {
        "_id": doc_id, "int32": 42, "int64": Int64(9007199254740993), "double": 1.5, "neg_zero": -0.0,
        "tiny": 5e-324, "big": 1.7976931348623157e308, "nan": float("nan"), "inf": float("inf"),
        "decimal": Decimal128("1234.5678901234567890"), "string": "héllo \"q\" \\ </tag>\n\u2028😀",
        "bool": True, "null": None, "date": datetime.datetime(2024, 2, 29, 13, 14, 15, 123000),
        "old_date": datetime.datetime(1900, 1, 1), "oid": ObjectId("65f0c0ffee0000000000abcd"),
        "binary": Binary(b"\x00\xff\x10"), "uuid": Binary(uuid.UUID(int=7).bytes, 4),
        "regex": Regex("^a.*b$", "im"), "code": Code("function() { return 1; }"),
        "ts": Timestamp(1700000000, 3), "min": MinKey(), "max": MaxKey(),
        "nested": {"a": [1, {"b": "c"}, []], "e": {}}, "array": [1, "two", 3.0, None, [4]],
        **{name: f"value of {name}" for name in ODD_NAMES},
    }


SNAPSHOT_DOCS = {
    DOCS: [_typed_document(1), {"_id": "string-key", "v": 1}],
    NON_ASCII: [{"_id": ObjectId("65f0c0ffee0000000000aaaa"), "ünï": "snapshot"}],
    CONTROL: [{"_id": {"compound": 1, "key": "x"}, "tags": ["a", "b"]}],
}


class MongodbCompat:
    """One run's database and connectors, in one capture.mode."""

    name = "mongodb"
    connector_artifact = CONNECTOR_ARTIFACT
    masks: tuple[Mask, ...] = ()
    intentional: tuple[Intentional, ...] = ()
    snapshot_events = sum(len(docs) for docs in SNAPSHOT_DOCS.values())

    def __init__(self, capture_mode: str = CAPTURE_MODES[0]) -> None:
        devstack.up(["mongo"], echo=lambda line: None)
        self.capture_mode = capture_mode
        self.name = f"mongodb ({capture_mode})"
        self.db = f"compat_{uuid.uuid4().hex[:10]}"
        self.prefix = self.db  # topic.prefix, the same for both connectors
        self.end_topic_suffix = f"{self.db}.{END_COLLECTION}"
        self.masks = MASKS
        self.intentional = INTENTIONAL
        self._uri = settings.mongodb_uri()
        self._runner: ConnectorRunner | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @classmethod
    def variants(cls, mode: str | None = None) -> list[MongodbCompat]:
        return [cls(each) for each in CAPTURE_MODES if mode in (None, each)]

    def _client(self):
        return open_client({"host": self._uri, "serverSelectionTimeoutMS": 30_000, "uuidRepresentation": "standard"})

    def prepare(self) -> None:
        client = self._client()
        try:
            database = client[self.db]
            for name in COLLECTIONS:
                database.create_collection(name, changeStreamPreAndPostImages={"enabled": True})
            for name, docs in SNAPSHOT_DOCS.items():
                database[name].insert_many(docs)
        finally:
            client.close()

    def _common(self) -> dict[str, object]:
        return {
            "topic.prefix": self.prefix, "mongodb.connection.string": self._uri, "database.include.list": self.db,
            "capture.mode": self.capture_mode, "capture.mode.full.update.type": "post_image",
            "provide.transaction.metadata": "true", "skipped.operations": "none", "snapshot.mode": "initial",
            # ours ends an open transaction when its stream goes idle, Debezium at the next event (docs/events.md):
            # a long wait for more keeps the stream busy between the workload's steps
            "cursor.max.await.time.ms": 5000,
        }

    def debezium_properties(self) -> dict[str, object]:
        return {
            "name": f"{self.prefix}-debezium", "connector.class": "io.debezium.connector.mongodb.MongoDbConnector",
            "tasks.max": 1, **self._common(),
        }

    def start_ours(self, bootstrap: str, schemas_enable: bool) -> None:
        schemas = "true" if schemas_enable else "false"
        config = ConnectorConfig.from_properties({
            "name": self.prefix, **self._common(), "offset.storage.topic": f"compat-offsets-{self.prefix}",
            "key.converter.schemas.enable": schemas, "value.converter.schemas.enable": schemas,
        })
        self._runner = ConnectorRunner(config, bootstrap, self._stop)
        self._thread = threading.Thread(target=self._runner.run, daemon=True, name="compat-ours")
        self._thread.start()

    def check_ours(self) -> None:
        if self._thread is not None and not self._thread.is_alive():
            raise RuntimeError("our connector stopped before the workload's end (its log above says why)")

    def both_started(self) -> bool:
        """Each connector streams from the position it took before its snapshot: once both snapshots are written
        (run.run waits for them), every later change reaches both."""
        return True

    def run_workload(self) -> None:
        client = self._client()
        try:
            _workload(client[self.db], client)
            client[self.db][END_COLLECTION].insert_one({"_id": 1})
        finally:
            client.close()

    def stop_ours(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(120)

    def cleanup(self) -> None:
        client = self._client()
        try:
            client.drop_database(self.db)
        finally:
            client.close()


def _numbered_id(number: int) -> ObjectId:
    return ObjectId(f"65f0c0ffee000000000000{number:02x}")


def _workload(database, client) -> None:
    docs, odd = database[DOCS], database[NON_ASCII]
    docs.insert_one(_typed_document(2))
    docs.insert_many([{"_id": _numbered_id(n), "n": n, "list": list(range(n))}
                      for n in range(3, 6)])
    docs.update_one({"_id": 1}, {"$set": {"string": "updated", "nested.a.1.b": "deep", "new": {"x": 1}},
                                 "$unset": {name: "" for name in ODD_NAMES[:5]}})
    docs.update_one({"_id": 1}, {"$unset": {name: "" for name in ODD_NAMES[5:]}, "$inc": {"int32": 1}})
    docs.update_one({"_id": 2}, {"$push": {"array": {"$each": [5, 6], "$slice": 2}}})  # truncated to 2 elements
    docs.update_one({"_id": 2}, {"$push": {"nested.a": {"$each": ["x"], "$slice": -1}}})
    docs.update_one({"_id": 2}, {"$pop": {"nested.a": 1}, "$set": {"ünï": {"tab\tname": [1, 2, 3]}}})
    docs.update_one({"_id": 2}, {"$push": {"ünï.tab\tname": {"$each": [], "$slice": 1}}})
    docs.update_one({"_id": "string-key"}, {"$set": {"v": Int64(2), "ctl\x01\x1f": None}})
    docs.replace_one({"_id": "string-key"}, {"replaced": True, "sep\u2028para\u2029": [1.25]})
    docs.delete_one({"_id": _numbered_id(4)})
    odd.insert_one({"_id": 10, "ünï": "stream", "emo😀": {"ctl\x01": 1}})
    odd.update_one({"_id": 10}, {"$unset": {"emo😀": ""}, "$set": {"list": [1, 2, 3, 4]}})
    odd.update_one({"_id": 10}, {"$push": {"list": {"$each": [], "$slice": 2}}})
    odd.update_one({"_id": ObjectId("65f0c0ffee0000000000aaaa")}, {"$set": {"ünï": "changed"}})
    database[CONTROL].update_one({"_id": {"compound": 1, "key": "x"}}, {"$push": {"tags": {"$each": ["c"],
                                                                                             "$slice": -2}}})
    database[SEPARATOR].insert_one({"_id": 1, "sep\u2028": "x"})
    database[EMOJI].insert_one({"_id": 1, "emo😀": "y"})
    with client.start_session() as session, session.start_transaction():
        docs.insert_one({"_id": 100, "in": "transaction"}, session=session)
        odd.update_one({"_id": 10}, {"$set": {"tx": 1}, "$unset": {"ünï": ""}}, session=session)
        database[SEPARATOR].insert_one({"_id": 2}, session=session)
        docs.delete_one({"_id": 3}, session=session)
        database[EMOJI].replace_one({"_id": 1}, {"emo😀": "z"}, session=session)
    with client.start_session() as session, session.start_transaction():
        database[CONTROL].insert_one({"_id": 5, "ctl\x01": 1}, session=session)
        database[NON_ASCII].insert_one({"_id": 11}, session=session)
        database[CONTROL].update_one({"_id": 5}, {"$unset": {"ctl\x01": ""}}, session=session)
    with client.start_session() as session, session.start_transaction():
        for name in MANY:
            database[name].insert_one({"_id": name, "ünï": 1}, session=session)
    with client.start_session() as session, session.start_transaction():  # listed in the grown map's order
        database[MANY[0]].update_one({"_id": MANY[0]}, {"$rename": {"ünï": "emo😀"}}, session=session)
        database[MANY[3]].delete_one({"_id": MANY[3]}, session=session)
        docs.update_one({"_id": 1}, {"$set": {"array.1": "two!", "nested.a": [{"x": [1, 2, 3]}]}}, session=session)
    docs.delete_one({"_id": 2})
    docs.insert_one({"_id": 200, "after": "transactions", "raw": bson.encode({"a": 1})})


def _snapshot_masks(payload) -> None:
    mask_snapshot_source(payload, ("ts_ms", "ts_us", "ts_ns", "ord"))


MASKS = (
    Mask("payload.ts_ms, ts_us, ts_ns: when the connector wrote the event", lambda p: mask_members(
        p, ("ts_ms", "ts_us", "ts_ns"))),
    Mask("payload.source.ts_ms, ts_us, ts_ns, ord of snapshot events: each connector takes its own snapshot",
         _snapshot_masks),
)

INTENTIONAL: tuple[Intentional, ...] = ()

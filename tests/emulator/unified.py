"""The project's runner for MongoDB's unified-format spec tests (the parts the change-streams, crud and
transactions suites use), run with pymongo against the emulator.

Format: mongodb/specifications source/unified-test-format/unified-test-format.md. Where the test files come
from: tests/emulator/spec_source.py.
"""

from __future__ import annotations

import re
import threading
import time

import pymongo
from bson import json_util
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.json_util import JSONOptions
from bson.raw_bson import RawBSONDocument
from pymongo import monitoring
from pymongo.errors import BulkWriteError, ConnectionFailure, OperationFailure, PyMongoError
from pymongo.read_concern import ReadConcern
from pymongo.read_preferences import make_read_preference, read_pref_mode_from_name
from pymongo.results import BulkWriteResult, DeleteResult, InsertManyResult, InsertOneResult, UpdateResult
from pymongo.write_concern import WriteConcern

from devstack.mongo.bsonutil import TYPE_ALIASES, bson_type
from tests.emulator.spec_source import suite_dir

SUPPORTED_SCHEMA = (1, 21)
SERVER_VERSION = (7, 0, 14)
TOPOLOGY = "replicaset"
# the emulator's replica set, its standalone mode and its sharded cluster (tests that allow a replica set run there)
TOPOLOGIES = ("replicaset", "single", "sharded")
_JSON = JSONOptions(document_class=dict, tz_aware=False)
SENSITIVE = {"authenticate", "saslstart", "saslcontinue", "getnonce", "createuser", "updateuser",
             "copydbgetnonce", "copydbsaslstart", "copydb"}


def _pinned(session):
    transaction = getattr(session, "_transaction", None)
    return getattr(transaction, "pinned_address", None)


class SkipTest(Exception):
    pass


class Failure(AssertionError):
    pass


def _version(s: str) -> tuple:
    parts = [int(re.match(r"\d+", p).group()) for p in s.split(".")[:3]]
    return tuple(parts + [0] * (3 - len(parts)))


def requirement_reason(reqs, topology: str = TOPOLOGY) -> str | None:
    """None when one requirement is met on `topology`, else why none is."""
    if not reqs:
        return None
    reasons = []
    for r in reqs:
        if "minServerVersion" in r and _version(r["minServerVersion"]) > SERVER_VERSION:
            reasons.append(f"needs server >= {r['minServerVersion']} (emulator reports 7.0)")
            continue
        if "maxServerVersion" in r and _version(r["maxServerVersion"]) < SERVER_VERSION:
            reasons.append(f"needs server <= {r['maxServerVersion']} (emulator reports 7.0)")
            continue
        if "topologies" in r and topology not in r["topologies"]:
            reasons.append(f"needs topology {'/'.join(r['topologies'])} "
                           "(the emulator serves replicaset, single and sharded)")
            continue
        if r.get("serverless") == "require":
            reasons.append("needs Atlas Serverless")
            continue
        if r.get("auth") is True:
            reasons.append("needs authentication")
            continue
        if r.get("csfle"):
            reasons.append("needs client-side field level encryption")
            continue
        if r.get("serverParameters"):
            reasons.append(f"needs server parameters {r['serverParameters']}")
            continue
        return None
    return "; ".join(dict.fromkeys(reasons))


def choose_topology(file_doc: dict, test: dict) -> tuple[str | None, str | None]:
    """(topology to run the test on, None) — a replica set when possible — or (None, why it cannot run)."""
    schema = _version(file_doc.get("schemaVersion", "1.0"))
    if schema[0] != SUPPORTED_SCHEMA[0] or schema[1] > SUPPORTED_SCHEMA[1]:
        return None, f"schemaVersion {file_doc.get('schemaVersion')} not supported by the runner"
    first = None
    for topology in TOPOLOGIES:
        reason = requirement_reason(file_doc.get("runOnRequirements"), topology) or \
            requirement_reason(test.get("runOnRequirements"), topology)
        if reason is None:
            return topology, None
        first = first or reason
    return None, first


def load_area(area: str) -> list:
    """[(file_name, file_doc, test_doc)] for every test of one suite directory."""
    out = []
    for path in sorted(suite_dir(area).glob("*.json")):
        doc = json_util.loads(path.read_text(), json_options=_JSON)
        for test in doc.get("tests", []):
            out.append((path.stem, doc, test))
    return out


# ---- matching ---------------------------------------------------------------------------------------------

def _is_number(v):
    return isinstance(v, (int, float, Int64)) and not isinstance(v, bool)


def _plain(v):
    if isinstance(v, RawBSONDocument):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


_MISSING = object()


class Matcher:
    def __init__(self, runner):
        self.runner = runner

    def match(self, expected, actual, root=True, path="$"):
        if isinstance(expected, dict) and len(expected) == 1 and next(iter(expected)).startswith("$$"):
            return self._special(expected, actual, root, path)
        if isinstance(expected, dict):
            if not isinstance(actual, dict):
                raise Failure(f"{path}: expected a document, got {actual!r}")
            for key, value in expected.items():
                act = actual.get(key, _MISSING)
                if isinstance(value, dict) and len(value) == 1 and next(iter(value)).startswith("$$"):
                    op = next(iter(value))
                    if op == "$$exists":
                        if bool(value[op]) != (act is not _MISSING):
                            raise Failure(f"{path}.{key}: $$exists {value[op]} but actual is {act!r}")
                        continue
                    if op == "$$unsetOrMatches":
                        if act is _MISSING:
                            continue
                        self.match(value[op], act, False, f"{path}.{key}")
                        continue
                if act is _MISSING:
                    raise Failure(f"{path}.{key}: missing (expected {value!r})")
                self.match(value, act, False, f"{path}.{key}")
            if not root:
                extra = set(actual) - set(expected)
                if extra:
                    raise Failure(f"{path}: unexpected fields {sorted(extra)} in {actual!r}")
            return
        if isinstance(expected, list):
            if not isinstance(actual, list):
                raise Failure(f"{path}: expected an array, got {actual!r}")
            if len(actual) != len(expected):
                raise Failure(f"{path}: expected {len(expected)} elements, got {len(actual)}: {actual!r}")
            for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
                self.match(e, a, False, f"{path}[{i}]")
            return
        if _is_number(expected) and _is_number(actual):
            if float(expected) != float(actual):
                raise Failure(f"{path}: expected {expected!r}, got {actual!r}")
            return
        if type(expected) is not type(actual) and not (isinstance(expected, str) and isinstance(actual, str)):
            if not (isinstance(expected, Decimal128) and isinstance(actual, Decimal128)):
                raise Failure(f"{path}: expected {expected!r} ({type(expected).__name__}), got {actual!r} "
                              f"({type(actual).__name__})")
        if expected != actual:
            raise Failure(f"{path}: expected {expected!r}, got {actual!r}")

    def _special(self, expected, actual, root, path):
        op, arg = next(iter(expected.items()))
        if op == "$$unsetOrMatches":
            if actual is _MISSING or actual is None and arg is not None and False:
                return
            return self.match(arg, actual, root, path)
        if op == "$$exists":
            return
        if op == "$$type":
            types = arg if isinstance(arg, list) else [arg]
            if actual is _MISSING:
                raise Failure(f"{path}: missing, expected type {types}")
            actual_type = bson_type(actual)
            wanted = set()
            for t in types:
                wanted.add(TYPE_ALIASES.get(t, -99))
                if t == "number":
                    wanted.update({1, 16, 18, 19})
            if actual_type not in wanted and not (actual_type == 16 and 18 in wanted and isinstance(actual, int)):
                raise Failure(f"{path}: expected type {types}, got {actual!r} ({actual_type})")
            return
        if op == "$$matchesEntity":
            return self.match(self.runner.entities[arg], actual, root, path)
        if op == "$$sessionLsid":
            lsid = self.runner.session_lsids[arg]
            return self.match(lsid, actual, False, path)
        if op == "$$lte":
            if not _is_number(actual) or actual > arg:
                raise Failure(f"{path}: expected <= {arg}, got {actual!r}")
            return
        if op == "$$matchAsDocument":
            return self.match(arg, json_util.loads(actual), False, path)
        if op == "$$matchAsRoot":
            return self.match(arg, actual, True, path)
        if op == "$$matchesHexBytes":
            if bytes.fromhex(arg) != actual:
                raise Failure(f"{path}: bytes differ")
            return
        raise Failure(f"unsupported special operator {op}")


# ---- command monitoring -----------------------------------------------------------------------------

class EventRecorder(monitoring.CommandListener):
    def __init__(self, observe: list, ignore: list):
        self.observe = set(observe or [])
        self.ignore = {c.lower() for c in (ignore or [])} | {"configurefailpoint"}
        self.events: list = []
        self.started_all: list = []
        self.lock = threading.Lock()
        self.enabled = True

    def _skip(self, name: str, command=None) -> bool:
        n = name.lower()
        if n in self.ignore or n in SENSITIVE:
            return True
        if n in ("hello", "ismaster") and command is not None and "speculativeAuthenticate" in command:
            return True
        return False

    def started(self, event):
        if not self.enabled or self._skip(event.command_name, event.command):
            return
        with self.lock:
            self.started_all.append(event)
            if "commandStartedEvent" in self.observe:
                self.events.append(("commandStartedEvent", event))

    def succeeded(self, event):
        if not self.enabled or self._skip(event.command_name):
            return
        if "commandSucceededEvent" in self.observe:
            with self.lock:
                self.events.append(("commandSucceededEvent", event))

    def failed(self, event):
        if not self.enabled or self._skip(event.command_name):
            return
        if "commandFailedEvent" in self.observe:
            with self.lock:
                self.events.append(("commandFailedEvent", event))


# ---- results ------------------------------------------------------------------------------------------

def result_doc(result):
    if isinstance(result, (InsertOneResult, InsertManyResult, UpdateResult, DeleteResult, BulkWriteResult)) and \
            not result.acknowledged:
        return {"acknowledged": False}
    if isinstance(result, InsertOneResult):
        return {"insertedId": result.inserted_id}
    if isinstance(result, InsertManyResult):
        return {"insertedIds": {str(i): v for i, v in enumerate(result.inserted_ids)}}
    if isinstance(result, UpdateResult):
        return {"matchedCount": result.matched_count, "modifiedCount": result.modified_count,
                "upsertedCount": 0 if result.upserted_id is None else 1, "upsertedId": result.upserted_id}
    if isinstance(result, DeleteResult):
        return {"deletedCount": result.deleted_count}
    if isinstance(result, BulkWriteResult):
        upserted = result.upserted_ids or {}
        return {"deletedCount": result.deleted_count, "insertedCount": result.inserted_count,
                "matchedCount": result.matched_count, "modifiedCount": result.modified_count,
                "upsertedCount": result.upserted_count, "upsertedIds": {str(k): v for k, v in upserted.items()}}
    return result


def _bulk_error_result(details: dict) -> dict:
    upserted = {str(u["index"]): u["_id"] for u in details.get("upserted", [])}
    return {"deletedCount": details.get("nRemoved", 0), "insertedCount": details.get("nInserted", 0),
            "matchedCount": details.get("nMatched", 0), "modifiedCount": details.get("nModified", 0),
            "upsertedCount": details.get("nUpserted", 0), "upsertedIds": upserted}


def _write_concern(d):
    if d is None:
        return None
    kw = {}
    if "w" in d:
        kw["w"] = d["w"]
    if "journal" in d:
        kw["j"] = d["journal"]
    if "wtimeoutMS" in d:
        kw["wtimeout"] = d["wtimeoutMS"]
    return WriteConcern(**kw)


def _read_pref(d):
    if d is None:
        return None
    mode = read_pref_mode_from_name(d["mode"])
    return make_read_preference(mode, d.get("tagSets"), d.get("maxStalenessSeconds", -1))


def _read_concern(d):
    return ReadConcern(d.get("level")) if d is not None else None


def _coll_options(opts):
    kw = {}
    if not opts:
        return kw
    if "readConcern" in opts:
        kw["read_concern"] = _read_concern(opts["readConcern"])
    if "writeConcern" in opts:
        kw["write_concern"] = _write_concern(opts["writeConcern"])
    if "readPreference" in opts:
        kw["read_preference"] = _read_pref(opts["readPreference"])
    return kw


_REQUEST_KEYS = {"filter": "filter", "update": "update", "replacement": "replacement", "upsert": "upsert",
                 "arrayFilters": "array_filters", "hint": "hint", "collation": "collation", "sort": "sort",
                 "document": "document"}


def _bulk_requests(requests):
    out = []
    for req in requests:
        kind, args = next(iter(req.items()))
        kw = {_REQUEST_KEYS.get(k, k): v for k, v in args.items()}
        cls = {"insertOne": pymongo.InsertOne, "updateOne": pymongo.UpdateOne, "updateMany": pymongo.UpdateMany,
               "replaceOne": pymongo.ReplaceOne, "deleteOne": pymongo.DeleteOne,
               "deleteMany": pymongo.DeleteMany}[kind]
        out.append(cls(**kw))
    return out


_ARG_NAMES = {
    "filter": "filter", "document": "document", "documents": "documents", "update": "update",
    "replacement": "replacement", "upsert": "upsert", "arrayFilters": "array_filters", "hint": "hint",
    "collation": "collation", "sort": "sort", "projection": "projection", "skip": "skip", "limit": "limit",
    "batchSize": "batch_size", "comment": "comment", "let": "let", "ordered": "ordered",
    "bypassDocumentValidation": "bypass_document_validation", "allowDiskUse": "allowDiskUse",
    "maxTimeMS": "maxTimeMS", "session": "session",
}


class UnifiedRunner:
    def __init__(self, uri: str, internal: pymongo.MongoClient, rs_handle=None, topology: str = TOPOLOGY):
        self.topology = topology
        self.uri = uri
        self.internal = internal
        self.rs = rs_handle
        self.matcher = Matcher(self)

    # ---- the test ----
    def run(self, file_doc: dict, test: dict):
        topology, reason = choose_topology(file_doc, test)
        if reason:
            raise SkipTest(reason)
        if topology != self.topology:
            raise SkipTest(f"runs on the {topology} runner")
        if "skipReason" in test:
            raise SkipTest("spec: " + test["skipReason"])
        self.entities: dict = {}
        self.recorders: dict = {}
        self.clients: list = []
        self.session_lsids: dict = {}
        self.started_txn = False
        self.unacknowledged = "'w': 0" in repr(file_doc.get("createEntities")) or "'w': 0" in repr(test)
        try:
            if "initialData" not in file_doc:
                self._clean_namespaces(file_doc.get("createEntities") or [])
            self._initial_data(file_doc.get("initialData") or [])
            self._create_entities(file_doc.get("createEntities") or [])
            for op in test["operations"]:
                self._operation(op)
            for rec in self.recorders.values():
                rec.enabled = False
            self._disable_fail_points()
            if "expectEvents" in test:
                self._check_events(test["expectEvents"])
            if "outcome" in test:
                if self.unacknowledged:
                    time.sleep(0.1)   # w:0 writes are not awaited by the driver
                self._check_outcome(test["outcome"])
        finally:
            self._cleanup()

    def _cleanup(self):
        self._disable_fail_points()
        for ent in list(self.entities.values()):
            close = getattr(ent, "close", None)
            if isinstance(ent, pymongo.client_session.ClientSession):
                try:
                    ent.end_session()
                except PyMongoError:
                    pass
            elif close is not None and not isinstance(ent, pymongo.MongoClient) and callable(close):
                try:
                    close()
                except (PyMongoError, TypeError):
                    pass
        for c in self.clients:
            c.close()
        if self.started_txn:
            try:
                self.internal.admin.command("killAllSessions", [])
            except PyMongoError:
                pass

    def _disable_fail_points(self):
        if self.rs is not None:
            for i in range(len(self.rs.hosts)):
                for name in ("failCommand", "failGetMoreAfterCursorCheckout"):
                    self.rs.configure_fail_point("off", {}, index=i, name=name)

    def _clean_namespaces(self, entities):
        """Files without initialData still expect their collections not to hold other tests' documents."""
        dbs = {}
        for ent in entities:
            kind, spec = next(iter(ent.items()))
            if kind == "database":
                dbs[spec["id"]] = spec["databaseName"]
        for ent in entities:
            kind, spec = next(iter(ent.items()))
            if kind == "collection" and spec["database"] in dbs:
                self.internal[dbs[spec["database"]]].drop_collection(spec["collectionName"])

    def _initial_data(self, data):
        for coll in data:
            db = self.internal.get_database(coll["databaseName"], write_concern=WriteConcern(w="majority"))
            db.drop_collection(coll["collectionName"])
            if "createOptions" in coll:
                db.command({"create": coll["collectionName"], **coll["createOptions"]})
            if coll["documents"]:
                db[coll["collectionName"]].insert_many(coll["documents"])
            elif "createOptions" not in coll:
                db.create_collection(coll["collectionName"])

    # ---- entities ----
    def _create_entities(self, entities):
        for ent in entities:
            kind, spec = next(iter(ent.items()))
            eid = spec["id"]
            if eid in self.entities:
                raise Failure(f"duplicate entity {eid}")
            if kind == "client":
                self.entities[eid] = self._client(spec)
            elif kind == "database":
                client = self.entities[spec["client"]]
                self.entities[eid] = client.get_database(spec["databaseName"],
                                                         **_coll_options(spec.get("databaseOptions")))
            elif kind == "collection":
                db = self.entities[spec["database"]]
                self.entities[eid] = db.get_collection(spec["collectionName"],
                                                       **_coll_options(spec.get("collectionOptions")))
            elif kind == "session":
                client = self.entities[spec["client"]]
                opts = dict(spec.get("sessionOptions") or {})
                kw = {}
                if "causalConsistency" in opts:
                    kw["causal_consistency"] = opts["causalConsistency"]
                if "snapshot" in opts:
                    kw["snapshot"] = opts["snapshot"]
                if "defaultTransactionOptions" in opts:
                    t = opts["defaultTransactionOptions"]
                    kw["default_transaction_options"] = pymongo.client_session.TransactionOptions(
                        read_concern=_read_concern(t.get("readConcern")),
                        write_concern=_write_concern(t.get("writeConcern")),
                        read_preference=_read_pref(t.get("readPreference")),
                        max_commit_time_ms=t.get("maxCommitTimeMS"))
                session = client.start_session(**kw)
                self.entities[eid] = session
                self.session_lsids[eid] = session.session_id
            else:
                raise SkipTest(f"entity type {kind} not supported by the runner")

    def _client(self, spec):
        opts = dict(spec.get("uriOptions") or {})
        kw = {}
        for k, v in opts.items():
            kw[k] = v
        if "heartbeatFrequencyMS" not in kw:
            kw["heartbeatFrequencyMS"] = 500
        rec = EventRecorder(spec.get("observeEvents"), spec.get("ignoreCommandMonitoringEvents"))
        if spec.get("storeEventsAsEntities"):
            raise SkipTest("storeEventsAsEntities is not supported by the runner")
        client = pymongo.MongoClient(self.uri, event_listeners=[rec], serverSelectionTimeoutMS=10000, **kw)
        self.recorders[spec["id"]] = rec
        self.clients.append(client)
        return client

    # ---- operations ----
    def _operation(self, op):
        name = op["name"]
        obj = op["object"]
        args = dict(op.get("arguments") or {})
        if obj == "testRunner":
            return self._special(name, args)
        target = self.entities[obj]
        if "session" in args:
            args["session"] = self.entities[args["session"]]
        error = None
        result = None
        try:
            result = self._execute(target, name, args, op)
        except (PyMongoError, ValueError, TypeError) as exc:
            error = exc
        if op.get("ignoreResultAndError"):
            return
        if "expectError" in op:
            if error is None:
                raise Failure(f"{name}: expected an error {op['expectError']}, got result {result!r}")
            self._check_error(op["expectError"], error)
            return
        if error is not None:
            raise Failure(f"{name}: unexpected error {type(error).__name__}: {error}")
        if "expectResult" in op:
            root = name in ("find", "aggregate", "findOneAndDelete", "findOneAndReplace", "findOneAndUpdate",
                            "iterateUntilDocumentOrError", "iterateOnce", "listCollections", "listDatabases",
                            "listIndexes", "runCursorCommand", "findOne", "runCommand")
            expected = op["expectResult"]
            actual = _plain(result_doc(result))
            if isinstance(expected, list) and isinstance(actual, list) and root:
                if len(expected) != len(actual):
                    raise Failure(f"{name}: expected {len(expected)} documents, got {len(actual)}: {actual!r}")
                for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
                    self.matcher.match(e, a, True, f"{name}[{i}]")
            else:
                self.matcher.match(expected, actual, True if root or isinstance(actual, dict) else False,
                                   name)
        if "saveResultAsEntity" in op:
            self.entities[op["saveResultAsEntity"]] = result

    def _check_error(self, exp, error):
        details = getattr(error, "details", None) or {}
        if not isinstance(error, PyMongoError):
            if exp.get("isClientError") is False or "errorCode" in exp or "errorCodeName" in exp:
                raise Failure(f"expected a server error, got client-side {type(error).__name__}: {error}")
        is_server = isinstance(error, (OperationFailure, BulkWriteError)) or (
            isinstance(error, ConnectionFailure) and bool(details))
        if exp.get("isClientError") is True and is_server:
            raise Failure(f"expected a client error, got server error {error!r}")
        if exp.get("isClientError") is False and not is_server:
            raise Failure(f"expected a server error, got client error {error!r}")
        if "isTimeoutError" in exp and bool(getattr(error, "timeout", False)) != exp["isTimeoutError"]:
            raise Failure(f"timeout error expectation {exp['isTimeoutError']} not met by {error!r}")
        messages = [str(error)]
        codes, names = [], []
        if isinstance(error, BulkWriteError):
            for we in details.get("writeErrors", []):
                messages.append(we.get("errmsg", ""))
                codes.append(we.get("code"))
                names.append(we.get("codeName"))
            for wce in details.get("writeConcernErrors", []):
                messages.append(wce.get("errmsg", ""))
                codes.append(wce.get("code"))
                names.append(wce.get("codeName"))
        else:
            codes.append(details.get("code", getattr(error, "code", None)))
            names.append(details.get("codeName"))
            if "writeConcernError" in details:
                codes.append(details["writeConcernError"].get("code"))
                names.append(details["writeConcernError"].get("codeName"))
        if "errorContains" in exp and not any(exp["errorContains"].lower() in m.lower() for m in messages):
            raise Failure(f"error {messages} does not contain {exp['errorContains']!r}")
        if "errorCode" in exp and exp["errorCode"] not in codes:
            raise Failure(f"expected error code {exp['errorCode']}, got {codes} ({error})")
        if "errorCodeName" in exp and exp["errorCodeName"].lower() not in [str(n).lower() for n in names if n]:
            raise Failure(f"expected error code name {exp['errorCodeName']}, got {names} ({error})")
        has_label = getattr(error, "has_error_label", lambda _label: False)
        for label in exp.get("errorLabelsContain", []):
            if not has_label(label):
                raise Failure(f"error {error!r} lacks label {label} (labels {details.get('errorLabels')})")
        for label in exp.get("errorLabelsOmit", []):
            if has_label(label):
                raise Failure(f"error {error!r} has label {label}")
        if "errorResponse" in exp:
            self.matcher.match(exp["errorResponse"], _plain(details), True, "errorResponse")
        if "expectResult" in exp:
            if isinstance(error, BulkWriteError):
                self.matcher.match(exp["expectResult"], _bulk_error_result(details), True, "errorResult")

    # ---- entity operations ----
    def _execute(self, target, name, args, op):
        if isinstance(target, pymongo.collection.Collection):
            return self._collection_op(target, name, args)
        if isinstance(target, pymongo.database.Database):
            return self._database_op(target, name, args)
        if isinstance(target, pymongo.MongoClient):
            return self._client_op(target, name, args)
        if isinstance(target, pymongo.client_session.ClientSession):
            return self._session_op(target, name, args)
        if hasattr(target, "try_next") or hasattr(target, "next"):
            return self._cursor_op(target, name, args)
        raise Failure(f"operation {name} on unsupported entity {target!r}")

    def _kw(self, args, allowed=None):
        kw = {}
        for k, v in args.items():
            if k == "rawData":
                continue    # pymongo has no rawData option: like a driver talking to a server < 8.2, it sends none
            kw[_ARG_NAMES.get(k, k)] = v
        return kw

    def _collection_op(self, coll, name, args):
        if "writeConcern" in args or "readConcern" in args or "readPreference" in args:
            coll = coll.with_options(**_coll_options(args))
            for k in ("writeConcern", "readConcern", "readPreference"):
                args.pop(k, None)
        kw = self._kw(args)
        if name == "insertOne":
            return coll.insert_one(kw.pop("document"), **kw)
        if name == "insertMany":
            return coll.insert_many(kw.pop("documents"), **kw)
        if name in ("updateOne", "updateMany", "replaceOne"):
            flt = kw.pop("filter")
            if name == "replaceOne":
                return coll.replace_one(flt, kw.pop("replacement"), **kw)
            fn = coll.update_one if name == "updateOne" else coll.update_many
            return fn(flt, kw.pop("update"), **kw)
        if name in ("deleteOne", "deleteMany"):
            fn = coll.delete_one if name == "deleteOne" else coll.delete_many
            return fn(kw.pop("filter"), **kw)
        if name in ("find", "findOne"):
            flt = kw.pop("filter", {})
            if "maxTimeMS" in kw:
                kw["max_time_ms"] = kw.pop("maxTimeMS")
            if "allowDiskUse" in kw:
                kw["allow_disk_use"] = kw.pop("allowDiskUse")
            if name == "findOne":
                return coll.find_one(flt, **kw)
            return list(coll.find(flt, **kw))
        if name == "createFindCursor":
            flt = kw.pop("filter", {})
            cursor = coll.find(flt, **kw)
            return _FindCursor(cursor)
        if name == "aggregate":
            pipeline = kw.pop("pipeline")
            if "batch_size" in kw:
                kw["batchSize"] = kw.pop("batch_size")
            return list(coll.aggregate(pipeline, **kw))
        if name == "countDocuments":
            return coll.count_documents(kw.pop("filter"), **kw)
        if name == "estimatedDocumentCount":
            return coll.estimated_document_count(**kw)
        if name == "count":
            cmd = {"count": coll.name, "query": kw.pop("filter", {})}
            for k in ("skip", "limit", "collation"):
                if k in kw:
                    cmd[k] = kw.pop(k)
            return coll.database.command(cmd, session=kw.get("session"))["n"]
        if name == "distinct":
            return coll.distinct(kw.pop("fieldName"), kw.pop("filter", None), **kw)
        if name in ("findOneAndUpdate", "findOneAndReplace", "findOneAndDelete"):
            flt = kw.pop("filter")
            rd = kw.pop("returnDocument", None)
            if rd is not None:
                if rd.lower() not in ("before", "after"):
                    raise Failure(f"bad returnDocument {rd}")
                kw["return_document"] = pymongo.ReturnDocument.AFTER if rd.lower() == "after" else \
                    pymongo.ReturnDocument.BEFORE
            if name == "findOneAndUpdate":
                return coll.find_one_and_update(flt, kw.pop("update"), **kw)
            if name == "findOneAndReplace":
                return coll.find_one_and_replace(flt, kw.pop("replacement"), **kw)
            return coll.find_one_and_delete(flt, **kw)
        if name == "bulkWrite":
            return coll.bulk_write(_bulk_requests(kw.pop("requests")), **kw)
        if name == "createChangeStream":
            return self._watch(coll, kw)
        if name == "createIndex":
            keys = list(kw.pop("keys").items())
            return coll.create_index(keys, **kw)
        if name == "dropIndex":
            return coll.drop_index(kw.pop("name"), **kw)
        if name == "listIndexes":
            return list(coll.list_indexes(**kw))
        if name == "rename":
            return coll.rename(kw.pop("to"), **{("dropTarget" if k == "dropTarget" else k): v
                                                for k, v in kw.items()})
        if name == "drop":
            return coll.drop(**kw)
        raise SkipTest(f"collection operation {name} is not implemented by the runner")

    def _watch(self, target, kw):
        pipeline = kw.pop("pipeline", None)
        mapping = {"fullDocument": "full_document", "fullDocumentBeforeChange": "full_document_before_change",
                   "resumeAfter": "resume_after", "startAfter": "start_after",
                   "startAtOperationTime": "start_at_operation_time", "showExpandedEvents": "show_expanded_events",
                   "maxAwaitTimeMS": "max_await_time_ms", "batch_size": "batch_size", "comment": "comment",
                   "collation": "collation", "session": "session"}
        wkw = {}
        for k, v in kw.items():
            if k not in mapping:
                raise SkipTest(f"createChangeStream option {k} not supported by the runner")
            wkw[mapping[k]] = v
        return target.watch(pipeline, **wkw)

    def _database_op(self, db, name, args):
        kw = self._kw(args)
        if name == "runCommand":
            cmd = kw.pop("command")
            kw.pop("commandName", None)
            rp = kw.pop("readPreference", None)
            if rp:
                kw["read_preference"] = _read_pref(rp)
            return db.command(cmd, **kw)
        if name == "aggregate":
            pipeline = kw.pop("pipeline")
            if "batch_size" in kw:
                kw["batchSize"] = kw.pop("batch_size")
            return list(db.aggregate(pipeline, **kw))
        if name == "createChangeStream":
            return self._watch(db, kw)
        if name == "createCollection":
            coll = kw.pop("collection")
            extra = {}
            for k in ("viewOn", "pipeline"):
                if k in kw:
                    extra[k] = kw.pop(k)
            return db.create_collection(coll, check_exists=False, **extra, **kw)
        if name == "dropCollection":
            return db.drop_collection(kw.pop("collection"), **kw)
        if name == "listCollections":
            return list(db.list_collections(**kw))
        if name == "listCollectionNames":
            return db.list_collection_names(**kw)
        if name == "modifyCollection":
            cmd = {"collMod": kw.pop("collection")}
            cmd.update(kw)
            return db.command(cmd)
        raise SkipTest(f"database operation {name} is not implemented by the runner")

    def _client_op(self, client, name, args):
        kw = self._kw(args)
        if name == "createChangeStream":
            return self._watch(client, kw)
        if name == "listDatabases":
            return list(client.list_databases(**kw))
        if name == "listDatabaseNames":
            return client.list_database_names(**kw)
        if name == "clientBulkWrite":
            models = []
            for model in kw.pop("models"):
                kind, margs = next(iter(model.items()))
                mkw = {_REQUEST_KEYS.get(k, k): v for k, v in margs.items()}
                cls = {"insertOne": pymongo.InsertOne, "updateOne": pymongo.UpdateOne,
                       "updateMany": pymongo.UpdateMany, "replaceOne": pymongo.ReplaceOne,
                       "deleteOne": pymongo.DeleteOne, "deleteMany": pymongo.DeleteMany}[kind]
                models.append(cls(**mkw))
            if "verboseResults" in kw:
                kw["verbose_results"] = kw.pop("verboseResults")
            return client.bulk_write(models, **kw)
        raise SkipTest(f"client operation {name} is not implemented by the runner")

    def _session_op(self, session, name, args):
        if name == "startTransaction":
            self.started_txn = True
            session.start_transaction(read_concern=_read_concern(args.get("readConcern")),
                                      write_concern=_write_concern(args.get("writeConcern")),
                                      read_preference=_read_pref(args.get("readPreference")),
                                      max_commit_time_ms=args.get("maxCommitTimeMS"))
            return None
        if name == "commitTransaction":
            return session.commit_transaction()
        if name == "abortTransaction":
            return session.abort_transaction()
        if name == "endSession":
            return session.end_session()
        if name == "withTransaction":
            self.started_txn = True
            callback_ops = args.get("callback", [])

            def callback(_s):
                for cop in callback_ops:
                    self._operation(cop)
            return session.with_transaction(
                callback, read_concern=_read_concern(args.get("readConcern")),
                write_concern=_write_concern(args.get("writeConcern")),
                read_preference=_read_pref(args.get("readPreference")),
                max_commit_time_ms=args.get("maxCommitTimeMS"))
        raise SkipTest(f"session operation {name} is not implemented by the runner")

    def _cursor_op(self, cursor, name, args):
        if name == "iterateUntilDocumentOrError":
            if isinstance(cursor, _FindCursor):
                return cursor.next()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                doc = cursor.try_next()
                if doc is not None:
                    return doc
            raise Failure("change stream returned no document within 10 s")
        if name == "iterateOnce":
            return cursor.try_next()
        if name == "close":
            try:
                cursor.close()
            except PyMongoError:
                pass
            return None
        raise SkipTest(f"cursor operation {name} is not implemented by the runner")

    # ---- special operations ----
    def _special(self, name, args):
        if name == "failPoint":
            client = self.entities[args["client"]]
            client.admin.command(args["failPoint"])
            return
        if name == "targetedFailPoint":
            session = self.entities[args["session"]]
            address = getattr(session, "_pinned_address", None)
            if address is None:
                raise Failure("targetedFailPoint: session is not pinned")
            direct = pymongo.MongoClient(f"mongodb://{address[0]}:{address[1]}/?directConnection=true")
            try:
                direct.admin.command(args["failPoint"])
            finally:
                direct.close()
            return
        if name == "assertSessionTransactionState":
            session = self.entities[args["session"]]
            state = session._transaction.state
            names = {1: "none", 2: "starting", 3: "in_progress", 4: "committed", 5: "committed", 6: "aborted"}
            actual = names.get(int(state), str(state))
            if actual != args["state"]:
                raise Failure(f"session transaction state {actual}, expected {args['state']}")
            return
        if name == "assertSessionPinned":
            # the transaction's pin, which outlives a commit (so that a retried commit goes to the same mongos)
            if _pinned(self.entities[args["session"]]) is None:
                raise Failure("session is not pinned")
            return
        if name == "assertSessionUnpinned":
            if _pinned(self.entities[args["session"]]) is not None:
                raise Failure("session is pinned")
            return
        if name in ("assertCollectionExists", "assertCollectionNotExists"):
            names = self.internal[args["databaseName"]].list_collection_names()
            exists = args["collectionName"] in names
            if exists != (name == "assertCollectionExists"):
                raise Failure(f"{name}: {args['databaseName']}.{args['collectionName']} in {names}")
            return
        if name in ("assertIndexExists", "assertIndexNotExists"):
            coll = self.internal[args["databaseName"]][args["collectionName"]]
            names = [i["name"] for i in coll.list_indexes()]
            if (args["indexName"] in names) != (name == "assertIndexExists"):
                raise Failure(f"{name}: {args['indexName']} in {names}")
            return
        if name == "createEntities":
            self._create_entities(args["entities"])
            return
        if name in ("assertSameLsidOnLastTwoCommands", "assertDifferentLsidOnLastTwoCommands"):
            rec = self.recorders[args["client"]]
            a, b = rec.started_all[-2:]
            same = a.command.get("lsid") == b.command.get("lsid")
            if same != (name == "assertSameLsidOnLastTwoCommands"):
                raise Failure(name)
            return
        if name == "wait":
            time.sleep(args["ms"] / 1000.0)
            return
        raise SkipTest(f"special operation {name} is not implemented by the runner")

    # ---- assertions after the operations ----
    def _check_events(self, expectations):
        for exp in expectations:
            if exp.get("eventType", "command") != "command":
                raise SkipTest(f"{exp['eventType']} events are not checked by the runner")
            rec = self.recorders[exp["client"]]
            actual = list(rec.events)
            expected = exp["events"]
            if exp.get("ignoreExtraEvents"):
                actual = actual[: len(expected)]
            if len(actual) != len(expected):
                raise Failure(f"expected {len(expected)} events for {exp['client']}, got {len(actual)}: "
                              f"{[(k, e.command_name) for k, e in actual]}")
            for i, (e, (kind, ev)) in enumerate(zip(expected, actual, strict=True)):
                ekind, spec = next(iter(e.items()))
                if ekind != kind:
                    raise Failure(f"event {i}: expected {ekind}, got {kind} ({ev.command_name})")
                if "commandName" in spec and spec["commandName"] != ev.command_name:
                    raise Failure(f"event {i}: expected command {spec['commandName']}, got {ev.command_name}")
                if "databaseName" in spec and spec["databaseName"] != getattr(ev, "database_name", None):
                    raise Failure(f"event {i}: expected database {spec['databaseName']}, got {ev.database_name}")
                if "command" in spec:
                    self.matcher.match(spec["command"], _plain(ev.command), True, f"event {i} command")
                if "reply" in spec:
                    self.matcher.match(spec["reply"], _plain(ev.reply), True, f"event {i} reply")
                if "hasServiceId" in spec and bool(ev.service_id) != spec["hasServiceId"]:
                    raise Failure(f"event {i}: hasServiceId")
                if "hasServerConnectionId" in spec and (ev.server_connection_id is not None) != \
                        spec["hasServerConnectionId"]:
                    raise Failure(f"event {i}: hasServerConnectionId")

    def _check_outcome(self, outcome):
        for coll in outcome:
            c = self.internal[coll["databaseName"]].get_collection(
                coll["collectionName"], read_preference=pymongo.ReadPreference.PRIMARY,
                read_concern=ReadConcern("local"))
            docs = list(c.find({}, sort=[("_id", 1)]))
            expected = coll["documents"]
            if len(docs) != len(expected):
                raise Failure(f"outcome {coll['collectionName']}: expected {expected!r}, got {docs!r}")
            for i, (e, a) in enumerate(zip(expected, docs, strict=True)):
                self.matcher.match(e, a, False, f"outcome[{i}]")


class _FindCursor:
    def __init__(self, cursor):
        self.cursor = cursor

    def next(self):
        return next(self.cursor)

    def try_next(self):
        try:
            return next(self.cursor)
        except StopIteration:
            return None

    def close(self):
        self.cursor.close()

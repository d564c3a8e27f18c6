"""The change stream reads its full documents as raw BSON (rawjson) and writes them without decoding: every field the
pipeline reads comes out as a decoding stream gives it, and every event format, with and without field rules, gives
the same Kafka messages as the decoded documents, whether the raw event is written by the compiled module or not.
Snapshot chunks read raw give the messages of decoded ones."""

from __future__ import annotations

import threading

import bson
import pytest
from bson import Decimal128, Int64, MaxKey, MinKey
from bson.raw_bson import RawBSONDocument

from connectors.config.types import CaptureScope
from connectors.core.metrics import StreamingMetrics
from connectors.core.stream import Backoff
from connectors.mongodb import rawjson
from connectors.mongodb.client import open_client
from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.filters import WatchTarget, watch_target
from connectors.mongodb.position import MongoPosition
from connectors.mongodb.records import ChangeRecord
from connectors.mongodb.snapshots.chunks import Chunk
from connectors.mongodb.snapshots.executors import read_range
from connectors.mongodb.source import MongoEventBuilder, MongoSource
from connectors.mongodb.stream import ChangeStreamReader, StartPosition, StreamOptions, next_cluster_time
from connectors.mongodb.transformer import Transformer
from tests.reader_queue import ReaderQueue
from tests.unit.document_writers import require_compiled
from tests.unit.test_extjson import VALUES

pytestmark = pytest.mark.integration

BASE = {"topic.prefix": "raw", "mongodb.connection.string": "mongodb://h1"}
CONFIGS = {
    "debezium": {},
    "strict-json": {"json.non.finite.doubles": "extended"},
    "legacy": {"event.format": "legacy"},
    "flattened": {"event.format": "flattened"},
    "field-rules": {"field.exclude.list": "*.docs.string", "field.renames": "*.docs.int32:renamed"},
}


def _changes(uri: str, database: str, read_preference: str) -> tuple[list[rawjson.RawChangeEvent], list[dict]]:
    """The same changes read by the pipeline's reader (raw events) and by a plain decoding watch()."""
    client = open_client({"host": uri, "serverSelectionTimeoutMS": 10_000, "readPreference": read_preference})
    coll = client[database].docs
    start = client[database].command("ping")["operationTime"]
    documents = [{"_id": Int64(i), **VALUES, "i": i} for i in range(3)]
    documents.append({"_id": "rare", "d": Decimal128("1.5"), "nested": {"deep": [{"x": VALUES["dbref"]}]}})
    coll.insert_many(documents)
    coll.update_one({"_id": Int64(0)}, {"$set": {"double": 2.5, "array.1": Int64(9)}, "$unset": {"null": 1}})
    coll.replace_one({"_id": Int64(1)}, {"replaced": True, "when": VALUES["date"]})
    coll.delete_one({"_id": Int64(2)})
    total = len(documents) + 3
    options = StreamOptions(full_document="updateLookup")
    out = ReaderQueue()
    stop = threading.Event()
    reader = ChangeStreamReader(
        client, WatchTarget(CaptureScope.COLLECTION, database, "docs"), [], options,
        StartPosition(start_at_operation_time=next_cluster_time(start)), out, StreamingMetrics(database, "rs0"),
        Backoff(initial_ms=1000, max_attempts=3), stop,
    )
    # From the primary the reader reads a batch at a time (change_batches); otherwise with pymongo's ChangeStream.
    assert reader.reads_by_batch is (read_preference == "primary")
    raw: list[rawjson.RawChangeEvent] = []
    try:
        reader.start()
        while len(raw) < total:
            item = out.get(timeout=30)
            if isinstance(item, rawjson.RawChangeEvent):
                raw.append(item)
    finally:
        stop.set()
        reader.join(10)
    decoded = []
    with coll.watch(full_document="updateLookup", start_at_operation_time=next_cluster_time(start)) as stream:
        while len(decoded) < total:
            change = stream.try_next()
            if change is not None:
                decoded.append(change)
    client.close()
    return raw, decoded


@pytest.mark.parametrize("read_preference", ["primary", "primaryPreferred"])
def test_raw_documents_give_the_fields_and_messages_of_decoded_ones(stack, mongo_rs, unique_name, read_preference):
    require_compiled()
    raw_events, decoded = _changes(mongo_rs.uri, "r" + unique_name.replace("-", "")[-12:], read_preference)
    raw = [event.event for event in raw_events]
    assert [type(change) for change in raw] == [dict] * len(decoded)
    assert any(type(change.get("fullDocument")) is RawBSONDocument for change in raw)
    for mine, theirs in zip(raw, decoded, strict=True):
        assert {k: v for k, v in mine.items() if k not in rawjson.RAW_DOCUMENT_FIELDS} == {
            k: v for k, v in theirs.items() if k not in rawjson.RAW_DOCUMENT_FIELDS
        }
        for name in rawjson.RAW_DOCUMENT_FIELDS:  # compared as BSON: NaN is not equal to itself
            document = rawjson.decoded(mine.get(name))
            assert (bson.encode(document) if document is not None else None) == (
                bson.encode(theirs[name]) if theirs.get(name) is not None else None
            )
    for name, properties in CONFIGS.items():
        config = ConnectorConfig.from_properties({**BASE, "name": name, **properties})
        for mine, theirs in zip(raw, decoded, strict=True):
            messages = [
                Transformer(config, "rs0", clock=lambda: 1700000000.5).transform(ChangeRecord.from_change_event(event))
                for event in (mine, theirs)
            ]
            assert messages[0] == messages[1], f"{name}: {theirs.get('operationType')} {theirs['documentKey']}"
        # The raw events themselves, as the pipeline builds them (written in C where raw_events serves the config).
        for event, theirs in zip(raw_events, decoded, strict=True):
            built = [MongoEventBuilder(config, "rs0", clock=lambda: 1700000000.5).build(change)
                     for change in (event, theirs)]
            assert built[0] == built[1], f"{name}: {theirs.get('operationType')} {theirs['documentKey']}"


def test_snapshot_chunks_read_raw_give_the_messages_of_decoded_ones(stack, mongo_rs, unique_name):
    require_compiled()
    database = "s" + unique_name.replace("-", "")[-12:]
    raw_client = open_client({"host": mongo_rs.uri, "serverSelectionTimeoutMS": 10_000})
    # A client with UUID settings of its own decodes (rawjson.raw_snapshot_options); standard writes the same text.
    decoding_client = open_client({"host": mongo_rs.uri, "uuidRepresentation": "standard"})
    assert rawjson.raw_snapshot_options(raw_client.codec_options) is not None
    assert rawjson.raw_snapshot_options(decoding_client.codec_options) is None
    raw_client[database].docs.insert_many(
        [{"_id": Int64(i), **VALUES, "i": i} for i in range(3)]
        + [{"n": 1, "_id": "not first"}, {"_id": {"compound": [1, 2.5]}, "d": Decimal128("1.5")}]
    )
    chunk = Chunk(f"{database}.docs", 0, 0, MinKey(), MaxKey(), True)
    try:
        for name, properties in CONFIGS.items():
            config = ConnectorConfig.from_properties({**BASE, "name": name, **properties})
            results = [
                read_range(client, Transformer(config, "rs0", clock=lambda: 1700000000.5), chunk, None, None, True)
                for client in (raw_client, decoding_client)
            ]
            assert results[0][1] == 5
            assert results[0] == results[1], name
    finally:
        raw_client.drop_database(database)
        raw_client.close()
        decoding_client.close()


def test_a_deployment_wide_stream_reads_raw_events(stack, mongo_rs, unique_name):
    require_compiled()
    database = "d" + unique_name.replace("-", "")[-12:]
    config = ConnectorConfig.from_properties({**BASE, "name": database, "mongodb.connection.string": mongo_rs.uri})
    assert watch_target(config).scope is CaptureScope.DEPLOYMENT
    (replica_set,) = MongoSource(config).partitions()
    source = MongoSource(config).open(replica_set)
    source.connect(StreamingMetrics(database, replica_set.name))
    out = ReaderQueue()
    stop = threading.Event()
    try:
        start = source.client[database].command("ping")["operationTime"]
        reader = source.open_reader(MongoPosition(None, start_at=next_cluster_time(start)), out,
                                    StreamingMetrics(database, replica_set.name), Backoff(initial_ms=1000), stop)
        reader.start()
        source.client[database].docs.insert_one({"_id": 1, "when": VALUES["date"], "n": Int64(5)})
        item = out.get(timeout=30)
        while not isinstance(item, rawjson.RawChangeEvent):  # Idle markers before the change
            item = out.get(timeout=30)
        decoded = item.event
        assert decoded["ns"] == {"db": database, "coll": "docs"}
        builders = [MongoEventBuilder(config, replica_set.name, clock=lambda: 1700000000.5) for _ in range(2)]
        assert builders[0].raw_writer is not None
        assert builders[0].build(item) == builders[1].build(
            {**decoded, "fullDocument": rawjson.decoded(decoded["fullDocument"])}
        )
    finally:
        stop.set()
        source.close()

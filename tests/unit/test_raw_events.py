"""Change events written from their raw BSON by the compiled module (connectors/mongodb/raw_events.py) against the
Transformer's messages of the same events decoded: the same Kafka messages for a large random corpus of change events
under the configurations the writer serves and those it hands to the Transformer, and for snapshot reads of raw
documents."""

from __future__ import annotations

import dataclasses
import datetime
import random

import bson
import pytest
from bson import Binary, Decimal128, Int64, ObjectId, Timestamp
from bson.datetime_ms import DatetimeMS
from bson.raw_bson import RawBSONDocument

from connectors.mongodb import envelopes, rawjson
from connectors.mongodb import source as mongo_source
from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.events import KafkaMessage, encode_envelope
from connectors.mongodb.position import MongoPosition, position_after, position_after_changes
from connectors.mongodb.raw_events import RawEventWriter
from connectors.mongodb.records import DATA_OPERATION_TYPES, ChangeRecord, Namespace, SnapshotMarker, UpdateDescription
from connectors.mongodb.source import MongoEventBuilder
from connectors.mongodb.stream import OversizedSkipped
from connectors.mongodb.transformer import Transformer
from tests.built_together import assert_built_together_as_alone
from tests.unit.document_writers import require_compiled
from tests.unit.test_rawjson import random_document, random_text, random_value

BASE = {"name": "raw", "topic.prefix": "raw", "mongodb.connection.string": "mongodb://h1"}
CONFIGS = {
    "default": {},
    "schemas": {"key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true"},
    "strict-json": {"json.non.finite.doubles": "extended"},
    "no-tombstones": {"tombstones.on.delete": "false"},
    "skip-updates": {"skipped.operations": "u"},
    "some-collections": {"collection.exclude.list": "db1\\..*"},
    "field-rules": {"field.exclude.list": "db0.*.a"},
    "transactions": {"provide.transaction.metadata": "true"},
    "legacy": {"event.format": "legacy"},
    "debezium-2": {"debezium.compatibility": "2"},
}
OPERATIONS = ["insert"] * 4 + ["update"] * 3 + ["replace", "delete", "delete", "drop", "invalidate"]


def _document_id(rng: random.Random):
    return rng.choice([
        rng.randint(-(2**31), 2**31 - 1), Int64(rng.randint(-(2**63), 2**63 - 1)), random_text(rng, 10),
        ObjectId(rng.randbytes(12)), {"a": rng.randint(0, 9), "b": random_text(rng, 3)}, rng.random(),
        Decimal128("2.5"), datetime.datetime(2020, 1, 2, 3, 4, 5, 6000), Binary(rng.randbytes(4), 4),
    ])


def _namespace(rng: random.Random) -> dict:
    coll = rng.choice(["c", "docs", "with space", 'quote"d', "back\\slash", "ctl\x01\x1f", "ünï☃", "e\U0001F600"])
    return {"db": rng.choice(["db0", "db1", "db-2"]), "coll": coll}


def random_event(rng: random.Random, sessions: list[dict] | None = None) -> bytes:
    """A random change event; one in five is in a transaction, and with `sessions` (the transactions so far) half of
    those continue the last one."""
    operation = rng.choice(OPERATIONS)
    document_id = _document_id(rng)
    token = {"_data": rng.randbytes(20).hex().upper()}
    if rng.random() < 0.1:  # as servers before 4.2 sent some
        token["_typeBits"] = Binary(rng.randbytes(2))
    event: dict = {"_id": token, "operationType": operation}
    if rng.random() < 0.95:
        event["clusterTime"] = Timestamp(rng.randint(0, 2**32 - 1), rng.randint(0, 2**32 - 1))
    wall = rng.random()
    if wall < 0.6:
        event["wallTime"] = datetime.datetime(2026, 11, 27) + datetime.timedelta(milliseconds=rng.randint(0, 10**10))
    elif wall < 0.7:
        event["wallTime"] = DatetimeMS(rng.choice([2**62, -(2**62), 253402300800000, 9_000_000_000_001]))
    elif wall < 0.75:
        event["wallTime"] = None
    if operation in ("drop", "invalidate"):
        return bson.encode(event)
    event["ns"] = _namespace(rng)
    event["documentKey"] = {"_id": document_id}
    if operation != "delete" and rng.random() < 0.9:
        event["fullDocument"] = {"_id": document_id, **random_document(rng, 2)} if rng.random() < 0.9 else None
    if operation in ("update", "replace", "delete") and rng.random() < 0.4:
        event["fullDocumentBeforeChange"] = {"_id": document_id, **random_document(rng, 2)}
    if operation == "update":
        event["updateDescription"] = {
            "updatedFields": {f"a.{i}": random_value(rng, 1) for i in range(rng.randint(0, 3))},
            "removedFields": [random_text(rng, 4) for _ in range(rng.randint(0, 2))],
            "truncatedArrays": [{"field": "arr", "newSize": rng.randint(0, 5)}] if rng.random() < 0.2 else [],
        }
    if rng.random() < 0.2:
        if sessions and rng.random() < 0.5:
            event.update(sessions[-1])
        else:
            session = {"lsid": {"id": Binary(rng.randbytes(16), 4), "uid": Binary(rng.randbytes(32), 0)},
                       "txnNumber": Int64(rng.randint(0, 2**40))}
            event.update(session)
            if sessions is not None:
                sessions.append(session)
    order = list(event.items())
    rng.shuffle(order)
    return bson.encode(dict(order))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_raw_events_give_the_messages_of_decoded_ones(name):
    require_compiled()
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    config = ConnectorConfig.from_properties({**BASE, **CONFIGS[name]})
    raw_builder, decoded_builder = (MongoEventBuilder(config, "rs0", clock=lambda: 1700000000.5) for _ in range(2))
    transformed: list[object] = []  # the records the raw builder left to its Transformer
    transform = raw_builder.transform
    raw_builder.transform = lambda record: transformed.append(record) or transform(record)
    writer = raw_builder.raw_writer
    sessions: list[dict] = []
    written = in_transactions = 0
    for _ in range(1500):
        data = random_event(rng, sessions)
        raw = rawjson.RawChangeEvent.of(data)
        built = raw_builder.build(raw)
        assert built == decoded_builder.build(bson.decode(data, rawjson.DECODE_OPTIONS)), (seed, data)
        if not transformed and raw.operation_type in DATA_OPERATION_TYPES:  # written (or filtered) without it
            written += 1
            in_transactions += b"lsid\x00" in data
        transformed.clear()
    # The configurations it serves are mostly written by it, events in transactions too; the others never.
    if name == "legacy":
        assert writer is None
    else:
        assert written > 600, (seed, written)
        assert in_transactions > 100, (seed, in_transactions)


def _position_fields(position: MongoPosition | None) -> tuple | None:
    return None if position is None else (position.token, position.cluster_time, position.invalidated)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_changes_built_together_give_what_each_built_alone_gives(name, monkeypatch):
    """The pipeline's batch path (`build_changes`, `position_after_changes`) against `build` and `position_after` of
    each change in turn: raw events, decoded ones and skipped oversized ones, in runs of random lengths."""
    require_compiled()
    monkeypatch.setattr(mongo_source, "now_ms", lambda: 1700000000500)  # the oversized records' ts_ms
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    config = ConnectorConfig.from_properties({**BASE, **CONFIGS[name]})
    together, alone = (MongoEventBuilder(config, "rs0", clock=lambda: 1700000000.5) for _ in range(2))
    sessions: list[dict] = []
    changes: list = []
    for _ in range(1500):
        data = random_event(rng, sessions)
        kind = rng.random()
        if kind < 0.8:
            changes.append(rawjson.RawChangeEvent.of(data))
        elif kind < 0.97:
            changes.append(bson.decode(data, rawjson.DECODE_OPTIONS))
        else:
            changes.append(OversizedSkipped({"_data": rng.randbytes(8).hex()}, {"operationType": "update"}))
    assert_built_together_as_alone(together, alone, changes, position_after, position_after_changes, rng, seed,
                                   _position_fields)


def test_the_resume_token_cluster_time_and_operation_are_read_without_decoding():
    require_compiled()
    rng = random.Random(5)
    for _ in range(300):
        data = random_event(rng)
        event = rawjson.RawChangeEvent.of(data)
        expected = bson.decode(data, rawjson.DECODE_OPTIONS)
        assert event["_id"] == expected["_id"]
        assert event.head is not None
        assert (event.cluster_time, event.operation_type) == (expected.get("clusterTime"), expected["operationType"])


def _random_description(rng: random.Random) -> dict:
    description: dict = {}
    if rng.random() < 0.95:
        names = [random_text(rng, 6).replace("\x00", ""), f"a.{rng.randrange(9)}", ":colon", "ünï.☃"]
        keys = [rng.choice(names) for _ in range(4)]
        description["updatedFields"] = {key: random_value(rng, rng.randint(0, 2)) for key in keys[:rng.randint(0, 4)]}
        if rng.random() < 0.05:
            description["updatedFields"] = None
    if rng.random() < 0.9:
        description["removedFields"] = [random_text(rng, 5) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.5:
        description["truncatedArrays"] = [
            {"field": random_text(rng, 4), "newSize": rng.choice([rng.randint(0, 9), Int64(rng.randint(0, 2**40))])}
            for _ in range(rng.randint(0, 2))]
    if rng.random() < 0.2:
        description["disambiguatedPaths"] = {"a.0": ["a", "0"]}
    return description


def test_update_descriptions_written_in_c_are_the_transformers():
    require_compiled()
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    written = 0
    for _ in range(3000):
        data = bson.encode(_random_description(rng))
        expected = encode_envelope(envelopes.update_description_block(
            UpdateDescription.from_event(bson.decode(data, rawjson.DECODE_OPTIONS))))
        text = rawjson.compiled.update_description(data)
        if text is not None:
            assert text == expected, (seed, data)
            written += 1
    assert written > 1000, (seed, written)  # values relaxed mode writes differently (dates, binaries) are Python's


@pytest.mark.parametrize("batch", ["firstBatch", "nextBatch"])
def test_a_replys_events_are_those_of_its_batch_each_with_its_head(batch):
    require_compiled()
    rng = random.Random(11)
    for _ in range(30):
        events = [random_event(rng) for _ in range(rng.randrange(0, 40))]
        cursor = {"id": Int64(rng.randrange(2**40)), "ns": "db0.c0", batch: [RawBSONDocument(data) for data in events]}
        if rng.random() < 0.5:
            cursor["postBatchResumeToken"] = {"_data": rng.randbytes(8).hex()}
        reply = RawBSONDocument(bson.encode({"cursor": cursor, "ok": 1.0}), rawjson.RAW_OPTIONS)
        read, rest = rawjson.reply_events(reply)
        assert [type(event) for event in read] == [rawjson.RawChangeEvent] * len(events)
        assert [event.raw for event in read] == events
        assert [event.head for event in read] == [rawjson.RawChangeEvent.of(data).head for data in events]
        assert rest == {name: value for name, value in cursor.items() if name != batch}


@pytest.mark.parametrize("reply", [
    {"ok": 1.0},  # no cursor
    {"cursor": {"id": Int64(0), "ns": "a.b"}},  # no batch
    {"cursor": {"id": Int64(0), "firstBatch": [], "nextBatch": []}},  # two
    {"cursor": {"id": Int64(0), "nextBatch": {"0": {"a": 1}}}},  # not an array
    {"cursor": {"id": Int64(0), "nextBatch": [{"a": 1}, 5]}},  # not only documents
    {"cursor": "text"},
])
def test_a_reply_that_is_not_one_batch_of_documents_is_left_to_the_decoder(reply):
    require_compiled()
    assert rawjson.reply_events(RawBSONDocument(bson.encode(reply), rawjson.RAW_OPTIONS)) is None


def test_a_malformed_reply_is_left_to_the_decoder():
    require_compiled()
    data = bson.encode({"cursor": {"id": Int64(0), "nextBatch": [{"a": "x" * 20}]}})
    for cut in (5, len(data) // 2, len(data) - 3):
        broken = data[:cut] + b"\xff" * (len(data) - cut)
        assert rawjson.compiled.reply_events(broken, rawjson.RawChangeEvent) is None


@pytest.mark.parametrize("name", [
    "default", "schemas", "strict-json", "field-rules", "some-collections", "transactions"])
def test_snapshot_reads_written_from_raw_documents_are_the_transformers(name):
    require_compiled()
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    config = ConnectorConfig.from_properties({**BASE, **CONFIGS[name]})
    transformer = Transformer(config, "rs0", clock=lambda: 1700000000.5)
    writer = RawEventWriter.for_transformer(transformer)
    written = 0
    for _ in range(1500):
        data = bson.encode({"_id": _document_id(rng), **random_document(rng, 2)})
        namespace = Namespace(rng.choice(["db0", "db1"]), _namespace(rng)["coll"])
        marker = rng.choice([SnapshotMarker.TRUE, SnapshotMarker.FIRST, SnapshotMarker.LAST,
                             SnapshotMarker.INCREMENTAL])
        mine = writer.read_messages(namespace, RawBSONDocument(data, rawjson.RAW_OPTIONS), marker)
        decoded = ChangeRecord.snapshot_read(namespace, bson.decode(data, rawjson.DECODE_OPTIONS),
                                             cluster_time=Timestamp(5, 1), marker=marker)
        if mine is not None:
            written += 1
            assert mine == transformer.transform(decoded), (seed, data, marker)
    assert written > 500, (seed, written)


def test_snapshot_reads_of_the_2x_format_are_left_to_the_transformer():
    require_compiled()
    config = ConnectorConfig.from_properties({**BASE, **CONFIGS["debezium-2"]})
    writer = RawEventWriter.for_transformer(Transformer(config, "rs0"))
    document = RawBSONDocument(bson.encode({"_id": 1, "a": "b"}), rawjson.RAW_OPTIONS)
    assert writer.read_messages(Namespace("db0", "c"), document, SnapshotMarker.TRUE) is None


def test_change_messages_sets_every_field_of_a_kafka_message():
    # change_event.c's new_message builds a KafkaMessage without its __init__, setting these five slots: a field
    # added to the class must be added there too.
    assert [field.name for field in dataclasses.fields(KafkaMessage)] == ["topic", "key", "value", "headers", "kind"]


def _corrupted(rng: random.Random, data: bytes) -> bytes:
    """`data` with a few bytes changed, cut out or added."""
    corrupted = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at, kind = rng.randrange(len(corrupted)), rng.random()
        if kind < 0.6:
            corrupted[at] = rng.randrange(256)
        elif kind < 0.8:
            del corrupted[at:at + rng.randint(1, 8)]
        else:
            corrupted[at:at] = rng.randbytes(rng.randint(1, 8))
        corrupted = corrupted or bytearray(b"\x00")
    return bytes(corrupted)


def test_the_compiled_readers_and_writers_take_corrupted_bytes_without_failing():
    """Malformed or non-UTF-8 input gives None (Python's path then decides), never an error or a crash."""
    require_compiled()
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    compiled = rawjson.compiled
    topics = {"db0": {"c": "t0", "docs": "t1"}, "db1": {"c": "t2"}, "db-2": {"c": "t3"}}
    writing = (rawjson.RawChangeEvent, KafkaMessage, topics, "", b'{"version":"x","ts_ms":', True, 1700000000000,
               None, True, (), "change", "tombstone")
    for _ in range(3000):
        events = [random_event(rng) for _ in range(rng.randint(1, 3))]
        cursor = {"id": Int64(1), "ns": "db0.c", "nextBatch": [RawBSONDocument(data) for data in events]}
        read = compiled.reply_events(_corrupted(rng, bson.encode({"cursor": cursor, "ok": 1.0})),
                                     rawjson.RawChangeEvent)
        changes = [rawjson.RawChangeEvent.of(_corrupted(rng, data)) for data in events]
        compiled.change_messages(changes + (read[0] if read is not None else []), 0, writing, [])
        compiled.update_description(_corrupted(rng, bson.encode(_random_description(rng))))
        for data in events:
            corrupted = _corrupted(rng, data)
            compiled.change_value(corrupted, b'{"a":', True, 1, None, None)
            compiled.split_event(corrupted)
            compiled.id_document(corrupted)

"""What Verify reads on MongoDB, compiled and in Python: the rows of raw batches (connectors/mongodb/verify_rows.py),
which are what the connector's own snapshot events carry (key as canonical JSON, `after` text), and the topic's
records (connectors/mongodb/verify_events.py)."""

from __future__ import annotations

import datetime
import json
import random

import bson
import pytest
from bson import Binary, Decimal128, Int64, ObjectId, Timestamp
from bson.errors import InvalidBSON

from connectors.core.verify_events import Event, UnreadableEvent, key_text
from connectors.mongodb import rawjson
from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.events import encode_envelope
from connectors.mongodb.records import ChangeRecord, Namespace
from connectors.mongodb.transformer import Transformer
from connectors.mongodb.verify_events import python_event, read_event, read_key
from connectors.mongodb.verify_rows import python_row, python_rows, rows_of_batch
from tests.unit.document_writers import require_compiled
from tests.unit.test_rawjson import random_document, random_text

CONFIGS = {
    "default": {},
    "schemas": {"key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true"},
    "strict-json": {"json.non.finite.doubles": "extended"},
}


def random_id(rng: random.Random):
    return rng.choice([
        rng.randint(-(2**31), 2**31 - 1), Int64(rng.randint(-(2**63), 2**63 - 1)), random_text(rng, 10),
        "".join(chr(rng.randint(0x20, 0x7E)) for _ in range(rng.randint(0, 12))),  # printable ASCII: quotes too
        ObjectId(rng.randbytes(12)), ObjectId(rng.randbytes(12)), {"a": rng.randint(0, 9), "b": random_text(rng, 3)},
        rng.random(), Decimal128("2.5"), datetime.datetime(2020, 1, 2, 3, 4, 5, 6000), Binary(rng.randbytes(4), 4),
    ])


def random_batch(rng: random.Random, documents: int) -> list[bytes]:
    return [bson.encode({"_id": random_id(rng), **random_document(rng, 2)}) for _ in range(documents)]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_rows_are_what_the_snapshot_events_carry(name):
    """The oracle is the connector's own snapshot event of each document (Transformer.snapshot_row): its key as
    canonical JSON and its `after`, for every path (the compiled module's rows and the ones it leaves to Python)."""
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    config = ConnectorConfig.from_properties({"name": "v", "topic.prefix": "v", "mongodb.connection.string":
                                              "mongodb://h", **CONFIGS[name]})
    transformer = Transformer(config, "rs0")
    bare = transformer.events.context.bare_non_finite
    documents = random_batch(rng, 400)
    expected = []
    for data in documents:
        record = ChangeRecord.snapshot_read(Namespace("db", "c"), bson.decode(data, rawjson.DECODE_OPTIONS),
                                            cluster_time=Timestamp(5, 1))
        key, after = transformer.snapshot_row(record)
        expected.append((key_text(key), after))
    assert rows_of_batch(b"".join(documents), bare) == expected, seed
    assert python_rows(b"".join(documents), bare) == expected, seed


def test_the_compiled_rows_are_the_python_twins():
    require_compiled()
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    written = 0
    for _ in range(20):
        documents = random_batch(rng, 100)
        bare = rng.random() < 0.5
        rows = rawjson.compiled.verify_rows(b"".join(documents), bare)
        assert len(rows) == len(documents), seed
        for data, row in zip(documents, rows, strict=True):
            if type(row) is bytes:  # left to Python
                assert row == data, seed
            else:
                written += 1
                assert row == python_row(data, bare), (seed, data)
    assert written > 600, (seed, written)  # most ids are ints, printable strings and ObjectIds


def test_a_batch_that_is_not_documents_is_left_to_python_which_refuses_it():
    require_compiled()
    good = bson.encode({"_id": 1, "v": 2})
    for broken in (good[:-1], good + b"\x05\x00", good + good[:7], b"\x04\x00\x00\x00"):
        assert rawjson.compiled.verify_rows(broken, True) is None
        with pytest.raises(InvalidBSON):
            rows_of_batch(broken, True)
    assert rawjson.compiled.verify_rows(b"", True) == []


# --- topic records ------------------------------------------------------------------------------------------------


def random_json_text(rng: random.Random, depth: int = 0) -> str:
    """A random JSON value's text, spaced and escaped in the ways a JSON writer may choose."""
    pick = rng.random()
    if depth < 3 and pick < 0.15:
        members = [f"{json.dumps(random_text(rng, 6))}{rng.choice(['', ' '])}:{random_json_text(rng, depth + 1)}"
                   for _ in range(rng.randint(0, 3))]
        return "{" + rng.choice([",", ", "]).join(members) + "}"
    if depth < 3 and pick < 0.25:
        return "[" + ",".join(random_json_text(rng, depth + 1) for _ in range(rng.randint(0, 3))) + "]"
    if pick < 0.5:
        return json.dumps(random_text(rng, 12), ensure_ascii=rng.random() < 0.3)
    if pick < 0.6:
        return rng.choice(["true", "false", "null"])
    if pick < 0.7:
        return rng.choice(["1.5", "-0.25e3", "1E400", "0", "-0", "12345678901234567890", "3e-2"])
    return str(rng.randint(-(2**63), 2**63))


def random_record(rng: random.Random) -> bytes:
    """A change event's JSON value, shaped as the connector writes them, with now and then what it never writes."""
    source = {"version": '"3.6.1.Final"', "connector": '"mongodb"', "ts_ms": str(rng.randint(0, 2**41)),
              "snapshot": rng.choice(['"true"', '"false"', '"last"', "null"]), "db": json.dumps(random_text(rng, 5)),
              "ord": str(rng.randint(-1, 2**31)), "lsid": rng.choice(["null", json.dumps('{"id": 1}')]),
              "wallTime": rng.choice(["null", str(rng.randint(0, 2**41))])}
    for name in rng.sample(sorted(source), rng.randint(0, 2)):
        source[name] = random_json_text(rng) if rng.random() < 0.5 else source.pop(name) and None
    source = {name: text for name, text in source.items() if text is not None}
    document = json.dumps({"_id": rng.randint(0, 99), "s": random_text(rng, 8)}, ensure_ascii=False)
    fields = {"before": "null", "after": rng.choice([json.dumps(document, ensure_ascii=rng.random() < 0.5), "null"]),
              "updateDescription": "null", "source": "{" + ",".join(f'"{n}":{t}' for n, t in source.items()) + "}",
              "op": json.dumps(rng.choice(["r", "c", "u", "d", "t"])), "ts_ms": str(rng.randint(0, 2**41)),
              "transaction": "null"}
    if rng.random() < 0.1:
        fields[rng.choice(["after", "op", "source", "extra"])] = random_json_text(rng)
    if rng.random() < 0.05:
        fields.pop(rng.choice(sorted(fields)))
    space = rng.choice(["", " ", "\n "])
    text = "{" + f",{space}".join(f'"{name}":{space}{value}' for name, value in fields.items()) + "}"
    if rng.random() < 0.05:
        text = '{"schema":{},"payload":' + text + "}"
    return text.encode()


def corrupted(rng: random.Random, data: bytes) -> bytes:
    damaged = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(damaged))
        if rng.random() < 0.6:
            damaged[at] = rng.choice(b'{}[]",:\\ u0e.-\x00\xff\xc3') if rng.random() < 0.7 else rng.randrange(256)
        else:
            del damaged[at:at + rng.randint(1, 4)]
        damaged = damaged or bytearray(b"{")
    return bytes(damaged)


def test_the_compiled_record_reader_reads_what_its_python_twin_reads_or_leaves_it():
    require_compiled()
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    read = 0
    for _ in range(6000):
        value = random_record(rng)
        if rng.random() < 0.3:
            value = corrupted(rng, value)
        event = rawjson.compiled.verify_event(value, Event)
        try:
            expected = python_event(value)
        except (ValueError, UnreadableEvent):
            assert event is None, (seed, value)  # left to the Python path, which refuses it
            continue
        if event is not None:
            read += 1
            assert type(event) is Event and event == expected, (seed, value)
            assert read_event(value) == expected, (seed, value)
    assert read > 2500, (seed, read)


def test_a_record_the_compiled_reader_leaves_is_read_or_refused_by_python():
    assert read_event(None) == Event(None, None, {})
    value = b'{"schema":{},"payload":{"op":"c","after":"{\\"_id\\": 1}","source":{"ts_ms":5,"ord":2,"db":"d"}}}'
    assert read_event(value) == Event("c", '{"_id": 1}', {"ts_ms": 5, "ord": 2})
    with pytest.raises(UnreadableEvent):
        read_event(b'{"_id": 1, "v": 2}')  # a flattened record


def random_key(rng: random.Random) -> bytes:
    """A record key as the connector writes it (the id's text JSON-escaped), or one it does not write."""
    pick = rng.random()
    if pick < 0.7:
        identifier = rng.choice([str(rng.randint(-(2**63), 2**63)), f'{{"$oid": "{rng.randbytes(12).hex()}"}}',
                                 json.dumps(random_text(rng, 8)), random_text(rng, 8),
                                 "".join(chr(rng.randint(0x20, 0x7E)) for _ in range(rng.randint(0, 10)))])
        return encode_envelope({"id": identifier})
    if pick < 0.8:
        return b'{"schema":{"type":"struct"},"payload":' + encode_envelope({"id": random_text(rng, 5)}) + b"}"
    if pick < 0.9:
        return rng.choice([b'{"id": "1"}', b'{"id":1}', b'{"id":"1","x":2}', b'{"id":"a\\/b"}', b'{"id":"\\u0041"}'])
    return corrupted(rng, encode_envelope({"id": random_text(rng, 6)}))


def test_the_compiled_key_reader_answers_only_for_canonical_keys_and_as_key_text_does():
    require_compiled()
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    answered = 0
    for _ in range(5000):
        key = random_key(rng)
        text = rawjson.compiled.verify_key(key)
        try:
            expected = key_text(key)
        except ValueError:
            assert text is None, (seed, key)
            continue
        if text is not None:
            answered += 1
            assert text == expected, (seed, key)
        assert read_key(key) == expected, (seed, key)
    assert answered > 1500, (seed, answered)
    assert read_key(None) is None

"""Verify's rows of raw MongoDB batches (connectors/mongodb/verify_rows.py): the compiled module's rows are its Python
twin's, and both are what the connector's own snapshot events carry (key as canonical JSON, `after` text)."""

from __future__ import annotations

import datetime
import random

import bson
import pytest
from bson import Binary, Decimal128, Int64, ObjectId, Timestamp
from bson.errors import InvalidBSON

from connectors.core.verify_events import key_text
from connectors.mongodb import rawjson
from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.records import ChangeRecord, Namespace
from connectors.mongodb.transformer import Transformer
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

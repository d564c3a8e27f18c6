"""The compiled rows decoder (connectors/mysql/_binrows `decode_rows`) on bytes no server sent: random layouts, random
columns-present bitmaps and random bodies give rows or a ValueError (then python-mysql-replication decides), never
another error, a crash or a loop; a row of no bytes (no column present) is refused, as its loop would never end.
Without the module the test skips, except in CI."""

from __future__ import annotations

import random

import pytest

from connectors.mysql import compiled_rows
from tests.compiled_modules import require_built


def _column(rng: random.Random, number: int) -> tuple:
    kind = rng.randrange(compiled_rows.BIT_STRING + 1)
    if kind == compiled_rows.BIT_STRING:
        return f"c{number}", kind, rng.randint(1, 64), None
    if kind == compiled_rows.ENUM_INDEX:
        return f"c{number}", kind, rng.choice([1, 2]), tuple(f"v{n}" for n in range(rng.randint(0, 300)))
    if kind == compiled_rows.SET_BITS:
        return f"c{number}", kind, rng.choice([1, 2, 3, 4, 8]), tuple(f"m{n}" for n in range(rng.randint(0, 64)))
    if kind == compiled_rows.STRING:
        return f"c{number}", kind, rng.choice([1, 2]), rng.choice(["utf-8", "latin-1", None])
    if kind in (compiled_rows.DATETIME2, compiled_rows.TIMESTAMP2, compiled_rows.TIME2):
        return f"c{number}", kind, rng.randint(0, 6), None
    if kind == compiled_rows.NEWDECIMAL:
        precision = rng.randint(1, 65)
        return f"c{number}", kind, precision, rng.randint(0, min(precision, 30))
    return f"c{number}", kind, 0, None


def test_random_bytes_give_rows_or_a_value_error():
    require_built(compiled_rows.compiled, "connectors/mysql/_binrows")
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    decoded = 0
    for _ in range(20_000):
        count = rng.randint(1, 6)
        layout = tuple(_column(rng, number) for number in range(count))
        present = rng.randbytes((count + 7) // 8)
        after = present if rng.random() < 0.5 else None
        try:
            rows = compiled_rows.compiled.decode_rows(rng.randbytes(rng.randint(0, 80)), layout, present, after)
        except ValueError:
            continue
        assert isinstance(rows, list), seed
        decoded += 1
    assert decoded > 100, (seed, decoded)  # some random bodies are rows: the test reaches the decoding


def test_a_row_of_no_bytes_is_refused():
    require_built(compiled_rows.compiled, "connectors/mysql/_binrows")
    layout = (("a", compiled_rows.INT32, 0, None), ("b", compiled_rows.INT8, 0, None))
    with pytest.raises(ValueError, match="no bytes"):
        compiled_rows.compiled.decode_rows(b"\x01\x02\x03", layout, b"\x00", None)

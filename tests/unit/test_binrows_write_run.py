"""The compiled run writer (connectors/mysql/_binrows `count_rows`, `write_run`; envelope.TableEvents.append_run) on
bytes no server sent: random layouts, columns-present bitmaps and bodies. `count_rows` counts the rows `decode_rows`
gives, or gives None where `decode_rows` raises; `write_run` writes, for each row of a counted body, the value and key
the Python way writes from `decode_rows`' dicts (parts around the before and after rows' JSON, the key's JSON between
its head and tail, a tombstone after a delete), and stops at the first update whose key columns differ. Without the
module the test skips, except in CI."""

from __future__ import annotations

import random
from types import SimpleNamespace

from connectors.events.json_converter import string_json
from connectors.mysql import compiled_rows
from connectors.mysql.compiled_rows import WRITE_CALL, WRITE_INTEGER, WRITE_LONG, WRITE_NULL, WRITE_STRING
from connectors.mysql.types import java_long
from tests.compiled_modules import require_built
from tests.unit.test_binrows_decode_rows import _column


def _other(value) -> str:
    return "null" if value is None else string_json(repr(value))


WRITERS = {
    WRITE_INTEGER: lambda value: str(value) if type(value) is int else _other(value),
    WRITE_LONG: lambda value: str(java_long(value)) if type(value) is int else _other(value),
    WRITE_STRING: lambda value: string_json(value) if type(value) is str else _other(value),
    WRITE_CALL: _other,
    WRITE_INTEGER | WRITE_NULL: lambda value: str(value) if type(value) is int else _other(value),  # None: null
    WRITE_STRING | WRITE_NULL: lambda value: string_json(value) if type(value) is str else _other(value),
}


def _json(values: dict | None, writers: tuple) -> str:
    if values is None:
        return "null"
    return "{" + "".join(prefix + write(values.get(name)) for name, prefix, _, write in writers) + "}"


def _writers(rng: random.Random, names: list[str]) -> tuple:
    picked = [name for name in names if rng.random() < 0.8] + (["absent"] if rng.random() < 0.2 else [])
    rng.shuffle(picked)
    return tuple((name, f'{"," if i else ""}"{name}":', kind, WRITERS[kind])
                 for i, (name, kind) in enumerate((name, rng.choice(list(WRITERS))) for name in picked))


def _expected(rows: list, op: str, first: int, end: int, parts, writers, key_writers, head, tail, key_names,
              tombstones: bool) -> tuple[list, int]:
    messages = []
    for number in range(first, min(end, len(rows))):
        before, after = rows[number] if op == "u" else (None, rows[number]) if op == "c" else (rows[number], None)
        if op == "u" and any(before.get(name) != after.get(name) for name in key_names):
            return messages, number
        value = f"{parts[0]}{_json(before, writers)}{parts[1]}{_json(after, writers)}{parts[2]}{number}{parts[3]}"
        key = None if key_writers is None else (head + _json(after if op != "d" else before, key_writers) + tail
                                                ).encode()
        messages.append(("topic", key, value.encode(), None))
        if op == "d" and tombstones:
            messages.append(("topic", key, None, None))
    return messages, min(end, len(rows))


def test_counted_bodies_are_written_as_the_python_way_writes_their_rows():
    require_built(compiled_rows.compiled, "connectors/mysql/_binrows")
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    module = compiled_rows.compiled
    written = stopped = 0
    for _ in range(20_000):
        count = rng.randint(1, 6)
        layout = tuple(_column(rng, number) for number in range(count))
        present = rng.randbytes((count + 7) // 8)
        op = rng.choice("cud")
        after = rng.randbytes((count + 7) // 8) if op == "u" else None
        body = rng.randbytes(rng.randint(0, 80))
        try:
            rows = module.decode_rows(body, layout, present, after)
        except ValueError:
            assert module.count_rows(body, layout, present, after) is None, seed
            continue
        assert module.count_rows(body, layout, present, after) == len(rows), seed
        names = [column[0] for column in layout]
        writers = _writers(rng, names)
        key_writers = _writers(rng, names[:2]) if rng.random() < 0.8 else None
        head, tail = rng.choice([("", ""), ('{"schema":{},"payload":', "}")])
        key_names = tuple(name for name, *_ in key_writers or ())
        at = {name: index for index, name in enumerate(names)}
        table = (writers, tuple(at.get(name, -1) for name, *_ in writers), key_writers,
                 tuple(at.get(name, -1) for name, *_ in key_writers or ()), head, tail,
                 tuple(at.get(name, -1) for name in key_names), "topic",
                 lambda *fields: SimpleNamespace(fields=fields), rng.random() < 0.5)
        parts = ('{"before":', ',"after":', ',"row":', "é}")
        first = rng.randint(0, len(rows))
        end = rng.randint(first, len(rows) + 1)
        messages: list = []
        stop, payload = module.write_run(body, layout, present, after, first, end, {"c": 0, "u": 1, "d": 2}[op],
                                         parts, table, messages)
        expected, expected_stop = _expected(rows, op, first, end, parts, writers, key_writers, head, tail,
                                            key_names, table[-1])
        assert [message.fields for message in messages] == expected, seed
        assert stop == expected_stop, seed
        # the bytes it says it wrote: each message's key and value (topic, key, value, headers)
        assert payload == sum(len(fields[1] or b"") + len(fields[2] or b"") for fields in expected), seed
        written += len(messages)
        stopped += stop < min(end, len(rows))
    assert written > 200 and stopped > 5, (seed, written, stopped)  # the test reaches both outcomes

"""The compiled row writer (connectors/mysql/_binrows `write_row`, compiled_rows.py) writes what envelope.TableEvents'
Python loop writes from the same writers: random rows of ints (past 64 bits too, and bools, which are not ints
here), strs (quotes, backslashes, every control character, non-BMP, lone surrogates), None, missing columns and
other values, under every column kind. Without the module the test skips, except in CI."""

from __future__ import annotations

import random

from connectors.events.json_converter import string_json
from connectors.mysql import compiled_rows
from connectors.mysql.compiled_rows import WRITE_CALL, WRITE_INTEGER, WRITE_LONG, WRITE_NULL, WRITE_STRING
from connectors.mysql.types import java_long
from tests.compiled_modules import require_built


def _python(values: dict, writers: tuple) -> str:
    get = values.get
    return "{" + "".join([prefix + write(get(name)) for name, prefix, _, write in writers]) + "}"


def _other(value) -> str:  # a column's writer of what the kinds do not take
    return "null" if value is None else string_json(repr(value))


def _integer(value) -> str:
    return str(value) if type(value) is int else _other(value)


def _long(value) -> str:
    return str(java_long(value)) if type(value) is int else _other(value)


def _text(value) -> str:
    return string_json(value) if type(value) is str else _other(value)


def _value(rng: random.Random):
    choice = rng.random()
    if choice < 0.3:
        return rng.choice([0, -1, 1, 2**63 - 1, -2**63, 2**63, -2**63 - 1, 2**64 + 5, rng.randrange(-10**6, 10**6)])
    if choice < 0.65:
        alphabet = ['a', 'é', '😀', '"', '\\', '/', '\x7f', '\ud800', *map(chr, range(32))]
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
    if choice < 0.8:
        return None
    return rng.choice([True, False, 1.5, b"\x00\x01", ("t",)])


def test_the_compiled_writer_writes_what_the_python_loop_writes():
    require_built(compiled_rows.compiled, "connectors/mysql/_binrows")
    rng = random.Random(7)
    writers_by_kind = {WRITE_INTEGER: _integer, WRITE_STRING: _text, WRITE_CALL: _other, WRITE_LONG: _long,
                       WRITE_INTEGER | WRITE_NULL: _integer, WRITE_STRING | WRITE_NULL: _text}
    written_by_module = 0
    for _ in range(3000):
        count = rng.randint(0, 6)
        writers = tuple((f"c{i}", f'{"," if i else ""}"c{i}":', kind, writers_by_kind[kind])
                        for i, kind in ((i, rng.choice(list(writers_by_kind))) for i in range(count)))
        values = {f"c{i}": _value(rng) for i in range(count) if rng.random() < 0.9}
        expected = _python(values, writers)
        written = compiled_rows.write_row(values, writers)
        if written is None:  # a lone surrogate: the Python loop writes the row
            assert any(type(v) is str and "\ud800" in v for v in values.values())
            continue
        written_by_module += 1
        assert written == expected, (values, writers)
    assert written_by_module > 2000


def _outcome(write, *args):
    try:
        return write(*args)
    except Exception as error:  # noqa: BLE001 - compared with the other way's
        return type(error)


def _python_event(parts, before, after, row, writers) -> bytes:
    texts = ["null" if values is None else _python(values, writers) for values in (before, after)]
    return f"{parts[0]}{texts[0]}{parts[1]}{texts[1]}{parts[2]}{row}{parts[3]}".encode()


def test_the_compiled_event_value_is_the_python_f_string_encoded():
    """`write_event` (a streamed row's whole value: the rows event's parts around its before and after rows and the
    row's index) gives the bytes of TableEvents.append_streamed's f-string, encoded, or hands the value back (None)
    where that way writes it: lone surrogates (whose encoding then fails), rows that are not dicts, indexes past 64
    bits."""
    require_built(compiled_rows.compiled, "connectors/mysql/_binrows")
    rng = random.Random(11)
    writers_by_kind = {WRITE_INTEGER: _integer, WRITE_STRING: _text, WRITE_CALL: _other, WRITE_LONG: _long,
                       WRITE_INTEGER | WRITE_NULL: _integer, WRITE_STRING | WRITE_NULL: _text}
    part_sets = [("", "", "", ""), ('{"before":', ',"after":', ',"row":', '}'), ("é", "😀", "\\", '"')]
    written_by_module = 0
    for _ in range(3000):
        count = rng.randint(0, 6)
        writers = tuple((f"c{i}", f'{"," if i else ""}"c{i}":', kind, writers_by_kind[kind])
                        for i, kind in ((i, rng.choice(list(writers_by_kind))) for i in range(count)))
        before, after = ({f"c{i}": _value(rng) for i in range(count) if rng.random() < 0.9}
                         if rng.random() < 0.7 else None for _ in range(2))
        parts = rng.choice(part_sets)
        row = rng.choice([0, 1, 9, 10, 12345, 2**63 - 1, -1, 2**63, rng.randrange(1000)])

        expected = _outcome(_python_event, parts, before, after, row, writers)
        written = compiled_rows.write_event(parts, before, after, row, writers)
        if written is None:  # the Python way writes it
            assert row >= 2**63 or expected is UnicodeEncodeError, (parts, before, after, row)
            continue
        written_by_module += 1
        assert written == expected, (parts, before, after, row)
    assert written_by_module > 2000
    assert compiled_rows.write_event(("a", "b", "c", "d"), [("c0", 1)], None, 0, ()) is None  # not a dict


def test_the_compiled_key_is_the_python_key_encoded():
    """`write_key` gives head + the row as write_row writes it + tail, encoded (a key with or without its schema),
    or None where the Python way writes it (a lone surrogate, whose encoding then fails)."""
    require_built(compiled_rows.compiled, "connectors/mysql/_binrows")
    rng = random.Random(13)
    writers_by_kind = {WRITE_INTEGER: _integer, WRITE_STRING: _text, WRITE_CALL: _other, WRITE_LONG: _long,
                       WRITE_INTEGER | WRITE_NULL: _integer, WRITE_STRING | WRITE_NULL: _text}
    written_by_module = 0
    for _ in range(2000):
        count = rng.randint(0, 4)
        writers = tuple((f"c{i}", f'{"," if i else ""}"c{i}":', kind, writers_by_kind[kind])
                        for i, kind in ((i, rng.choice(list(writers_by_kind))) for i in range(count)))
        values = {f"c{i}": _value(rng) for i in range(count) if rng.random() < 0.9}
        head, tail = rng.choice([("", ""), ('{"schema":{"type":"struct"},"payload":', "}"), ("é", "😀")])
        expected = _outcome(lambda: (head + _python(values, writers) + tail).encode())  # noqa: B023 - called here
        written = compiled_rows.write_key(values, writers, head, tail)
        if written is None:
            assert expected is UnicodeEncodeError, values
            continue
        written_by_module += 1
        assert written == expected, (values, writers)
    assert written_by_module > 1500

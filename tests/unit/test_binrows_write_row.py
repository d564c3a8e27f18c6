"""The compiled row writer (connectors/mysql/_binrows `write_row`, compiled_rows.py) writes what envelope.TableEvents'
Python loop writes from the same writers: random rows of ints (past 64 bits too, and bools, which are not ints
here), strs (quotes, backslashes, every control character, non-BMP, lone surrogates), None, missing columns and
other values, under every column kind. Without the module the test skips, except in CI."""

from __future__ import annotations

import random

from connectors.events.json_converter import string_json
from connectors.mysql import compiled_rows
from connectors.mysql.compiled_rows import WRITE_CALL, WRITE_INTEGER, WRITE_STRING
from tests.compiled_modules import require_built


def _python(values: dict, writers: tuple) -> str:
    get = values.get
    return "{" + "".join([prefix + write(get(name)) for name, prefix, _, write in writers]) + "}"


def _other(value) -> str:  # a column's writer of what the kinds do not take
    return "null" if value is None else string_json(repr(value))


def _integer(value) -> str:
    return str(value) if type(value) is int else _other(value)


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
    writers_by_kind = {WRITE_INTEGER: _integer, WRITE_STRING: _text, WRITE_CALL: _other}
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

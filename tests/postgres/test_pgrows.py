"""The compiled PostgreSQL helpers (connectors/postgres/_pgrows) give what their Python twins give: pgoutput tuple
data (every column kind, truncated and unknown data), and rows written from texts the compiled loop writes itself
(integers, strings, booleans) or hands back (texts PostgreSQL would not send, writers that raise)."""

from __future__ import annotations

import gc
import math
import random
import struct
from decimal import ROUND_DOWN, ROUND_UP, Decimal, localcontext
from fractions import Fraction

import pytest

from connectors.events.json_converter import string_json
from connectors.postgres import types as t
from connectors.postgres.compiled import compiled
from connectors.postgres.pgoutput import UNCHANGED_TOAST, _Reader
from connectors.postgres.rows import RowColumn, RowMapper
from connectors.postgres.types import bool_json, builtin, int_json
from tests.postgres.compiled_rows import require_compiled
from tests.postgres.test_row_text_writer import outcome
from tests.postgres.test_types import DEFAULT, numeric_typmod
from tests.unit.test_plain_bytes import strings_around_special_characters


def tuple_data(values: list) -> bytes:
    out = [struct.pack("!h", len(values))]
    for value in values:
        if value is None:
            out.append(b"n")
        elif value is UNCHANGED_TOAST:
            out.append(b"u")
        elif isinstance(value, bytes):
            out.append(b"b" + struct.pack("!i", len(value)) + value)
        else:
            encoded = value.encode("utf-8")
            out.append(b"t" + struct.pack("!i", len(encoded)) + encoded)
    return b"".join(out)


def both_tuple_data(data: bytes, pos: int):
    python = _Reader(data, pos)
    expected = outcome(lambda: (python.python_tuple_data(), python.pos))
    return outcome(compiled.tuple_data, data, pos), expected


def test_tuple_data_is_read_as_python_reads_it():
    require_compiled()
    rng = random.Random(7)
    choices = [None, UNCHANGED_TOAST, b"\x00\x01", "", "plain", "é\u2028\U0001f600", "x" * 300]
    for _ in range(300):
        values = [rng.choice(choices) for _ in range(rng.randrange(0, 12))]
        data = b"\x55" * 3 + tuple_data(values) + b"rest"
        got, expected = both_tuple_data(data, 3)
        assert got == expected == (tuple(values), len(data) - 4)
        assert type(got[0]) is tuple


def test_tuples_of_texts_are_left_out_of_the_cyclic_collector():
    """A tuple of strs, bytes and Nones can hold no cycle: the compiled reader leaves it untracked, as the collector
    would after walking it once (a queued wide row's tuple was walked by every young collection); one holding the
    unchanged-TOAST marker (an object) stays tracked, and the collector later untracks the Python reader's."""
    require_compiled()
    texts, _ = compiled.tuple_data(tuple_data(["a" * 40, None, b"\x00", ""] * 25), 0)
    with_marker, _ = compiled.tuple_data(tuple_data(["a", UNCHANGED_TOAST]), 0)
    assert not gc.is_tracked(texts) and gc.is_tracked(with_marker)
    python = _Reader(tuple_data(["a", None]), 0).python_tuple_data()
    gc.collect()
    assert not gc.is_tracked(python)


@pytest.mark.parametrize("data", [
    tuple_data(["abc"])[:-1],  # a value cut short
    b"\x00\x02n",  # fewer columns than counted
    b"\x00\x01t\x00\x00\x00\x05ab",
    b"\x00\x01x",  # an unknown kind
])
def test_malformed_tuple_data_is_refused_as_python_refuses_it(data):
    require_compiled()
    got, expected = both_tuple_data(data, 0)
    assert isinstance(got, tuple) and issubclass(got[0], ValueError), got
    if expected[0].__name__ == "PgOutputError":
        assert got[0] is expected[0], (got, expected)


def test_invalid_utf8_fails_as_in_python():
    require_compiled()
    got, expected = both_tuple_data(b"\x00\x01t\x00\x00\x00\x02\xff\xfe", 0)
    assert got[0] is expected[0] is UnicodeDecodeError


def test_integers_strings_and_booleans_are_written_as_python_writes_them():
    """Every text either way: those the compiled loop writes itself, and those it hands to the column's writer
    (non-canonical integers, non-integers, booleans other than t), with a required column's null taking the long
    way."""
    require_compiled()
    columns = [RowColumn("i", builtin(t.INT8), optional=False), RowColumn("s", builtin(t.TEXT)),
               RowColumn("b", builtin(t.BOOL)), RowColumn("n", builtin(t.NUMERIC))]
    rows = RowMapper("p.public.t.Value", columns, DEFAULT)
    python, native = rows.text_writer(rows.schema, use_compiled=False), rows.text_writer(rows.schema)
    integers = ["0", "-0", "7", "-12", "007", "+5", " 3", "1_000", "12a", "", "-", "9" * 30, "٣"]
    strings = ["", "plain", 'q"uote', "back\\slash", "\x00\x01\x1f\x7f", "\b\f\n\r\t", "é\u2028\U0001f600", None,
               UNCHANGED_TOAST, "\\u00ff"]
    booleans = ["t", "f", "true", "", None]
    rng = random.Random(3)
    for _ in range(2000):
        values = (rng.choice(integers + [None]), rng.choice(strings), rng.choice(booleans),
                  rng.choice(["1.5", None, "x"]))
        assert outcome(native, values) == outcome(python, values), values
    assert string_json("\x01") == '"\\u0001"' and int_json("007") == "7" and bool_json("true") == "false"
    assert native(("5", 'a"\x1f', "t", None)) == '{"i":5,"s":"a\\"\\u001F","b":true,"n":null}'


@pytest.mark.parametrize("width", [None, 0, 3, 6, 9])
def test_numerics_and_utc_timestamps_are_written_as_python_writes_them(width):
    """numeric(p, s) texts (up to 96 digits written by the compiled loop, longer ones and texts PostgreSQL does not
    send by the column's writer) and timestamptz texts (UTC ones rewritten, others computed), against the Python
    loop; `width` is timestamptz's precision."""
    require_compiled()
    columns = [RowColumn("a", builtin(t.NUMERIC, numeric_typmod(30, 2))),
               RowColumn("b", builtin(t.NUMERIC, numeric_typmod(18, 0))),
               RowColumn("at", builtin(t.TIMESTAMPTZ, -1 if width is None else width))]
    rows = RowMapper("p.public.t.Value", columns, DEFAULT)
    python, native = rows.text_writer(rows.schema, use_compiled=False), rows.text_writer(rows.schema)
    rng = random.Random(str(width))
    edges = [0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769, 8388607, 8388608, 2**31,
             -(2**31) - 1, 10**17, 10**18 - 1, -(10**18) + 1, 10**18, 2**63, -(2**63) - 1, 10**94, 10**96 - 1,
             -(10**96) + 1, 10**96, -(10**96)]
    odd_numbers = ["NaN", "+1.00", "1_0.00", " 1.00", "1.5", "1.000", "1", "١.00", "--1.00", "-.50", ".50", "1.",
                   "-0.00", "-", ""]
    odd_times = ["2024-01-02 03:04:05+00:00", "2024-01-02 03:04:05+00:00:00", "2024-01-02 03:04:05.+00",
                 "2024-01-02 03:04:05.1234567+00", "2024-01-02 03:04:05+01", "2024-01-02 03:04:05+00\n",
                 "2024-01-02T03:04:05+00", "infinity", "-infinity", "0999-01-02 03:04:05+00", "١٠٢٤-01-02 03:04:05+00",
                 "2024-01-02 03:04:05.000+00", "2024-01-02 03:04:05.100200+00"]
    for _ in range(3000):
        unscaled = rng.choice(edges + [rng.randrange(-(10**rng.randrange(1, 25)), 10**rng.randrange(1, 25))])
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randrange(7)))
        instant = f"{rng.randrange(1, 9999):04d}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d} " \
                  f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"
        values = (rng.choice([format(Decimal(unscaled).scaleb(-2), "f"), rng.choice(odd_numbers), None]),
                  rng.choice([str(unscaled), rng.choice(odd_numbers)]),
                  rng.choice([f"{instant}{'.' + digits if digits else ''}+00", rng.choice(odd_times), None]))
        assert outcome(native, values) == outcome(python, values), values


DOUBLE_TEXTS = ["0", "-0", "1", "-1", "0.1", "-2.5", "1e-05", "1.5e-07", "0.001", "0.0001", "0.00099999", "123456.7",
                "9999999", "10000000", "1e+16", "1.2345e+22", "100", "0.30000000000000004", "33.333333333333336",
                "1.7976931348623157e+308", "-1.7976931348623157e+308", "2.2250738585072014e-308", "5e-324", "4.9e-324",
                "-5e-324", "1e+23", "9007199254740993", "0.1000000000000000055511151231257827"]
# texts PostgreSQL does not send, or whose JSON the column's writer writes (NaN and the infinities quoted)
ODD_DOUBLES = ["NaN", "Infinity", "-Infinity", "inf", "nan", "1e400", "-1e400", " 1.5", "1.5 ", "1.5\n", "1_0", "+1.5",
               ".5", "5.", "0x10", "", "-", "e5", "1e", "١.٥", "1.5x"]
DATE_TEXTS = ["1970-01-01", "1969-12-31", "2024-02-29", "2000-03-01", "1900-02-28", "0001-01-01", "0001-12-31 BC",
              "0044-03-15 BC", "4713-11-24 BC", "5874897-12-31", "12345-06-07", "infinity", "-infinity",
              "2024-13-45", "2024-00-00"]
ODD_DATES = ["2024-1-02", "2024-01-02 ", "2024-01-02\n", "24-01-02", "١٠٢٤-01-02", "", "2024-01-02 AD", "-2024-01-02",
             "1234567890-01-01", "Infinity", "2024-01-02 bc", "2024/01/02"]


def random_double_text(rng: random.Random) -> str:
    """A finite float8's text: as PostgreSQL 12 and later write it (the shortest digits) of a random bit pattern, a
    random decimal or a third; as older ones write it (17 digits); or a decimal that is not the shortest of its value:
    random digits, or a value's neighbouring midpoint cut to 15-19 digits (the compiled writer takes the text's
    digits only when they are repr's)."""
    choice = rng.randrange(6)
    if choice < 2:
        value = math.nan
        while not math.isfinite(value):
            value = struct.unpack("<d", rng.randbytes(8))[0]
        return repr(value) if choice == 0 else f"{value:.17g}"
    if choice == 2:
        return repr(round(rng.uniform(-1e6, 1e6), rng.randrange(8)) * 10.0 ** rng.randrange(-30, 30))
    if choice == 3:
        return repr(rng.randint(1, 10**6) / 3.0 * 10.0 ** rng.randint(-12, 30))
    if choice == 4:
        digits, sign = rng.randint(1, 20), "-" if rng.random() < 0.3 else ""
        return f"{sign}{rng.randrange(10 ** (digits - 1), 10**digits)}e{rng.randint(-40, 40)}"
    value = rng.uniform(1, 10) * 10.0 ** rng.randint(-12, 40)
    midpoint = (Fraction(value) + Fraction(math.nextafter(value, rng.choice((0, math.inf))))) / 2
    exact = Decimal(midpoint.numerator) / Decimal(midpoint.denominator)
    cut = exact.quantize(Decimal(1).scaleb(exact.adjusted() - rng.randint(14, 18)),
                         rounding=rng.choice((ROUND_DOWN, ROUND_UP)))
    return format(cut, "e").replace("E+", "e").replace("E", "e")


@pytest.mark.parametrize("mode", ["adaptive", "connect"])
def test_doubles_and_dates_are_written_as_python_writes_them(mode):
    """float8 texts (Double.toString of the value, by connectors/csrc/java_double.h: from the text's own digits
    when they are the shortest and nearest, else through repr) and date texts (days since the epoch, BC and years
    past 9999 too, ±infinity as Debezium writes them) are written by the compiled loop itself, the same text as the
    Python loop's; texts PostgreSQL does not send, NaN and the infinities go to the column's writer."""
    require_compiled()
    from dataclasses import replace

    columns = [RowColumn("x", builtin(t.FLOAT8)), RowColumn("d", builtin(t.DATE)),
               RowColumn("y", builtin(t.FLOAT8), optional=False), RowColumn("e", builtin(t.DATE), optional=False)]
    rows = RowMapper("p.public.t.Value", columns, replace(DEFAULT, time_precision_mode=mode))
    python, native = rows.text_writer(rows.schema, use_compiled=False), rows.text_writer(rows.schema)
    compiled_columns, count = rows.compiled_columns(rows.schema)

    def refused(text):
        raise AssertionError(f"the compiled loop handed over {text!r}")
    # the same columns with writers that refuse: what it writes from these, it writes itself
    by_itself = tuple(column[:4] + (refused,) + column[5:] for column in compiled_columns)
    rng = random.Random(mode)
    # below a power of two the doubles are twice as dense: the shortest decimal of 2^k may be below it
    powers_of_two = [text(side) for k in range(-40, 80) for side in
                     (2.0**k, math.nextafter(2.0**k, 0), math.nextafter(2.0**k, math.inf))
                     for text in (repr, "{:.17g}".format, "{:.16g}".format)]
    with localcontext() as context:
        context.prec = 60  # the midpoints' exact decimals
        randoms = [random_double_text(rng) for _ in range(6000)]
    for text in DOUBLE_TEXTS + powers_of_two + randoms:
        values = (text, rng.choice(DATE_TEXTS), text, "2024-01-02")
        assert outcome(native, values) == outcome(python, values), values
        assert compiled.write_row(values, by_itself, count) == python(values), values
    for text in DATE_TEXTS:
        values = ("1.5", text, "-1.5", text)
        assert compiled.write_row(values, by_itself, count) == python(values) == native(values), values
    for _ in range(2000):
        values = (rng.choice(DOUBLE_TEXTS + ODD_DOUBLES + [None]), rng.choice(DATE_TEXTS + ODD_DATES + [None]),
                  rng.choice(DOUBLE_TEXTS + ODD_DOUBLES + [None]), rng.choice(DATE_TEXTS + ODD_DATES + [None]))
        assert outcome(native, values) == outcome(python, values), values
    assert native(("5e-324", "0044-03-15 BC", "1e+16", "infinity")) == (
        '{"x":4.9E-324,"d":-735160,"y":1.0E16,"e":-2147472692}')
    assert native(("NaN", None, "-Infinity", "1970-01-02")) == '{"x":"NaN","d":null,"y":"-Infinity","e":1}'


def test_strings_around_special_characters_are_written_as_python_writes_them():
    """The compiled string writer finds what it escapes eight bytes at a time (connectors/csrc/plain_bytes.h):
    every special character at every offset of a word and of the tail (tests/unit/test_plain_bytes.py)."""
    require_compiled()
    rows = RowMapper("p.public.t.Value", [RowColumn("s", builtin(t.TEXT))], DEFAULT)
    python, native = rows.text_writer(rows.schema, use_compiled=False), rows.text_writer(rows.schema)
    for text in strings_around_special_characters():
        assert outcome(native, (text,)) == outcome(python, (text,)), repr(text)


def test_streamed_event_values_are_written_as_python_writes_them():
    """A streamed change's whole value (`RowMapper.event_writer`: the transaction's parts around the row and the
    change's LSN) is the same bytes from the compiled module and from the Python f-string, for rows it writes, rows
    that take the long way (a required column's null, a text the column's writer refuses), LSNs at the edges of 64
    bits and past them, a list of values rather than a tuple, and parts with non-ASCII text."""
    require_compiled()
    columns = [RowColumn("i", builtin(t.INT8), optional=False), RowColumn("s", builtin(t.TEXT)),
               RowColumn("n", builtin(t.NUMERIC, numeric_typmod(12, 2))), RowColumn("at", builtin(t.TIMESTAMPTZ))]
    rows = RowMapper("p.public.t.Value", columns, DEFAULT)
    python, native = rows.event_writer(rows.schema, use_compiled=False), rows.event_writer(rows.schema)
    rng = random.Random(11)
    lsns = [0, 1, 9, 10, 99, 100, 2**32, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**70]
    part_sets = [("", "", "", ""), ('{"before":null,"after":', ',"lsn":', ',"x":"é\u2028"', '}'),
                 ("é", "\U0001f600", "\\", '"')]
    for _ in range(2000):
        values = (rng.choice(["5", "-12", "007", "x", None]), rng.choice(["", 'q"', "é\x01", None, UNCHANGED_TOAST]),
                  rng.choice(["1.50", "12.5", None, "NaN"]),
                  rng.choice(["2024-01-02 03:04:05.5+00", "2024-01-02 03:04:05+01", "infinity", None]))
        if rng.random() < 0.05:
            values = list(values)
        parts, lsn = rng.choice(part_sets), rng.choice(lsns + [rng.randrange(2**64)])
        got, expected = outcome(native, parts, values, lsn), outcome(python, parts, values, lsn)
        assert got == expected, (parts, values, lsn)
        assert type(got) is bytes or issubclass(got[0], Exception)
    assert native(part_sets[1], ("1", "a", "2.00", None), 2**64 - 1) == (
        b'{"before":null,"after":{"i":1,"s":"a","n":"AMg=","at":null},"lsn":18446744073709551615'
        b',"x":"\xc3\xa9\xe2\x80\xa8"18446744073709551615}')


def _decoded(data: bytes, in_stream: bool):
    from connectors.postgres import pgoutput
    try:
        return pgoutput.decode(data, in_stream)
    except Exception as error:  # noqa: BLE001 - compared with the other way's
        return type(error), str(error)


def test_row_changes_are_decoded_as_python_decodes_them(monkeypatch):
    """Insert, Update and Delete messages read by the compiled module (`row_change`) give the messages the Python
    reader gives, in and out of a streamed transaction; malformed ones (every cut of a message, markers that do not
    belong, invalid UTF-8) are handed back to the Python reader, so they are refused exactly as without
    `row_change` (the reader then takes the compiled tuple reader, whose texts for a cut tuple are its own)."""
    require_compiled()
    from types import SimpleNamespace

    from connectors.postgres import pgoutput
    rng = random.Random(17)
    choices = [None, UNCHANGED_TOAST, b"\x00\x01", "", "plain", "é\U0001f600", "x" * 40]
    messages = []
    for _ in range(400):
        kind = rng.choice(b"IUD")
        head = bytes([kind]) + (struct.pack("!I", rng.randrange(2**32)) if rng.random() < 0.5 else b"")
        relation = struct.pack("!I", rng.choice([0, 1, 16384, 2**32 - 1]))
        new = tuple_data([rng.choice(choices) for _ in range(rng.randrange(0, 6))])
        old = tuple_data([rng.choice(choices) for _ in range(rng.randrange(0, 6))])
        marker = rng.choice([b"K", b"O"])
        if kind == ord("I"):
            body = b"N" + new
        elif kind == ord("U"):
            body = rng.choice([b"N" + new, marker + old + b"N" + new, marker + old + b"X" + new, marker + old])
        else:
            body = rng.choice([marker + old, b"N" + new])
        message = head + relation + body
        messages.append(message)
        messages.append(message[:rng.randrange(len(message))])  # cut anywhere
    messages += [b"U" + struct.pack("!I", 7) + b"N" + b"\x00\x01t\x00\x00\x00\x02\xff\xfe",  # invalid UTF-8
                 b"I" + struct.pack("!I", 7) + b"N" + b"\x00\x01x"]  # an unknown column kind
    without_row_change = SimpleNamespace(tuple_data=compiled.tuple_data, row_change=lambda data, in_stream: None)
    decoded = refused = 0
    for message in messages:
        for in_stream in (False, True):
            native = _decoded(message, in_stream)
            with monkeypatch.context() as patched:
                patched.setattr(pgoutput, "_compiled", without_row_change)
                before = _decoded(message, in_stream)
                patched.setattr(pgoutput, "_compiled", None)
                python = _decoded(message, in_stream)
            assert native == before, (message, in_stream)
            if type(native) is tuple:
                refused += 1
            else:
                decoded += 1
                assert native == python and type(native) is type(python), (message, in_stream)
    assert pgoutput._compiled is compiled and decoded > 200 and refused > 100
    whole = _decoded(b"U" + struct.pack("!I", 9) + b"K" + tuple_data(["1"]) + b"N" + tuple_data(["2", None]), False)
    assert whole == pgoutput.Update(9, ("2", None), ("1",), "K", None)


def test_keys_are_written_as_python_writes_them():
    """`RowMapper.bytes_writer` (a message key with what the key converter writes around it) gives the same bytes
    from the compiled module and from the Python text writer, for keys it writes, keys that take the long way (a
    required column's null, a text the column's writer refuses) and lists of values."""
    require_compiled()
    columns = [RowColumn("i", builtin(t.INT8), optional=False), RowColumn("s", builtin(t.TEXT))]
    rows = RowMapper("p.public.t.Value", columns, DEFAULT)
    rng = random.Random(19)
    for head, tail in [("", ""), ('{"schema":{"type":"struct"},"payload":', "}"), ("é", "\U0001f600")]:
        python = rows.bytes_writer(rows.schema, head, tail, use_compiled=False)
        native = rows.bytes_writer(rows.schema, head, tail)
        for _ in range(500):
            values = (rng.choice(["5", "-12", "007", "x", None]), rng.choice(["", 'q"', "é\x01", None]))
            if rng.random() < 0.05:
                values = list(values)
            got, expected = outcome(native, values), outcome(python, values)
            assert got == expected, (head, values)
        assert native(("7", "a")) == f'{head}{{"i":7,"s":"a"}}{tail}'.encode()


WRITTEN_COLUMNS = [RowColumn("i", builtin(t.INT8), optional=False), RowColumn("s", builtin(t.TEXT)),
                   RowColumn("n", builtin(t.NUMERIC, numeric_typmod(12, 2))), RowColumn("at", builtin(t.TIMESTAMPTZ)),
                   RowColumn("b", builtin(t.BOOL))]
KEY_AROUND = ('{"schema":{"type":"struct"},"payload":', "}")


def writers(columns: list[RowColumn]):
    """The Python event and key writers of a table of `columns` keyed by its first, and the compiled writers'
    event columns, their count and the key's columns."""
    from connectors.events import schema as s

    rows = RowMapper("p.public.t.Value", columns, DEFAULT)
    key_schema = s.struct([rows.schema.fields[0]], name="p.public.t.Key")
    python_event = rows.event_writer(rows.schema, use_compiled=False)
    python_key = rows.bytes_writer(key_schema, *KEY_AROUND, use_compiled=False)
    event_columns, count = rows.compiled_columns(rows.schema)
    return python_event, python_key, event_columns, count, rows.compiled_columns(key_schema)[0]


def test_runs_of_changes_are_written_as_each_change_is_written_alone():
    """`write_run` (PgEventBuilder.build_changes' runs) writes, from a change on, the messages the Python writers give
    each change of the run alone (the key from `bytes_writer`, the value from `event_writer`), and stops at the first
    change of another table, transaction or kind, an update with an old tuple, or a change either compiled writer
    sends the long way (which the per-change path then writes): random runs of inserts and updates with such changes
    among them."""
    require_compiled()
    from connectors.kafka.sink import OutMessage
    from connectors.postgres import pgoutput as p
    from connectors.postgres.compiled import slots_maker
    from connectors.postgres.stream import WalChange

    head, tail = KEY_AROUND
    python_event, python_key, event_columns, count, key_columns = writers(WRITTEN_COLUMNS[:4])
    parts = ('{"before":null,"after":', ',"lsn":', ',"x":"é"', '}')
    rng = random.Random(23)

    def values():
        return (rng.choice(["5", "-12", "5", "5", "007", None]), rng.choice(["", 'q"', "é\x01", None]),
                rng.choice(["1.50", "12.5", "1.50"]), rng.choice(["2024-01-02 03:04:05.5+00", "infinity", None]))

    def change(kind):
        relation, commit = rng.choice([7, 7, 7, 8]), rng.choice([100, 100, 100, 200])
        if kind is p.Insert:
            message = p.Insert(relation, values())
        else:
            message = p.Update(relation, values(), values() if rng.random() < 0.1 else None, None)
        return WalChange(message, rng.randrange(2**64), commit, 5, 6)

    for _ in range(300):
        kind = rng.choice([p.Insert, p.Update])
        changes = [change(rng.choice([kind, kind, kind, p.Insert, p.Update])) for _ in range(rng.randint(1, 12))]
        start = rng.randrange(len(changes))
        first = changes[start]
        with_key = rng.random() < 0.7
        key = (head, key_columns, tail) if with_key else None
        make = rng.choice([OutMessage, slots_maker(OutMessage)])
        messages = ["already there"]
        end = compiled.write_run(changes, start, kind, first.message.relation_id, first.commit_lsn, parts,
                                 event_columns, count, key, "topic", make, messages, kind is p.Update)

        def in_run(item, kind=kind, first=first):
            return (type(item.message) is kind and getattr(item.message, "old", None) is None
                    and item.message.relation_id == first.message.relation_id
                    and item.commit_lsn == first.commit_lsn)

        def written(item, with_key=with_key):
            new = item.message.new
            return (compiled.write_event(parts, new, event_columns, count, item.lsn) is not None
                    and (not with_key or compiled.write_text(head, new, key_columns, count, tail) is not None))

        assert start <= end <= len(changes)
        assert all(in_run(item) and written(item) for item in changes[start:end])
        assert end == len(changes) or not (in_run(changes[end]) and written(changes[end]))
        assert messages == ["already there"] + [
            OutMessage("topic", python_key(item.message.new) if with_key else None,
                       python_event(parts, item.message.new, item.lsn)) for item in changes[start:end]]


def test_snapshot_rows_are_written_as_each_row_alone():
    """`write_rows` (PgEventBuilder.snapshot_rows) writes rows[start:end] into the messages the Python writers give
    each row alone (the key from `bytes_writer`, the value from `event_writer` with the read's parts and LSN), and
    stops at the first row that is no tuple or that either compiled writer sends the long way (which the per-row
    path then writes): random rows with such rows among them, keyed and unkeyed."""
    require_compiled()
    from connectors.kafka.sink import OutMessage
    from connectors.postgres.compiled import slots_maker

    head, tail = KEY_AROUND
    python_event, python_key, event_columns, count, key_columns = writers(WRITTEN_COLUMNS)
    parts = ('{"before":null,"after":', ',"sequence":"[null,\\"', '\\"]","lsn":', ',"op":"r"}')
    rng = random.Random(31)

    def row():
        values = (rng.choice(["5", "-12", "5", "5", "007", None]), rng.choice(["", 'q"', "é\x01", "\u2028", None]),
                  rng.choice(["1.50", "12.5", "1.50", None]), rng.choice(["2024-01-02 03:04:05.5+00", "infinity"]),
                  rng.choice(["t", "f", None]))
        return list(values) if rng.random() < 0.03 else values

    def written(values, with_key: bool, lsn: int) -> bool:
        return (type(values) is tuple and compiled.write_event(parts, values, event_columns, count, lsn) is not None
                and (not with_key or compiled.write_text(head, values, key_columns, count, tail) is not None))

    for _ in range(400):
        batch = [row() for _ in range(rng.randint(0, 15))]
        start = rng.randint(0, len(batch))
        end = rng.randint(start, len(batch))
        with_key = rng.random() < 0.7
        key = (head, key_columns, tail) if with_key else None
        lsn = rng.choice([0, 1, 2**63 + 5, rng.randrange(2**40)])
        make = rng.choice([OutMessage, slots_maker(OutMessage)])
        messages = ["already there"]
        stop = compiled.write_rows(batch, start, end, parts, event_columns, count, key, lsn, "topic", make,
                                   messages)
        assert start <= stop <= end
        assert all(written(values, with_key, lsn) for values in batch[start:stop])
        assert stop == end or not written(batch[stop], with_key, lsn)
        assert messages == ["already there"] + [
            OutMessage("topic", python_key(values) if with_key else None, python_event(parts, values, lsn))
            for values in batch[start:stop]]
    # what it cannot take is left to the per-row path, untouched
    messages = []
    assert compiled.write_rows([("1", "a", "1.00", "infinity", "t")], 0, 1, parts[:3], event_columns, count, None,
                               7, "topic", OutMessage, messages) == 0
    assert compiled.write_rows([("1", "a", "1.00", "infinity", "t")], 0, 1, parts, event_columns, count, None,
                               -1, "topic", OutMessage, messages) == 0
    assert messages == []


def test_snapshot_rows_written_are_left_out_of_the_cyclic_collector():
    """A fetched row of texts and nulls that `write_rows` wrote can hold no cycle: it is left untracked (as the
    collector would after walking it once); a row it wrote that holds anything else, and a row it did not write,
    stay tracked."""
    require_compiled()
    from connectors.kafka.sink import OutMessage

    _, _, event_columns, count, _ = writers(WRITTEN_COLUMNS)
    parts = ('{"after":', ',"lsn":', ',"x":', '}')

    def row(*values):
        return tuple(list(values))  # a new tuple, tracked as psycopg's are

    texts = row("1", "a", "1.50", "infinity", None)
    other = row("2", "b", "2.50", "infinity", 1)  # the boolean's writer takes the int (a row psycopg never makes)
    not_written = row(None, "a", "1.50", "infinity", "t")  # a required column's null: the long way
    assert all(gc.is_tracked(values) for values in (texts, other, not_written))
    messages = []
    assert compiled.write_rows([texts, other, not_written], 0, 3, parts, event_columns, count, None, 7, "t",
                               OutMessage, messages) == 2
    assert not gc.is_tracked(texts) and gc.is_tracked(other) and gc.is_tracked(not_written)


def test_slots_makers_make_what_the_classes_make():
    """`compiled.slots_maker(cls)` (the WAL reader's changes and messages, the builder's Kafka messages) makes an
    instance equal to `cls(*values)`, field by field, with the same hash, tracked by the collector and holding its
    values after the caller's references are gone; a name that is no writable object slot is refused."""
    require_compiled()
    import dataclasses
    import gc

    from connectors.kafka.sink import OutMessage
    from connectors.postgres import pgoutput as p
    from connectors.postgres.compiled import slots_maker
    from connectors.postgres.replication import WalMessage
    from connectors.postgres.stream import WalChange

    rng = random.Random(29)
    for cls in (p.Insert, p.Update, p.Delete, WalMessage, WalChange, OutMessage):
        make = slots_maker(cls)
        assert make is not cls
        for _ in range(50):
            values = [rng.choice([None, rng.randrange(2**70), f"text {rng.random()}", (str(rng.random()),), b"x"])
                      for _ in dataclasses.fields(cls)]
            made, expected = make(*values), cls(*values)
            assert type(made) is cls and made == expected and repr(made) == repr(expected)
            assert hash(made) == hash(expected) and gc.is_tracked(made)
            del values, expected
            gc.collect()
            assert made == cls(*[getattr(made, field.name) for field in dataclasses.fields(cls)])
    with pytest.raises(TypeError):
        slots_maker(OutMessage)("t", b"k", b"v")  # every field, in order
    with pytest.raises(ValueError):
        compiled.slots_maker(OutMessage, ("topic", "__class__"))
    with pytest.raises(AttributeError):
        compiled.slots_maker(OutMessage, ("no_such_slot",))


def test_wal_row_changes_are_made_as_the_python_reader_makes_them():
    """`wal_row_change` (the WAL reader's compiled path) gives, for a whole XLogData message, the WalChange the Python
    reader makes from `pgoutput.decode` of its payload and the transaction's context, and None for anything else:
    other messages, truncated or malformed row changes, text that is not UTF-8, short data."""
    require_compiled()
    from connectors.postgres import pgoutput as p
    from connectors.postgres import stream
    from connectors.postgres.stream import WalChange

    rng = random.Random(31)
    header = struct.Struct(">cQQq")
    column_values = ["1", "é", "", None, UNCHANGED_TOAST, b"\x00\xff", "x" * 300]

    def row() -> bytes:
        return tuple_data([rng.choice(column_values) for _ in range(rng.randint(0, 6))])

    def payload() -> bytes:
        relation = struct.pack("!I", rng.randrange(2**32))
        shape = rng.randrange(9)
        if shape == 0:
            return b"I" + relation + b"N" + row()
        if shape == 1:
            return b"U" + relation + b"N" + row()
        if shape == 2:
            return b"U" + relation + rng.choice([b"K", b"O"]) + row() + b"N" + row()
        if shape == 3:
            return b"D" + relation + rng.choice([b"K", b"O"]) + row()
        if shape == 4:
            return b"B" + struct.pack("!QqI", 1, 2, 3)
        if shape == 5:
            return rng.choice([b"I", b"U", b"D"]) + relation + rng.choice([b"X", b"K", b"N"])
        if shape == 6:
            return b"U" + relation + b"N" + b"\x00\x01t\x00\x00\x00\x02\xc3("  # not UTF-8
        whole = rng.choice([b"I", b"U", b"D"]) + relation + rng.choice([b"N", b"K"]) + row()
        return whole[:rng.randrange(len(whole) + 1)]  # cut anywhere

    context = (100, 7, 1_700_000_000_000_000, rng.choice([None, 99]))
    for _ in range(3000):
        data = header.pack(b"w", rng.randrange(2**64), 5, 6) + payload()
        got = compiled.wal_row_change(data, context, stream.ROW_MAKERS)
        try:
            message = p.decode(data[25:])
        except Exception:  # noqa: BLE001 - the reader's Python path raises it; the compiled one gives None
            message = None
        if type(message) not in (p.Insert, p.Update, p.Delete):
            assert got is None, data
            continue
        assert type(got) is WalChange and type(got.message) is type(message), data
        assert got == WalChange(message, header.unpack_from(data)[1], *context), data
    assert compiled.wal_row_change(b"w", context, stream.ROW_MAKERS) is None
    assert compiled.wal_row_change(b"k" + bytes(40), context, stream.ROW_MAKERS) is None

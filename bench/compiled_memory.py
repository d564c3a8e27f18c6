"""Memory of the compiled row writers called over and over on the same inputs: RSS and tracemalloc's traced bytes after
each round, and their growth from the first round to the last. A missing Py_DECREF on a path the inputs take shows
as growth proportional to the calls.

    python -m bench.compiled_memory [--rounds 5] [--calls 200000]

Inputs: MariaDB's `write_event` and `write_key` over rows of every typed writer's column (the table of
tests/unit/test_binrows_typed_writers.py; NULLs and values of other types among them); `count_rows`, `decode_rows`
and `write_run` over random layouts and bodies, most of them refused (the error paths); `text_rows` over DATE,
DATETIME, DECIMAL and FLOAT texts, well-formed and not; PostgreSQL's `write_rows` and `write_row` over float8, date,
timestamptz, text and boolean texts, some of them handed back; `wal_row_change` over whole and cut Insert messages.
Needs the compiled modules (scripts/build_extensions.py).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import io
import random
import struct
import tracemalloc
from decimal import Decimal, localcontext
from types import SimpleNamespace

from bench.rss import rss_mb
from connectors.events.json_converter import string_json
from connectors.kafka.sink import OutMessage
from connectors.mysql import compiled_rows, text_rows
from connectors.mysql.compiled_rows import (
    BIT_STRING,
    DATETIME2,
    ENUM_INDEX,
    NEWDECIMAL,
    SET_BITS,
    STRING,
    TIME2,
    TIMESTAMP2,
    WRITE_CALL,
    WRITE_DATE,
    WRITE_DECIMAL,
    WRITE_DOUBLE,
    WRITE_INTEGER,
    WRITE_MICROS,
    WRITE_NULL,
    WRITE_STRING,
)
from connectors.mysql.config import MySqlConfig
from connectors.mysql.envelope import TableEvents
from connectors.postgres import stream
from connectors.postgres import types as t
from connectors.postgres.compiled import compiled as pg
from connectors.postgres.pgoutput import UNCHANGED_TOAST
from connectors.postgres.rows import RowColumn, RowMapper
from connectors.postgres.types import builtin
from tests.postgres import test_pgrows
from tests.postgres.test_types import DEFAULT
from tests.unit import test_binrows_typed_writers as typed

EOF_PACKET = b"\xfe\x00\x00\x02\x00"


def typed_row(rng: random.Random) -> dict:
    """A row of test_binrows_typed_writers.TABLE: each column's value of its type, now and then None or another's."""
    micro = rng.randrange(10**6)
    moment = datetime.datetime(rng.randint(1971, 2037), rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23),
                               rng.randint(0, 59), rng.randint(0, 59))
    row = {"id": rng.randint(-2**31, 2**31 - 1), "db": rng.choice([0.1, -0.0, 1e21, float("nan"), rng.random()]),
           "fl": rng.choice([1.5, 3.5e38, rng.random()]), "da": moment.date(), "y": rng.choice([1900, 2024]),
           "sr": moment}
    row.update({name: Decimal(rng.randint(-10**9, 10**9)).scaleb(-scale)
                for name, (_, scale) in typed.DECIMALS.items()})
    row.update({f"t{fsp}": moment.replace(microsecond=int(f"{micro:06d}"[:fsp].ljust(6, "0")) if fsp else 0)
                for fsp in range(7)})
    row.update({f"s{fsp}": moment for fsp in range(7)})
    row.update({f"h{fsp}": datetime.timedelta(seconds=rng.randint(-3000000, 3000000)) for fsp in (0, 3, 6)})
    return {name: rng.choice([None, "text", 1.5]) if rng.random() < 0.02 else value for name, value in row.items()}


def layout_column(rng: random.Random, number: int) -> tuple:
    """A random compiled_rows.layout column (name, kind, size, encoding or scale or values)."""
    name, kind = f"c{number}", rng.randrange(BIT_STRING + 1)
    if kind == BIT_STRING:
        return name, kind, rng.randint(1, 64), None
    if kind in (ENUM_INDEX, SET_BITS):
        return name, kind, rng.choice([1, 2]), tuple(f"v{n}" for n in range(rng.randint(0, 16)))
    if kind == STRING:
        return name, kind, rng.choice([1, 2]), rng.choice(["utf-8", "latin-1", None])
    if kind in (DATETIME2, TIMESTAMP2, TIME2):
        return name, kind, rng.randint(0, 6), None
    if kind == NEWDECIMAL:
        precision = rng.randint(1, 65)
        return name, kind, precision, rng.randint(0, min(precision, 30))
    return name, kind, 0, None


def any_json(value) -> str:
    return "null" if value is None else string_json(repr(value))


def run_writers(rng: random.Random, names: list[str]) -> tuple:
    """(name, prefix, kind, write) of some of `names`, each a compiled writer kind or a call."""
    kinds = [WRITE_CALL, WRITE_INTEGER, WRITE_STRING | WRITE_NULL, WRITE_DOUBLE, WRITE_DECIMAL | 2 << 8, WRITE_DATE,
             WRITE_MICROS | WRITE_NULL]
    picked = [name for name in names if rng.random() < 0.8]
    return tuple((name, f'{"," if i else ""}"{name}":', rng.choice(kinds), any_json) for i, name in enumerate(picked))


def lenenc(value: bytes | None) -> bytes:
    """A text result's value as the protocol frames it (short values only)."""
    return b"\xfb" if value is None else bytes([len(value)]) + value


def framed(payloads: list[bytes]) -> bytes:
    """Payloads as packets numbered from 1."""
    return b"".join(len(p).to_bytes(3, "little") + bytes([(1 + n) % 256]) + p for n, p in enumerate(payloads))


def mariadb_rows(rng: random.Random):
    """TableEvents.append_streamed (the compiled write_event and write_key) of updates of typed rows (a row one of
    the column writers refuses raises: left out)."""
    events = TableEvents(MySqlConfig.from_properties(typed.BASE), typed.TABLE)
    parts = ('{"before":', ',"after":', ',"row":', "}")
    rows = []
    for _ in range(2000):
        row = typed_row(rng)
        try:
            events.append_streamed([], parts, "u", row, row, 0)
        except Exception:  # noqa: BLE001 - a column writer refusing another type's value: the row is left out
            row = None
        if row is not None:
            rows.append(row)

    def call(i: int) -> None:
        row = rows[i % len(rows)]
        events.append_streamed([], parts, "u", row, row, i)
    return call


def mariadb_runs(rng: random.Random):
    """count_rows, decode_rows and (for a counted body) write_run of random events."""
    module, cases = compiled_rows.compiled, []
    parts = ('{"before":', ',"after":', ',"row":', "é}")
    for _ in range(3000):
        count = rng.randint(1, 20)
        layout = tuple(layout_column(rng, number) for number in range(count))
        op = rng.choice("cud")
        names = [column[0] for column in layout]
        writers, key_writers = run_writers(rng, names), run_writers(rng, names[:2]) if rng.random() < 0.8 else None
        at = {name: index for index, name in enumerate(names)}
        key_names = tuple(name for name, *_ in key_writers or ())
        table = (writers, tuple(at.get(name, -1) for name, *_ in writers), key_writers,
                 tuple(at.get(name, -1) for name, *_ in key_writers or ()), '{"schema":{},"payload":', "}",
                 tuple(at.get(name, -1) for name in key_names), "topic", lambda *fields: SimpleNamespace(f=fields),
                 rng.random() < 0.5)
        cases.append((rng.randbytes(rng.randint(0, 200)), layout, rng.randbytes((count + 7) // 8),
                      rng.randbytes((count + 7) // 8) if op == "u" else None, {"c": 0, "u": 1, "d": 2}[op], table))

    def call(i: int) -> None:
        body, layout, present, after, op, table = cases[i % len(cases)]
        counted = module.count_rows(body, layout, present, after)
        try:
            module.decode_rows(body, layout, present, after)
        except ValueError:
            pass
        if counted is not None:
            module.write_run(body, layout, present, after, 0, counted, op, parts, table, [])
    return call


def mariadb_text_rows(rng: random.Random):
    """text_rows of result sets of typed columns, one of them with rows its converters refuse."""
    kinds = bytes([text_rows.INTEGER, text_rows.UTF8, text_rows.BYTES, text_rows.DATE, text_rows.DATETIME,
                   text_rows.DECIMAL, text_rows.FLOAT, text_rows.CALL])
    calls = (None, None, None, bytes, bytes, None, None, bytes)
    values = [[b"12", b"-5", None], ["é".encode(), b"abc", None], [b"\x00\xff", None],
              [b"2024-01-02", b"0000-00-00", b"2024-13-01", None],
              [b"2024-01-02 03:04:05.123456", b"2024-01-02 03:04:05", b"0000-00-00 00:00:00", None],
              [b"12.50", b"-0.01", None], [b"1.5", b"1e308", b"nan", None], [b"x", None]]
    good = [b"".join(lenenc(rng.choice(choices)) for choices in values) for _ in range(20)]
    bad = [*good[:5], lenenc(b"12") + lenenc(b"\xff")]  # not UTF-8
    results = [framed([*good, EOF_PACKET]), framed([*bad, EOF_PACKET])]

    def call(i: int) -> None:
        try:
            text_rows.read_text_rows(io.BytesIO(results[i % 2]).read, 1, kinds, calls)
        except ValueError:
            pass
    return call


def postgres_rows(rng: random.Random):
    """write_rows of up to 10 rows of a batch (write_row of the row it stops at)."""
    columns = [RowColumn("i", builtin(t.INT4), optional=False), RowColumn("x", builtin(t.FLOAT8)),
               RowColumn("d", builtin(t.DATE)), RowColumn("s", builtin(t.TEXT)), RowColumn("b", builtin(t.BOOL)),
               RowColumn("ts", builtin(t.TIMESTAMPTZ))]
    rows = RowMapper("p.public.t.Value", columns, DEFAULT)
    written, count = rows.compiled_columns(rows.schema)
    with localcontext() as context:
        context.prec = 60
        doubles = [test_pgrows.random_double_text(rng) for _ in range(500)] + test_pgrows.ODD_DOUBLES
    batch = [(str(rng.randint(-9, 99999)), rng.choice([*doubles, None]),
              rng.choice([*test_pgrows.DATE_TEXTS, *test_pgrows.ODD_DATES, None]), rng.choice(["abc", "é", 'q"', None]),
              rng.choice(["t", "f", None]), rng.choice(["2024-01-02 03:04:05.5+00", "infinity", None]))
             for _ in range(100)]
    parts = ('{"before":null,"after":', ',"sequence":"[null,\\"', '\\"]","lsn":', ',"op":"r"}')
    key = ('{"k":', written[:1], "}")

    def call(i: int) -> None:
        at = i % len(batch)
        end = min(at + 10, len(batch))
        stop = pg.write_rows(batch, at, end, parts, written, count, key, 7, "topic", OutMessage, [])
        if stop < end:
            pg.write_row(batch[stop], written, count)
    return call


def postgres_wal(rng: random.Random):
    """wal_row_change of whole and cut Insert messages."""
    header = struct.Struct(">cQQq")
    messages = [header.pack(b"w", rng.randrange(2**64), 5, 6) + b"I" + struct.pack("!I", 9) + b"N" +
                test_pgrows.tuple_data([rng.choice(["1", "é", None, UNCHANGED_TOAST, b"\x00\xff", "x" * 300])
                                        for _ in range(20)]) for _ in range(200)]
    messages += [message[:rng.randrange(len(message))] for message in messages[:50]]
    context = (100, 7, 1_700_000_000_000_000, None)

    def call(i: int) -> None:
        pg.wal_row_change(messages[i % len(messages)], context, stream.ROW_MAKERS)
    return call


LOOPS = {"mariadb write_event + write_key": mariadb_rows, "mariadb count_rows + decode_rows + write_run": mariadb_runs,
         "mariadb text_rows (20-row results)": mariadb_text_rows,
         "postgres write_rows (+ write_row)": postgres_rows, "postgres wal_row_change": postgres_wal}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200_000, help="calls per round")
    args = parser.parse_args()
    if compiled_rows.compiled is None or pg is None:
        raise SystemExit("the compiled modules are not built (scripts/build_extensions.py)")
    for label, make in LOOPS.items():
        call = make(random.Random(label))
        for i in range(args.calls // 10):  # the caches and free lists settle first
            call(i)
        gc.collect()
        tracemalloc.start()
        figures = []
        for _ in range(args.rounds):
            for i in range(args.calls):
                call(i)
            gc.collect()
            figures.append((rss_mb("self"), tracemalloc.get_traced_memory()[0] / 1e6))
        tracemalloc.stop()
        (rss_first, traced_first), (rss_last, traced_last) = figures[0], figures[-1]
        print(f"{label}: {args.rounds * args.calls:,} calls; RSS MB after each round "
              f"{' / '.join(f'{rss:.1f}' for rss, _ in figures)}, growth {rss_last - rss_first:+.1f} MB "
              f"(ratio {rss_last / rss_first:.3f}); traced {traced_first:.2f} -> {traced_last:.2f} MB", flush=True)


if __name__ == "__main__":
    main()

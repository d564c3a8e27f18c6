"""The compiled result-set reader (connectors/mysql/_binrows `text_rows`, csrc/textrows.c) on packets no server
sent: random row payloads framed as packets give the rows or a ValueError (connectors/mysql/text_rows.py then closes
the connection and raises pymysql's InternalError), never another error, a crash or a loop; a connection that ends in
the middle of a packet is a ConnectionResetError; well-formed rows decode to what pymysql's parsing gives. Without the
module the test skips, except in CI."""

from __future__ import annotations

import io
import random

import pytest

from connectors.mysql import text_rows
from tests.compiled_modules import require_built

EOF_PACKET = b"\xfe\x00\x00\x02\x00"


def _framed(payloads: list[bytes], first: int = 1) -> bytes:
    return b"".join(len(p).to_bytes(3, "little") + bytes([(first + n) % 256]) + p for n, p in enumerate(payloads))


def _lenenc(value: bytes | None) -> bytes:
    if value is None:
        return b"\xfb"
    n = len(value)
    if n < 251:
        return bytes([n]) + value
    if n < 2**16:
        return b"\xfc" + n.to_bytes(2, "little") + value
    return b"\xfd" + n.to_bytes(3, "little") + value


def test_well_formed_rows_decode_as_pymysql_reads_them():
    require_built(text_rows.read_text_rows, "connectors/mysql/_binrows")
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    kinds = bytes([text_rows.INTEGER, text_rows.UTF8, text_rows.BYTES, text_rows.CALL])
    calls = (None, None, None, lambda data: ("called", data))
    rows = [(rng.choice([None, rng.randint(-2**63, 2**64 - 1)]), rng.choice([None, "é😀" * rng.randint(0, 40000)]),
             rng.choice([None, rng.randbytes(rng.choice([0, 250, 251, 65535, 65536]))]),
             rng.choice([None, b"1.5"])) for _ in range(30)]
    payloads = [b"".join(_lenenc(None if v is None else str(v).encode() if i == 0 else v.encode() if i == 1 else v)
                         for i, v in enumerate(row)) for row in rows]
    stream = io.BytesIO(_framed([*payloads, EOF_PACKET]) + b"next")
    read, last, sequence = text_rows.read_text_rows(stream.read, 1, kinds, calls)
    assert read == [(*row[:3], None if row[3] is None else ("called", row[3])) for row in rows], seed
    assert last == EOF_PACKET and sequence == (len(rows) + 2) % 256
    assert stream.read() == b"next"  # nothing read past the rows' end


def test_random_payloads_give_rows_or_a_value_error():
    require_built(text_rows.read_text_rows, "connectors/mysql/_binrows")
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    decoded = 0
    for _ in range(5_000):
        count = rng.randint(1, 5)
        kinds = bytes(rng.choice([text_rows.INTEGER, text_rows.UTF8, text_rows.BYTES]) for _ in range(count))
        payloads = [rng.randbytes(rng.randint(0, 30)) for _ in range(rng.randint(0, 4))]
        stream = io.BytesIO(_framed([*payloads, EOF_PACKET]))
        try:
            rows, _, _ = text_rows.read_text_rows(stream.read, 1, kinds, (None,) * count)
        except ValueError:  # UnicodeDecodeError too: what pymysql's decode raises
            continue
        decoded += 1
        assert all(len(row) == count for row in rows), seed
    assert decoded > 0, seed


@pytest.mark.parametrize("cut", [2, 4, 6])
def test_a_connection_ending_mid_packet_is_a_connection_error(cut):
    require_built(text_rows.read_text_rows, "connectors/mysql/_binrows")
    stream = io.BytesIO(_framed([b"\x011", EOF_PACKET])[:cut + 4] if cut > 4 else _framed([b"\x011"])[:cut])
    with pytest.raises(ConnectionResetError):
        text_rows.read_text_rows(stream.read, 1, bytes([text_rows.INTEGER]), (None,))


def test_a_packet_out_of_sequence_is_refused():
    require_built(text_rows.read_text_rows, "connectors/mysql/_binrows")
    stream = io.BytesIO(_framed([b"\x011", EOF_PACKET], first=5))
    with pytest.raises(ValueError, match="sequence"):
        text_rows.read_text_rows(stream.read, 1, bytes([text_rows.INTEGER]), (None,))


def test_a_row_of_16_mb_or_more_is_joined_from_its_packets():
    require_built(text_rows.read_text_rows, "connectors/mysql/_binrows")
    value = random.Random(1).randbytes(2**24 + 10)
    payload = b"\xfe" + len(value).to_bytes(8, "little") + value
    whole = 0xFFFFFF
    stream = io.BytesIO(_framed([payload[:whole], payload[whole:], EOF_PACKET]))
    rows, _, sequence = text_rows.read_text_rows(stream.read, 1, bytes([text_rows.BYTES]), (None,))
    assert rows == [(value,)] and sequence == 4

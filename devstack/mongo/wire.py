"""MongoDB wire protocol: message framing for OP_MSG (2013), legacy OP_QUERY (2004) and OP_REPLY (1)."""

from __future__ import annotations

import struct

import bson

from devstack.mongo import rawstrings

OP_REPLY = 1
OP_QUERY = 2004
OP_COMPRESSED = 2012
OP_MSG = 2013

CHECKSUM_PRESENT = 1 << 0
MORE_TO_COME = 1 << 1
EXHAUST_ALLOWED = 1 << 16

QUERY_SECONDARY_OK = 1 << 2

_HEADER = struct.Struct("<iiii")
_INT = struct.Struct("<i")
_UINT = struct.Struct("<I")
_REPLY = struct.Struct("<iqii")

# Dates outside datetime's years 1-9999 as DatetimeMS, string bytes that are not UTF-8 kept (rawstrings.py).
CODEC = rawstrings.CODEC

MAX_MESSAGE_SIZE = 48_000_000


class ProtocolError(Exception):
    pass


def parse_header(data: bytes) -> tuple[int, int, int, int]:
    return _HEADER.unpack(data)


def parse_op_msg(body: bytes) -> tuple[int, dict]:
    """Parse an OP_MSG body (after the header): returns (flags, command document with sequences merged)."""
    flags = _UINT.unpack_from(body, 0)[0]
    end = len(body) - (4 if flags & CHECKSUM_PRESENT else 0)
    pos = 4
    doc = None
    sequences: dict[str, list] = {}
    while pos < end:
        kind = body[pos]
        pos += 1
        if kind == 0:
            size = _INT.unpack_from(body, pos)[0]
            doc = bson.decode(body[pos:pos + size], codec_options=CODEC)
            pos += size
        elif kind == 1:
            size = _INT.unpack_from(body, pos)[0]
            section_end = pos + size
            p = pos + 4
            nul = body.index(b"\x00", p)
            ident = body[p:nul].decode()
            p = nul + 1
            docs = bson.decode_all(body[p:section_end], codec_options=CODEC)
            sequences.setdefault(ident, []).extend(docs)
            pos = section_end
        else:
            raise ProtocolError(f"unknown OP_MSG section kind {kind}")
    if doc is None:
        raise ProtocolError("OP_MSG without a body section")
    for ident, docs in sequences.items():
        doc[ident] = docs
    return flags, doc


def parse_op_query(body: bytes) -> tuple[int, str, int, int, dict]:
    flags = _INT.unpack_from(body, 0)[0]
    nul = body.index(b"\x00", 4)
    collection = body[4:nul].decode()
    pos = nul + 1
    skip, n_return = struct.unpack_from("<ii", body, pos)
    pos += 8
    size = _INT.unpack_from(body, pos)[0]
    query = bson.decode(body[pos:pos + size], codec_options=CODEC)
    return flags, collection, skip, n_return, query


def encode_op_msg(request_id: int, response_to: int, doc, flags: int = 0, encoded: bytes | None = None) -> bytes:
    payload = encoded if encoded is not None else rawstrings.encode(doc)
    length = 16 + 4 + 1 + len(payload)
    return b"".join((_HEADER.pack(length, request_id, response_to, OP_MSG), _UINT.pack(flags), b"\x00", payload))


def op_msg_parts(request_id: int, response_to: int, payload: bytes, flags: int = 0) -> tuple[bytes, bytes]:
    """Header and payload of an OP_MSG reply, written separately so the payload is not copied again."""
    length = 16 + 4 + 1 + len(payload)
    return _HEADER.pack(length, request_id, response_to, OP_MSG) + _UINT.pack(flags) + b"\x00", payload


def encode_op_reply(request_id: int, response_to: int, docs: list, cursor_id: int = 0, flags: int = 0) -> bytes:
    payload = b"".join(rawstrings.encode(d) for d in docs)
    length = 16 + 20 + len(payload)
    return b"".join((_HEADER.pack(length, request_id, response_to, OP_REPLY),
                     _REPLY.pack(flags, cursor_id, 0, len(docs)), payload))

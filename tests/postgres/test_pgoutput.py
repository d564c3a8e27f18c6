"""pgoutput decoding over payloads captured from a real PostgreSQL 15 (pgoutput_captured.py), no server needed.

The captures came from: a table t(id int primary key, name text, m mood, big text) with the enum mood and
REPLICA IDENTITY DEFAULT, a table f(id int primary key, v text) with REPLICA IDENTITY FULL, in publication p;
rows inserted, updated (a TOASTed column left unchanged, a key changed), deleted; logical messages; TRUNCATE t, f
RESTART IDENTITY; a transaction under replication origin 'remote_a' at 0/ABCDEF; and with proto_version 2 and
logical_decoding_work_mem=64kB a large transaction streamed (committed) and another streamed and rolled back.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from connectors.postgres import pgoutput as p
from tests.postgres.pgoutput_captured import CAPTURED


def payload(name: str) -> bytes:
    return bytes.fromhex(CAPTURED[name])


def test_begin_and_commit_of_one_transaction():
    begin = p.decode(payload("BEGIN"))
    commit = p.decode(payload("COMMIT"))
    assert isinstance(begin, p.Begin) and isinstance(commit, p.Commit)
    assert begin == p.Begin(final_lsn=35413856, commit_ts_us=1795462242743809, xid=763)
    assert commit == p.Commit(flags=0, commit_lsn=35413856, end_lsn=35413904, commit_ts_us=1795462242743809)
    assert datetime.fromtimestamp(commit.commit_ts_us / 1e6, UTC).date().isoformat() == "2026-11-23"
    assert p.lsn_to_text(commit.end_lsn) == "0/21C5F90"


def test_relation_and_type():
    relation = p.decode(payload("RELATION_T"))
    assert relation.namespace == "public" and relation.name == "t" and relation.replica_identity == "d"
    assert [(c.name, c.type_oid, c.type_modifier, c.key) for c in relation.columns] == [
        ("id", 23, -1, True), ("name", 25, -1, False), ("m", 16426, -1, False), ("big", 25, -1, False),
    ]
    assert relation.xid is None
    full = p.decode(payload("RELATION_F_FULL"))
    # under REPLICA IDENTITY FULL every column is flagged as part of the identity, not only the primary key
    assert full.replica_identity == "f" and [c.key for c in full.columns] == [True, True]
    assert p.decode(payload("TYPE")) == p.Type(oid=16426, namespace="public", name="mood")


def test_insert_update_delete_tuples():
    insert = p.decode(payload("INSERT_NULL"))
    assert insert == p.Insert(relation_id=16433, new=("2", None, "sad", "b"))
    toast = p.decode(payload("UPDATE_TOAST"))
    assert toast.new == ("1", "b", "ok", p.UNCHANGED_TOAST) and toast.old is None and toast.old_kind is None
    key_change = p.decode(payload("UPDATE_KEY"))
    assert key_change.old_kind == "K" and key_change.old == ("2", None, None, None)
    assert key_change.new == ("3", None, "sad", "b")
    full = p.decode(payload("UPDATE_FULL"))
    assert (full.old_kind, full.old, full.new) == ("O", ("1", "x"), ("1", "y"))
    assert p.decode(payload("DELETE_KEY")) == p.Delete(relation_id=16433, old=("3", None, None, None), old_kind="K")
    assert p.decode(payload("DELETE_FULL")) == p.Delete(relation_id=16440, old=("1", "y"), old_kind="O")


def test_truncate_origin_and_messages():
    assert p.decode(payload("TRUNCATE")) == p.Truncate((16433, 16440), cascade=False, restart_identity=True)
    assert p.decode(payload("ORIGIN")) == p.Origin(commit_lsn=0xABCDEF, name="remote_a")
    assert p.decode(payload("MESSAGE_TX")) == p.LogicalMessage(True, 35415032, "pfx", b"hello")
    non_tx = p.decode(payload("MESSAGE_NONTX"))
    assert (non_tx.transactional, non_tx.prefix, non_tx.content) == (False, "nt", b"x")


def test_streamed_transaction_protocol_2():
    decoder = p.Decoder()
    assert decoder.decode(payload("STREAM_START_FIRST")) == p.StreamStart(xid=809, first_segment=True)
    relation = decoder.decode(payload("STREAM_RELATION"))
    assert relation.xid == 809 and relation.name == "f"
    insert = decoder.decode(payload("STREAM_INSERT"))
    assert insert.xid == 809 and insert.new == ("10", "z" * 100)
    assert decoder.decode(payload("STREAM_STOP")) == p.StreamStop()
    assert not decoder.in_stream
    commit = decoder.decode(payload("STREAM_COMMIT"))
    assert commit == p.StreamCommit(
        xid=809, flags=0, commit_lsn=46260272, end_lsn=46260320, commit_ts_us=1795462253774810
    )
    assert p.decode(payload("STREAM_ABORT")) == p.StreamAbort(xid=810, subxid=810)
    # the xid is only there inside a stream block: read as a plain Insert the bytes do not parse
    with pytest.raises(p.PgOutputError):
        p.decode(payload("STREAM_INSERT"), in_stream=False)


def test_binary_column_values():
    header = b"I" + (16433).to_bytes(4, "big") + b"N" + (2).to_bytes(2, "big")
    data = header + b"b" + (3).to_bytes(4, "big") + b"\x00\x01\x02" + b"n"
    assert p.decode(data) == p.Insert(relation_id=16433, new=(b"\x00\x01\x02", None))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"Z", "unknown pgoutput message type 'Z'"),
        (bytes.fromhex(CAPTURED["BEGIN"])[:9], "ends early"),
        (b"I" + (1).to_bytes(4, "big") + b"N" + (1).to_bytes(2, "big") + b"x", "unknown tuple column kind"),
        (b"D" + (1).to_bytes(4, "big") + b"N", "Delete without an old key"),
    ],
)
def test_malformed_payloads_are_refused(data, message):
    with pytest.raises(p.PgOutputError, match=message):
        p.decode(data)


def test_lsn_text():
    assert p.lsn_from_text("16/B374D848") == (0x16 << 32) | 0xB374D848
    assert p.lsn_to_text((0x16 << 32) | 0xB374D848) == "16/B374D848"
    assert p.lsn_to_text(0) == "0/0"
    with pytest.raises(ValueError, match="not an LSN"):
        p.lsn_from_text("nope")

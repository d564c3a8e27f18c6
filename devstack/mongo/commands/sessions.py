"""Sessions and transactions: startSession, endSessions, commitTransaction, abortTransaction."""

from __future__ import annotations

import uuid

from bson.binary import Binary, UuidRepresentation

from devstack.mongo.commands import command
from devstack.mongo.errors import CommandError
from devstack.mongo.transactions import TRANSIENT


@command("startSession")
def start_session(ctx):
    lsid = {"id": Binary.from_uuid(uuid.uuid4(), UuidRepresentation.STANDARD)}
    ctx.rs.session(lsid)
    return {"id": lsid, "timeoutMinutes": 30}


@command("endSessions")
def end_sessions(ctx):
    for lsid in ctx.target or []:
        if isinstance(lsid, dict):
            ctx.rs.end_session(lsid)
    return {}


@command("refreshSessions")
def refresh_sessions(ctx):
    for lsid in ctx.target or []:
        if isinstance(lsid, dict):
            ctx.rs.session(lsid)
    return {}


@command("killSessions")
def kill_sessions(ctx):
    for lsid in ctx.target or []:
        if isinstance(lsid, dict):
            ctx.rs.end_session(lsid)
    return {}


@command("killAllSessions")
def kill_all_sessions(ctx):
    for s in list(ctx.rs.sessions.values()):
        ctx.rs.end_session(s.lsid)
    return {}


@command("killAllSessionsByPattern")
def kill_all_sessions_by_pattern(ctx):
    return kill_all_sessions(ctx)


@command("commitTransaction", kind="write", txn=True)
def commit_transaction(ctx):
    txn = ctx.txn
    if txn is None:
        raise CommandError(251, "Given transaction number does not match any in-progress transactions.",
                           labels=[TRANSIENT])
    if txn.state == "aborted":
        raise CommandError(251, f"Transaction with {{ txnNumber: {txn.txn_number} }} has been aborted.",
                           labels=[TRANSIENT])
    ts = ctx.rs.commit_transaction(txn)
    ctx.op_ts = ts
    return {}


@command("abortTransaction", kind="write", txn=True)
def abort_transaction(ctx):
    txn = ctx.txn
    if txn is None:
        raise CommandError(251, "Given transaction number does not match any in-progress transactions.",
                           labels=[TRANSIENT])
    if txn.state == "committed":
        raise CommandError(256, f"Transaction with {{ txnNumber: {txn.txn_number} }} has been committed.")
    if txn.state == "aborted":
        raise CommandError(251, f"Transaction with {{ txnNumber: {txn.txn_number} }} has been aborted.",
                           labels=[TRANSIENT])
    ctx.rs.abort_transaction(txn, None)
    return {}

"""Running one command: fail points, member state, sessions and transactions, and MongoDB's reply envelope
(`ok`, `errorLabels`, `operationTime`, `$clusterTime`)."""

from __future__ import annotations

import asyncio
import inspect
import logging
import traceback

from bson.binary import Binary
from bson.int64 import Int64

from devstack.mongo.bsonutil import COLLATION, LET_VARS, collation_normalizer, to_int
from devstack.mongo.commands import COMMANDS, load
from devstack.mongo.errors import RETRYABLE_WRITE_CODES, CommandError, code_name
from devstack.mongo.transactions import TRANSIENT
from devstack.mongo.writes import Writer

log = logging.getLogger("devstack.mongo")
load()

_ZERO_HASH = Binary(b"\x00" * 20, 0)
TXN_CONTROL = ("commitTransaction", "abortTransaction")
# Codes for which mongod labels a transaction statement's error TransientTransactionError (WriteConflict,
# LockTimeout, PreparedTransactionInProgress, snapshot errors, NoSuchTransaction)
TRANSIENT_CODES = {112, 24, 267, 239, 246, 251}


class CloseConnection(Exception):
    """Close the client's socket without replying (failCommand closeConnection, killed members)."""


class Context:
    def __init__(self, rs, member, conn, cmd: dict, name: str, db: str):
        self.rs = rs
        self.member = member
        self.conn = conn
        self.cmd = cmd
        self.name = name
        self.db = db
        self.session = None
        self.txn = None
        self.lsid = cmd.get("lsid")
        self.txn_number = None
        self.op_ts = None
        self.after_reply = None   # coroutine function run after the reply is sent

    def writer(self) -> Writer:
        w = Writer(self.rs, self.db, txn=self.txn, lsid=self.lsid,
                   txn_number=self.txn_number if self.txn is None else None)
        w.bypass_validation = bool(self.cmd.get("bypassDocumentValidation"))
        return w

    def arg(self, key, default=None):
        return self.cmd.get(key, default)

    @property
    def target(self):
        return self.cmd[self.name]


def cluster_time_doc(rs) -> dict:
    return {"clusterTime": rs.cluster_time, "signature": {"hash": _ZERO_HASH, "keyId": Int64(0)}}


def _read_allowed(member, cmd, secondary_ok_flag: bool) -> bool:
    if member.is_primary:
        return True
    if not member.is_secondary:
        return False
    if secondary_ok_flag:
        return True
    pref = cmd.get("$readPreference")
    if isinstance(pref, dict):
        return pref.get("mode", "primary") != "primary"
    return False


async def run_command(member, conn, cmd: dict, op_query: bool = False, secondary_ok: bool = False,
                      db: str | None = None) -> dict:
    rs = member.rs
    if not cmd:
        return _envelope(rs, CommandError(59, "no such command: ''").to_reply(), None)
    name = next(iter(cmd))
    db = db or cmd.get("$db") or "admin"
    if "$clusterTime" in cmd:
        ct = cmd["$clusterTime"]
        if isinstance(ct, dict):
            rs.observe_cluster_time(ct.get("clusterTime"))
    info = COMMANDS.get(name)
    if info is None and name.lower() in ("ismaster", "findandmodify"):
        info = COMMANDS.get({"ismaster": "isMaster", "findandmodify": "findAndModify"}[name.lower()])
    canonical = info.name if info else name
    ctx = Context(rs, member, conn, cmd, name, db)
    wc_error = None
    fp_labels = None
    fp = member.failpoints.fail_command(canonical if canonical not in ("isMaster",) else name,
                                        conn.app_name if conn else None)
    if fp is not None:
        if fp.get("blockConnection"):
            await asyncio.sleep((to_int(fp.get("blockTimeMS")) or 0) / 1000.0)
        if fp.get("closeConnection"):
            raise CloseConnection()
        if "errorCode" in fp:
            code = to_int(fp["errorCode"])
            err = CommandError(code, "Failing command via 'failCommand' failpoint")
            reply = err.to_reply()
            labels = fp.get("errorLabels")
            if labels is not None:
                if labels:
                    reply["errorLabels"] = list(labels)
            else:
                reply_labels = _auto_labels(ctx, info, code, fp_injected=True)
                if reply_labels:
                    reply["errorLabels"] = reply_labels
            return _envelope(rs, reply, None, member=member)
        if "writeConcernError" in fp:
            wc_error = fp["writeConcernError"]
        fp_labels = fp.get("errorLabels")
    try:
        if info is None:
            raise CommandError(59, f"no such command: '{name}'")
        if rs.standalone and info.name in REPLICATION_ONLY:
            raise CommandError(76, "not running with --replSet")
        _check_state(ctx, info, secondary_ok)
        cached = _sessions(ctx, info)
        if cached is not None:
            return _envelope(rs, dict(cached), ctx.op_ts)
        tokens = _command_settings(cmd)
        try:
            result = info.handler(ctx)
            if inspect.isawaitable(result):
                result = await result
        finally:
            for var, token in tokens:
                var.reset(token)
        reply = dict(result)
        if ctx.after_reply is not None and conn is not None:
            conn.after_reply = ctx.after_reply
        if "ok" not in reply:
            reply["ok"] = 1.0
        if ctx.txn is not None and reply.get("writeErrors"):
            rs.abort_transaction(ctx.txn, None)
    except CommandError as err:
        reply = err.to_reply()
        labels = list(err.labels)
        for label in _auto_labels(ctx, info, err.code):
            if label not in labels:
                labels.append(label)
        if labels:
            reply["errorLabels"] = labels
        if ctx.txn is not None and name not in TXN_CONTROL and err.code not in (251,):
            rs.abort_transaction(ctx.txn, None)
    except CloseConnection:
        raise
    except Exception as exc:  # a bug in the emulator: report like the server reports internal errors
        log.error("command %s failed: %s", name, traceback.format_exc())
        reply = CommandError(1, f"emulator internal error in {name}: {exc!r}").to_reply()
    if wc_error is None and reply.get("ok") and info is not None and (info.kind == "write" or
                                                                     info.name in TXN_CONTROL):
        wc_error = await _write_concern_error(rs, cmd.get("writeConcern"))
    if wc_error is not None and reply.get("ok"):
        reply["writeConcernError"] = dict(wc_error)
        labels = list(fp_labels) if fp_labels is not None else []
        if fp_labels is None and info is not None and _is_retryable_write(ctx, info) and \
                to_int(wc_error.get("code")) in RETRYABLE_WRITE_CODES:
            labels.append("RetryableWriteError")
        if labels:
            reply["errorLabels"] = labels
    elif fp_labels is not None and fp_labels and reply.get("ok") and "errorLabels" not in reply:
        reply["errorLabels"] = list(fp_labels)
    if info is not None and info.retryable_write and ctx.session is not None and ctx.txn is None \
            and ctx.txn_number is not None and reply.get("ok") and "writeConcernError" not in reply:
        # like mongod, only the session's latest retryable write can be retried: keep just that reply
        ctx.session.retry_results = {ctx.txn_number: {k: v for k, v in reply.items()}}
    return _envelope(rs, reply, ctx.op_ts, ctx, member=member)


async def _write_concern_error(rs, wc) -> dict | None:
    """What waiting for the requested write concern yields (replication itself is immediate)."""
    if not isinstance(wc, dict) or "w" not in wc:
        return None
    w = wc["w"]
    n = len(rs.members)
    if isinstance(w, str):
        if w == "majority":
            need = rs.majority()
        else:
            return {"code": 79, "codeName": "UnknownReplWriteConcern",
                    "errmsg": f"unrecognized write concern mode: {w}"}
    else:
        need = to_int(w) or 0
        if need > n:
            return {"code": 100, "codeName": "UnsatisfiableWriteConcern", "errmsg": "Not enough data-bearing nodes"}
    if rs.alive_count() >= need:
        return None
    timeout = (to_int(wc.get("wtimeout")) or 0) / 1000.0
    deadline = asyncio.get_running_loop().time() + (timeout if timeout else 10.0)
    while asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
        if rs.alive_count() >= need:
            return None
    return {"code": 64, "codeName": "WriteConcernFailed", "errmsg": "waiting for replication timed out",
            "errInfo": {"wtimeout": True, "writeConcern": dict(wc)}}


def _command_settings(cmd) -> list:
    """Set the collation and `let` variables the command asks for (contextvars read by matcher/sorter)."""
    tokens = []
    collation = cmd.get("collation")
    if collation is None:
        for field in ("updates", "deletes"):
            stmts = cmd.get(field)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], dict) and "collation" in stmts[0]:
                collation = stmts[0]["collation"]
    norm = collation_normalizer(collation)
    if norm is not None:
        tokens.append((COLLATION, COLLATION.set(norm)))
    let = cmd.get("let")
    if isinstance(let, dict) and let:
        from devstack.mongo.expressions import evaluate_let

        tokens.append((LET_VARS, LET_VARS.set(evaluate_let(let))))
    return tokens


def _maybe_abort_txn(ctx, cmd, rs, code):
    if cmd.get("autocommit") is False and ctx.name not in TXN_CONTROL and "lsid" in cmd:
        session = rs.sessions.get(_session_key(cmd["lsid"]))
        if session is not None and session.txn is not None:
            rs.abort_transaction(session.txn, None)


def _session_key(lsid):
    from devstack.mongo.bsonutil import hash_key

    return hash_key(lsid.get("id")) if isinstance(lsid, dict) else None


def _is_retryable_write(ctx, info) -> bool:
    if info.name in TXN_CONTROL:
        return True
    return info.retryable_write and ctx.cmd.get("txnNumber") is not None and ctx.cmd.get("autocommit") is None


def _auto_labels(ctx, info, code, fp_injected=False) -> list:
    labels = []
    in_txn = ctx.cmd.get("autocommit") is False
    if info is not None and _is_retryable_write(ctx, info) and code in RETRYABLE_WRITE_CODES:
        if not (in_txn and info.name not in TXN_CONTROL):
            labels.append("RetryableWriteError")
    if in_txn and info is not None and code in TRANSIENT_CODES:
        labels.append(TRANSIENT)
    if not fp_injected and info is not None and _is_change_stream(ctx):
        if code in _RESUMABLE:
            labels.append("ResumableChangeStreamError")
        elif code in (280, 286):
            labels.append("NonResumableChangeStreamError")
    return labels


_RESUMABLE = {6, 7, 89, 91, 133, 150, 189, 234, 262, 9001, 10107, 11600, 11602, 13388, 13435, 13436, 63}


def _is_change_stream(ctx) -> bool:
    if ctx.name == "getMore":
        cur = ctx.member.cursors.cursors.get(int(ctx.cmd.get("getMore") or 0)) if ctx.cmd.get("getMore") else None
        return bool(cur is not None and getattr(cur, "tailable", False)) or bool(
            getattr(ctx, "change_stream", False))
    if ctx.name == "aggregate":
        pipeline = ctx.cmd.get("pipeline")
        return bool(pipeline and isinstance(pipeline[0], dict) and "$changeStream" in pipeline[0])
    return False


def _check_state(ctx, info, secondary_ok):
    member = ctx.member
    if info.kind == "write" or (info.kind == "read" and ctx.cmd.get("autocommit") is False):
        if not member.is_primary:
            raise CommandError(10107, "not primary")
    elif info.kind == "read":
        if not _read_allowed(member, ctx.cmd, secondary_ok):
            if member.is_secondary:
                raise CommandError(13435, "not primary and secondaryOk=false")
            raise CommandError(13436, "node is not in primary or recovering state")
    elif info.kind == "aggregate":
        from devstack.mongo.commands.query import aggregate_writes

        if aggregate_writes(ctx.cmd):
            # 5.0+: $out/$merge may run on a secondary when the read preference allows; writes go to the primary
            if not member.is_primary and not (_read_allowed(member, ctx.cmd, secondary_ok) and
                                              ctx.rs.primary is not None):
                raise CommandError(10107, "not primary")
        elif not _read_allowed(member, ctx.cmd, secondary_ok):
            if member.is_secondary:
                raise CommandError(13435, "not primary and secondaryOk=false")
            raise CommandError(13436, "node is not in primary or recovering state")


def _sessions(ctx, info):
    """Attach the session / transaction; returns a cached reply for a retried retryable write."""
    cmd = ctx.cmd
    rs = ctx.rs
    lsid = cmd.get("lsid")
    txn_number = cmd.get("txnNumber")
    autocommit = cmd.get("autocommit")
    if lsid is None:
        if txn_number is not None:
            raise CommandError(50768, "Transaction number requires a session ID to also be specified",
                               code_name_override="Location50768")
        if autocommit is not None:
            raise CommandError(50768, "'autocommit' field requires a transaction number to also be specified",
                               code_name_override="Location50768")
        return None
    session = rs.session(lsid)
    ctx.session = session
    if txn_number is None:
        if autocommit is not None or cmd.get("startTransaction") is not None:
            raise CommandError(50768, "'autocommit' field requires a transaction number to also be specified",
                               code_name_override="Location50768")
        if info.name in TXN_CONTROL:
            raise CommandError(50768, "Transaction number requires a session ID to also be specified",
                               code_name_override="Location50768")
        return None
    if rs.standalone:
        raise CommandError(20, "Transaction numbers are only allowed on a replica set member or mongos")
    txn_number = int(txn_number)
    ctx.txn_number = txn_number
    if autocommit is None:
        if info.name in TXN_CONTROL:
            raise CommandError(50768, "'autocommit' field is required", code_name_override="Location50768")
        if not info.retryable_write:
            raise CommandError(50768, f"txnNumber may only be provided for multi-document transactions and retryable "
                                      f"write commands. autocommit:false was not provided, and {info.name} is not a "
                                      "retryable write command.", code_name_override="Location50768")
        if txn_number < session.txn_number:
            raise CommandError(225, f"Retryable write with txnNumber {txn_number} is prohibited on session because a "
                                    f"newer retryable write with txnNumber {session.txn_number} has already started on "
                                    "this session.")
        if txn_number in session.retry_results:
            return session.retry_results[txn_number]
        if session.txn is not None and session.txn.state == "in_progress":
            rs.abort_transaction(session.txn, None)
        session.txn_number = txn_number
        return None
    if autocommit is not False:
        raise CommandError(72, "autocommit must be false when specified" if autocommit is not True else
                           "Specifying autocommit=true is not allowed.")
    start = cmd.get("startTransaction")
    if start is not None and start is not True:
        raise CommandError(72, "startTransaction must be true when specified")
    if start:
        if txn_number < session.txn_number:
            raise CommandError(225, f"Cannot start transaction {txn_number} on session because a newer transaction "
                                    f"{session.txn_number} has already started.")
        if txn_number == session.txn_number and session.txn is not None:
            if session.txn.state == "committed":
                raise CommandError(256, f"Transaction with {{ txnNumber: {txn_number} }} has been committed.")
            raise CommandError(251, f"Given transaction number {txn_number} does not match any in-progress "
                                    "transactions. The active transaction number is -1", labels=[TRANSIENT])
        if info.name in TXN_CONTROL:
            raise CommandError(251, f"Given transaction number {txn_number} does not match any in-progress "
                                    "transactions.", labels=[TRANSIENT])
        rc = cmd.get("readConcern")
        if isinstance(rc, dict) and rc.get("level") not in (None, "snapshot", "majority", "local"):
            raise CommandError(72, "The readConcern level must be either 'local' (default), 'majority' or 'snapshot' "
                                   "in order to run in a transaction")
        ctx.txn = rs.start_transaction(session, txn_number, rc)
    else:
        if txn_number < session.txn_number:
            raise CommandError(225, f"Cannot start transaction {txn_number} on session because a newer transaction "
                                    f"{session.txn_number} has already started.")
        txn = session.txn
        if txn is None or txn_number > session.txn_number or txn.txn_number != txn_number:
            raise CommandError(251, f"Given transaction number {txn_number} does not match any in-progress "
                                    f"transactions. The active transaction number is {session.txn_number}",
                               labels=[TRANSIENT])
        if txn.state == "aborted" and info.name != "abortTransaction":
            if info.name == "commitTransaction" or True:
                raise CommandError(251, f"Transaction with {{ txnNumber: {txn_number} }} has been aborted.",
                                   labels=[TRANSIENT])
        if txn.state == "committed" and info.name not in TXN_CONTROL:
            raise CommandError(256, f"Transaction with {{ txnNumber: {txn_number} }} has been committed.")
        if "readConcern" in cmd and info.name not in TXN_CONTROL:
            raise CommandError(72, "Only the first command in a transaction may specify a readConcern")
        ctx.txn = txn
    if not info.txn and info.name not in TXN_CONTROL:
        if ctx.txn is not None and start:
            rs.abort_transaction(ctx.txn, None)
        raise CommandError(263, f"Cannot run '{info.name}' in a multi-document transaction.")
    if "writeConcern" in cmd and info.name not in TXN_CONTROL:
        raise CommandError(72, "Cannot set write concern after starting a transaction.")
    return None


# commands a mongod started without --replSet answers with 76 NoReplicationEnabled
REPLICATION_ONLY = {"replSetGetStatus", "replSetGetConfig", "replSetStepDown", "replSetFreeze", "replSetStepUp",
                    "appendOplogNote", "emulatorStepDown", "emulatorElect", "emulatorFreeze", "emulatorNoop",
                    "emulatorSetOplogLimits"}
STATE_CHANGE_CODES = {10107, 13435, 13436, 189, 91, 11600, 11602}


def _envelope(rs, reply: dict, op_ts, ctx=None, member=None) -> dict:
    if "code" in reply and "codeName" not in reply:
        reply["codeName"] = code_name(reply["code"])
    if member is not None and reply.get("code") in STATE_CHANGE_CODES and "topologyVersion" not in reply:
        # like mongod: state-change errors carry the member's topologyVersion (drivers use it to spot stale errors)
        labels = reply.pop("errorLabels", None)
        reply["topologyVersion"] = member.topology_version()
        if labels is not None:
            reply["errorLabels"] = labels
    if rs.standalone:
        return reply    # a standalone mongod keeps no logical clock: no $clusterTime, no operationTime
    reply["$clusterTime"] = cluster_time_doc(rs)
    reply["operationTime"] = op_ts or rs.last_ts
    return reply

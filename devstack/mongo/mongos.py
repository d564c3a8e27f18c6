"""The `mongos` router of an emulated sharded cluster: answers drivers as mongos 7.0 does (`hello` with
`msg: "isdbgrid"`, no `setName`) and runs their commands on the shards (in-process, on each shard's primary).

Commands are looked up in `ROUTER_COMMANDS` (filled by `mongos_commands`, `mongos_crud`, `mongos_streams`);
any other command on a user database runs on that database's primary shard.
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback

from bson.binary import Binary
from bson.int64 import Int64
from bson.objectid import ObjectId

from devstack.mongo.bsonutil import hash_key, to_int
from devstack.mongo.cursors import CursorManager
from devstack.mongo.dispatch import TRANSIENT_CODES, CloseConnection, run_command
from devstack.mongo.errors import RETRYABLE_WRITE_CODES, CommandError, code_name
from devstack.mongo.faults import FailPoints
from devstack.mongo.server import Connection

log = logging.getLogger("devstack.mongo")
ROUTER_COMMANDS: dict = {}
_ZERO_HASH = Binary(b"\x00" * 20, 0)
TXN_FIELDS = ("lsid", "txnNumber", "autocommit")
FORWARDED = ("lsid", "txnNumber", "autocommit", "writeConcern", "bypassDocumentValidation", "let", "comment",
             "maxTimeMS", "collation")
PRIMARY_WAIT = 15.0
ROUTED = {"insert", "update", "delete", "findAndModify", "find", "count", "distinct", "aggregate", "getMore"}
RETRYABLE_WRITES = ("insert", "update", "delete", "findAndModify")


def router_command(*names):
    def register(fn):
        for name in names:
            ROUTER_COMMANDS[name] = fn
        return fn
    return register


class RouterTxn:
    """A transaction through mongos: the shards it touched (each runs its own part) and its read concern."""

    def __init__(self, txn_number: int, read_concern):
        self.txn_number = txn_number
        self.read_concern = read_concern
        self.participants: list[str] = []
        self.state = "in_progress"


class Request:
    def __init__(self, router, conn, cmd: dict, name: str, db: str):
        self.router = router
        self.conn = conn
        self.cmd = cmd
        self.name = name
        self.db = db
        self.txn: RouterTxn | None = None

    @property
    def target(self):
        return self.cmd[self.name]

    @property
    def ns(self) -> str:
        return f"{self.db}.{self.target}"

    def forwarded(self, **overrides) -> dict:
        """The fields every sub-command keeps (session, transaction, write concern...). A retryable write's
        txnNumber stays on the router, which answers retries itself: one write may reach a shard in several
        sub-commands, and a shard would take the second for a retry of the first."""
        out = {k: self.cmd[k] for k in FORWARDED if k in self.cmd and (k != "txnNumber" or self.txn is not None)}
        out.update(overrides)
        return out


class Router:
    """One mongos: its listening socket, connections, cursors, fail points and routed transactions."""

    def __init__(self, cluster, host: str, port: int, config):
        self.cluster = cluster
        self.config = config
        self.host = host
        self.port = port
        self.name = f"{host}:{port}"
        self.server: asyncio.AbstractServer | None = None
        self.connections: set = set()
        self.next_conn_id = 1
        self.command_delays: dict[str, float] = {}
        self.reply_delay_ms = 0.0
        self.cursors = CursorManager()
        self.failpoints = FailPoints()
        self.process_id = ObjectId()
        self.topology_counter = 0
        self.started = time.time()
        self.alive = False
        self.txns: dict = {}     # session key -> RouterTxn
        self.retried: dict = {}  # session key -> (txnNumber, reply) of its latest retryable write

    # ---- topology ---------------------------------------------------------------------------------------------
    def topology_version(self) -> dict:
        return {"processId": self.process_id, "counter": Int64(self.topology_counter)}

    async def wait_topology_change(self, timeout: float):
        await asyncio.sleep(max(0.0, timeout))

    def drop_connections(self):
        for conn in list(self.connections):
            conn.close()

    def cluster_time_doc(self) -> dict:
        return {"clusterTime": self.cluster.clock.last, "signature": {"hash": _ZERO_HASH, "keyId": Int64(0)}}

    # ---- shards -----------------------------------------------------------------------------------------------
    def replica_set(self, shard: str):
        if shard == "config":
            return self.cluster.config_rs
        return self.cluster.shards[shard]

    async def primary_of(self, shard: str):
        rs = self.replica_set(shard)
        deadline = time.monotonic() + max(PRIMARY_WAIT, rs.config.election_timeout * 3)
        while True:
            primary = rs.primary
            if primary is not None:
                return primary
            if time.monotonic() >= deadline:
                raise CommandError(133, f'Could not find host matching read preference {{ mode: "primary" }} for '
                                        f"set {rs.name}", code_name_override="FailedToSatisfyReadPreference")
            await asyncio.sleep(0.02)

    async def on_shard(self, shard: str, cmd: dict, db: str, check: bool = True) -> dict:
        """Run `cmd` on a shard's primary; a failed reply raises its error (labels kept) unless check is False.
        A primary that steps down or dies meanwhile is waited for and the command retried, as mongos retries
        reads and retryable writes."""
        for attempt in range(3):
            member = await self.primary_of(shard)
            reply = await run_command(member, None, {**cmd, "$db": db})
            reply.pop("$clusterTime", None)
            reply.pop("operationTime", None)
            if reply.get("ok") or reply.get("code") not in (10107, 11602, 189, 91) or attempt == 2 or \
                    cmd.get("autocommit") is False:
                break
            await asyncio.sleep(0.05)
        if check and not reply.get("ok"):
            raise error_of(reply)
        return reply

    async def drain(self, shard: str, cmd: dict, db: str) -> list:
        """Every document a cursor-returning command yields on a shard (first batch and getMores)."""
        reply = await self.on_shard(shard, cmd, db)
        cursor = reply["cursor"]
        docs = list(cursor.get("firstBatch", []))
        cid = cursor.get("id", 0)
        coll = cursor.get("ns", "").partition(".")[2]
        while cid:
            more = {"getMore": Int64(cid), "collection": coll}
            for field in TXN_FIELDS:
                if field in cmd:
                    more[field] = cmd[field]
            reply = await self.on_shard(shard, more, db)
            docs.extend(reply["cursor"].get("nextBatch", []))
            cid = reply["cursor"].get("id", 0)
        return docs

    # ---- transactions -----------------------------------------------------------------------------------------
    def transaction_of(self, req: Request) -> RouterTxn | None:
        cmd = req.cmd
        if cmd.get("autocommit") is not False or not isinstance(cmd.get("lsid"), dict):
            return None
        key = hash_key(cmd["lsid"].get("id"))
        number = to_int(cmd.get("txnNumber"))
        txn = self.txns.get(key)
        if cmd.get("startTransaction"):
            txn = self.txns[key] = RouterTxn(number, cmd.get("readConcern"))
        elif txn is None or txn.txn_number != number:
            txn = self.txns[key] = RouterTxn(number, None)   # shards decide (NoSuchTransaction...)
            txn.participants = list(self.cluster.shards)
        return txn

    def for_shard(self, req: Request, shard: str, cmd: dict) -> dict:
        """`cmd` as `shard` must see it: a transaction's first statement there starts the shard's transaction."""
        txn = req.txn
        if txn is None:
            return cmd
        cmd = dict(cmd)
        cmd.pop("startTransaction", None)
        cmd.pop("readConcern", None)
        if shard not in txn.participants:
            txn.participants.append(shard)
            cmd["startTransaction"] = True
            if txn.read_concern is not None:
                cmd["readConcern"] = txn.read_concern
        return cmd

    async def _abort_on_failure(self, cmd: dict, name: str):
        if cmd.get("autocommit") is not False or name in ("commitTransaction", "abortTransaction") or \
                not isinstance(cmd.get("lsid"), dict):
            return
        txn = self.txns.get(hash_key(cmd["lsid"].get("id")))
        if txn is None or txn.txn_number != to_int(cmd.get("txnNumber")) or txn.state != "in_progress":
            return
        txn.state = "aborted"
        for shard in txn.participants:
            await self.on_shard(shard, {"abortTransaction": 1, "lsid": cmd["lsid"], "txnNumber": cmd["txnNumber"],
                                        "autocommit": False}, "admin", check=False)

    # ---- running one command ----------------------------------------------------------------------------------
    async def run(self, conn, cmd: dict, op_query: bool = False, secondary_ok: bool = False,
                  db: str | None = None) -> dict:
        if not cmd:
            return self.envelope(CommandError(59, "no such command: ''").to_reply())
        name = next(iter(cmd))
        db = db or cmd.get("$db") or "admin"
        canonical = {"ismaster": "isMaster", "findandmodify": "findAndModify"}.get(name.lower(), name)
        fp = self.failpoints.fail_command(canonical if canonical != "isMaster" else name,
                                          conn.app_name if conn else None)
        if fp is not None:
            if fp.get("blockConnection"):
                await asyncio.sleep((to_int(fp.get("blockTimeMS")) or 0) / 1000.0)
            if fp.get("closeConnection"):
                # a statement cut off inside a transaction aborts it on the shards it touched, as mongos does
                await self._abort_on_failure(cmd, canonical)
                raise CloseConnection()
            if "errorCode" in fp:
                code = to_int(fp["errorCode"])
                reply = CommandError(code, "Failing command via 'failCommand' failpoint").to_reply()
                labels = fp.get("errorLabels")
                if labels is None:
                    labels = _failure_labels(cmd, canonical, code)
                if labels:
                    reply["errorLabels"] = list(labels)
                return self.envelope(reply)
        req = Request(self, conn, cmd, name, db)
        retry_key = None
        if canonical in RETRYABLE_WRITES and cmd.get("txnNumber") is not None and cmd.get("autocommit") is None \
                and isinstance(cmd.get("lsid"), dict):
            retry_key = hash_key(cmd["lsid"].get("id"))
            done = self.retried.get(retry_key)
            if done is not None and done[0] == cmd["txnNumber"]:
                return self.envelope(dict(done[1]))
        try:
            handler = ROUTER_COMMANDS.get(canonical)
            req.txn = self.transaction_of(req)
            if handler is None:
                if db in ("admin", "config", "local"):
                    raise CommandError(59, f"no such command: '{name}'")
                handler = forward_to_primary_shard
            if canonical in ROUTED and not _change_stream(cmd, self):
                async with self.cluster.routing:
                    reply = dict(await handler(req))
            else:
                reply = dict(await handler(req))
            reply.setdefault("ok", 1.0)
            if req.txn is not None and req.txn.participants and name not in ("commitTransaction",
                                                                              "abortTransaction"):
                reply["recoveryToken"] = {"recoveryShardId": req.txn.participants[0]}
        except CommandError as err:
            reply = err.to_reply()
            if err.labels:
                reply["errorLabels"] = list(err.labels)
        except CloseConnection:
            raise
        except Exception as exc:  # a bug in the emulator: report it as the server reports internal errors
            log.error("mongos command %s failed: %s", name, traceback.format_exc())
            reply = CommandError(1, f"emulator internal error in {name}: {exc!r}").to_reply()
        if retry_key is not None and reply.get("ok") and "writeConcernError" not in reply:
            self.retried[retry_key] = (cmd["txnNumber"], dict(reply))
        return self.envelope(reply)

    def envelope(self, reply: dict) -> dict:
        if "code" in reply and "codeName" not in reply:
            reply["codeName"] = code_name(reply["code"])
        reply["$clusterTime"] = self.cluster_time_doc()
        reply["operationTime"] = self.cluster.clock.last
        return reply


def _failure_labels(cmd: dict, name: str, code: int) -> list[str]:
    """The labels mongos gives an error (as mongod's dispatch does): transient inside a transaction, retryable for
    a retryable write or a commit/abort."""
    labels = []
    control = name in ("commitTransaction", "abortTransaction")
    retryable = control or (name in RETRYABLE_WRITES and cmd.get("txnNumber") is not None
                            and cmd.get("autocommit") is None)
    if retryable and code in RETRYABLE_WRITE_CODES and not (cmd.get("autocommit") is False and not control):
        labels.append("RetryableWriteError")
    if cmd.get("autocommit") is False and (code in TRANSIENT_CODES or (not control and code in RETRYABLE_WRITE_CODES)):
        labels.append("TransientTransactionError")
    return labels


def _change_stream(cmd: dict, router) -> bool:
    """An aggregate opening, or a getMore reading, a change stream: it waits for events, holding nothing."""
    if "getMore" in cmd:
        cursor = router.cursors.cursors.get(int(cmd["getMore"])) if isinstance(cmd["getMore"], int) else None
        return bool(getattr(cursor, "tailable", False))
    pipeline = cmd.get("pipeline")
    return bool(isinstance(pipeline, list) and pipeline and isinstance(pipeline[0], dict)
                and "$changeStream" in pipeline[0])


def error_of(reply: dict) -> CommandError:
    extra = {k: v for k, v in reply.items() if k not in ("ok", "errmsg", "code", "codeName", "errorLabels",
                                                          "topologyVersion")}
    return CommandError(to_int(reply.get("code")) or 1, reply.get("errmsg", ""), labels=reply.get("errorLabels"),
                        extra=extra, code_name_override=reply.get("codeName"))


async def forward_to_primary_shard(req: Request) -> dict:
    shard = req.router.cluster.primary_shard(req.db)
    cmd = {k: v for k, v in req.cmd.items() if k not in ("$db", "$clusterTime", "$readPreference")}
    return await req.router.on_shard(shard, req.router.for_shard(req, shard, cmd), req.db)


class RouterConnection(Connection):
    """A client connection to mongos: the socket handling of a member, the commands of the router."""

    async def _run(self, cmd, **kw):
        try:
            return await self.member.run(self, cmd, **kw)
        except CloseConnection:
            self.close()
            raise

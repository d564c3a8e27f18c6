"""A replica set: its members, term and elections, the shared catalog and oplog, sessions and transactions.

Replication is immediate (all members read the same catalog), so a member that becomes primary never
lacks an acknowledged write; what differs per member is its state, its cursors, its fail points and
whether it is reachable.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import logging
import time

from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.timestamp import Timestamp

from devstack.mongo.bsonutil import hash_key
from devstack.mongo.config import EmulatorConfig
from devstack.mongo.cursors import CursorManager
from devstack.mongo.errors import CommandError
from devstack.mongo.faults import FailPoints
from devstack.mongo.oplog import Entry, Op, Oplog
from devstack.mongo.storage import Catalog, Collection
from devstack.mongo.transactions import TRANSIENT, Session, Transaction, TxnRegistry

log = logging.getLogger("devstack.mongo")

PRIMARY, SECONDARY, DOWN = "PRIMARY", "SECONDARY", "DOWN"
TXN_LIFETIME = 60.0
_EPOCH = datetime.datetime(1970, 1, 1)
STATE_CODES = {PRIMARY: 1, SECONDARY: 2, DOWN: 8}


@functools.lru_cache(maxsize=64)
def election_id(term: int) -> ObjectId:
    return ObjectId(f"7fffffff{term:016x}")


class Member:
    def __init__(self, rs: ReplicaSet, idx: int, host: str, port: int):
        self.rs = rs
        self.idx = idx
        self.host = host
        self.port = port
        self.name = f"{host}:{port}"
        self.state = DOWN
        self.alive = False
        self.frozen_until = 0.0
        self.priority = 1.0
        self.process_id = ObjectId()
        self.topology_counter = 0
        self.server: asyncio.AbstractServer | None = None
        self.connections: set = set()
        self.cursors = CursorManager()
        self.failpoints = FailPoints()
        self.reply_delay_ms = 0.0
        self.command_delays: dict[str, float] = {}
        self.started = time.time()
        self._topology_waiters: list[asyncio.Future] = []
        self.next_conn_id = 1
        self.election_time: Timestamp | None = None
        self.election_date: datetime.datetime | None = None

    @property
    def is_primary(self) -> bool:
        return self.alive and self.state == PRIMARY

    @property
    def is_secondary(self) -> bool:
        return self.alive and self.state == SECONDARY

    def topology_version(self) -> dict:
        return {"processId": self.process_id, "counter": Int64(self.topology_counter)}

    def bump_topology(self):
        self.topology_counter += 1
        waiters, self._topology_waiters = self._topology_waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(True)

    async def wait_topology_change(self, counter: int, timeout: float):
        if self.topology_counter != counter or timeout <= 0:
            return
        fut = asyncio.get_running_loop().create_future()
        self._topology_waiters.append(fut)
        try:
            await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            pass

    def drop_connections(self):
        for conn in list(self.connections):
            conn.close()

    def electable(self, now: float) -> bool:
        return self.alive and self.priority > 0 and now >= self.frozen_until


class ReplicaSet:
    def __init__(self, config: EmulatorConfig, ports: list[int]):
        self.config = config
        self.name = config.replset
        self.standalone = config.standalone
        self.members = [Member(self, i, config.host, p) for i, p in enumerate(ports)]
        self.catalog = Catalog()
        self.oplog = Oplog(config.oplog_max_entries, config.oplog_max_bytes)
        self.txns = TxnRegistry()
        self.sessions: dict = {}
        self.term = 0
        self.config_version = 1
        self.last_ts = Timestamp(0, 0)
        self.last_wall = datetime.datetime(1970, 1, 1)
        self.cluster_time = Timestamp(0, 0)
        self.dirty = False
        self.write_count = 0
        self._election_task: asyncio.Task | None = None
        self._tasks: list[asyncio.Task] = []
        self.on_change = None  # persistence hook

    # ---- identity / topology ----------------------------------------------------------------------------
    @property
    def hosts(self) -> list[str]:
        return [m.name for m in self.members]

    @property
    def primary(self) -> Member | None:
        for m in self.members:
            if m.is_primary:
                return m
        return None

    @property
    def election_id(self) -> ObjectId:
        return election_id(self.term)

    def majority(self) -> int:
        return len(self.members) // 2 + 1

    def alive_count(self) -> int:
        return sum(1 for m in self.members if m.alive)

    def topology_changed(self):
        for m in self.members:
            m.bump_topology()

    # ---- clock and oplog -------------------------------------------------------------------------------------
    def next_ts(self, now: float | None = None) -> Timestamp:
        """The next oplog timestamp: `now`'s second (the current time's by default), or the last one's next
        increment when the clock has not passed it."""
        now = int(time.time() if now is None else now)
        last = self.last_ts
        t = last.time
        ts = Timestamp(now, 1) if now > t else Timestamp(t, last.inc + 1)
        self.last_ts = ts
        ct = self.cluster_time
        if ts.time > ct.time or (ts.time == ct.time and ts.inc > ct.inc):
            self.cluster_time = ts
        return ts

    def wall_now(self) -> datetime.datetime:
        """Now, at millisecond precision (what BSON dates carry), as a naive UTC datetime."""
        return _EPOCH + datetime.timedelta(milliseconds=int(time.time() * 1000))

    def _new_entry(self, **kwargs) -> Entry:
        # one reading of the clock for both: read apart, a second could begin between them, and the entry's
        # wallTime (Debezium's source.ts_ms) would name the second before its cluster time's
        now = time.time()
        ms = int(now * 1000)
        entry = Entry(self.next_ts(now), self.term, _EPOCH + datetime.timedelta(milliseconds=ms), **kwargs)
        entry.wall_ms = ms
        return entry

    def log_op(self, op: Op, lsid=None, txn_number=None, stmt_id=None) -> Entry:
        if stmt_id is not None:
            op.stmt_id = stmt_id
        entry = self._new_entry(op=op, lsid=lsid,
                      txn_number=Int64(txn_number) if txn_number is not None else None)
        self.last_wall = entry.wall
        self.oplog.append(entry)
        self.dirty = True
        self.write_count += 1
        return entry

    def log_noop(self, msg: str) -> Entry:
        return self.log_op(Op("n", "", o={"msg": msg}))

    def document_key(self, ns: str, doc: dict) -> dict:
        """What the oplog (and change events' documentKey) names a document by: its _id (a shard adds the shard
        key's fields)."""
        return {"_id": doc["_id"]}

    def observe_cluster_time(self, ts):
        if isinstance(ts, Timestamp) and ts > self.cluster_time:
            self.cluster_time = ts

    def op_time(self, ts: Timestamp | None = None) -> dict:
        return {"ts": ts or self.last_ts, "t": Int64(self.term)}

    # ---- DDL ------------------------------------------------------------------------------------------------------
    def create_collection(self, db: str, name: str, options: dict | None = None) -> Collection:
        options = dict(options or {})
        coll = self.catalog.create_collection(db, name, options)
        o = {"create": name, **options}
        if not options.get("viewOn"):
            o["idIndex"] = {"v": 2, "key": {"_id": 1}, "name": "_id_"}
        self.log_op(Op("c", f"{db}.$cmd", coll.uuid, o=o))
        return coll

    def new_collection_in_txn(self, txn: Transaction, db: str, name: str) -> Collection:
        from devstack.mongo.storage import validate_collection_name

        validate_collection_name(db, name)
        coll = Collection(db, name, {})
        txn.created[coll.ns] = coll
        o = {"create": name, "idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"}}
        txn.ops.append(Op("c", f"{db}.$cmd", coll.uuid, o=o))
        return coll

    def drop_collection(self, db: str, name: str) -> Collection | None:
        coll = self.catalog.get_collection(db, name)
        if coll is None:
            return None
        self.catalog.drop_collection(db, name)
        self.log_op(Op("c", f"{db}.$cmd", coll.uuid, o={"drop": name}))
        self._kill_collection_cursors(coll.ns)
        return coll

    def drop_database(self, db: str):
        d = self.catalog.databases.get(db)
        if d is not None:
            for name in list(d.collections):
                self.drop_collection(db, name)
        entry = self.log_op(Op("c", f"{db}.$cmd", None, o={"dropDatabase": 1}))
        return entry

    def rename_collection(self, src_db, src, dst_db, dst, drop_target: bool):
        coll = self.catalog.get_collection(src_db, src)
        target = self.catalog.get_collection(dst_db, dst)
        o = {"renameCollection": f"{src_db}.{src}", "to": f"{dst_db}.{dst}", "stayTemp": False}
        if target is not None:
            o["dropTarget"] = target.uuid
            self.catalog.drop_collection(dst_db, dst)
        self.catalog.drop_collection(src_db, src)
        coll.db, coll.name = dst_db, dst
        d = self.catalog.databases.get(dst_db)
        if d is None:
            self.catalog.create_collection(dst_db, "__tmp__")
            d = self.catalog.databases[dst_db]
            del d.collections["__tmp__"]
        d.collections[dst] = coll
        self.log_op(Op("c", f"{src_db}.$cmd", coll.uuid, o=o))
        self._kill_collection_cursors(f"{src_db}.{src}")

    def _kill_collection_cursors(self, ns: str):
        for m in self.members:
            m.cursors.kill_all(CommandError(175, f"collection dropped. ns: {ns}", code_name_override="QueryPlanKilled"),
                               only=lambda c: not getattr(c, "tailable", False) and c.ns == ns)

    # ---- sessions and transactions -------------------------------------------------------------------------
    def session(self, lsid: dict) -> Session:
        key = hash_key(lsid.get("id"))
        s = self.sessions.get(key)
        if s is None:
            s = self.sessions[key] = Session(lsid)
        s.last_use = time.monotonic()
        return s

    def end_session(self, lsid: dict):
        key = hash_key(lsid.get("id"))
        s = self.sessions.pop(key, None)
        if s is not None and s.txn is not None and s.txn.state == "in_progress":
            self.abort_transaction(s.txn, None)

    def start_transaction(self, session: Session, txn_number: int, read_concern=None) -> Transaction:
        if session.txn is not None and session.txn.state == "in_progress":
            self.abort_transaction(session.txn, None)
        txn = Transaction(session, txn_number, self.last_ts, read_concern)
        session.txn = txn
        session.txn_number = txn_number
        self.txns.begin(txn)
        return txn

    def abort_transaction(self, txn: Transaction, reason: CommandError | None):
        if txn.state != "in_progress":
            return
        txn.state = "aborted"
        txn.abort_reason = reason
        self.txns.end(txn)

    def commit_transaction(self, txn: Transaction) -> Timestamp:
        if txn.state == "committed":
            return txn.commit_ts
        if txn.state != "in_progress":
            raise CommandError(251, f"Transaction {txn.txn_number} has been aborted.", labels=[TRANSIENT])
        ts = None
        if txn.ops:
            for ns, coll in txn.created.items():
                db, _, name = ns.partition(".")
                existing = self.catalog.get_collection(db, name)
                if existing is None:
                    d = self.catalog.databases.get(db)
                    if d is None:
                        self.catalog.create_collection(db, name)
                        d = self.catalog.databases[db]
                    d.collections[name] = coll
            entry = self._new_entry(ops=list(txn.ops), lsid=txn.session.lsid,
                          txn_number=Int64(txn.txn_number))
            ts = entry.ts
            for (ns, idk), doc in txn.writes.items():
                db, _, name = ns.partition(".")
                coll = self.catalog.get_collection(db, name)
                if coll is None:
                    continue
                old = coll.docs.get(idk)
                self.txns.note_write(ns, idk, ts, old)
                if doc is None:
                    if old is not None:
                        coll.delete(old)
                elif old is None:
                    coll.store(idk, doc)
                else:
                    coll._index_remove(idk, old)
                    coll.docs[idk] = doc
                    coll._index_add(idk, doc)
            self.last_wall = entry.wall
            self.oplog.append(entry)
            self.dirty = True
            self.write_count += 1
        txn.state = "committed"
        txn.commit_ts = ts or self.last_ts
        self.txns.end(txn)
        return txn.commit_ts

    # ---- elections and faults ------------------------------------------------------------------------------
    def _schedule_election(self, delay: float, exclude: Member | None = None):
        if self._election_task is not None and not self._election_task.done():
            self._election_task.cancel()
        self._election_task = asyncio.get_running_loop().create_task(self._elect_later(delay, exclude))

    async def _elect_later(self, delay: float, exclude):
        try:
            await asyncio.sleep(delay)
        except asyncio.CancelledError:
            return
        self.elect(exclude)

    def elect(self, exclude: Member | None = None, candidate: Member | None = None) -> Member | None:
        if self.primary is not None:
            return self.primary
        if self.alive_count() < self.majority():
            return None
        now = time.monotonic()
        if candidate is None:
            pool = [m for m in self.members if m.electable(now) and m is not exclude]
            if not pool:
                pool = [m for m in self.members if m.electable(now)]
            if not pool:
                frozen = [m.frozen_until for m in self.members if m.alive and m.priority > 0]
                if frozen:
                    self._schedule_election(max(0.05, min(frozen) - now))
                return None
            best = max(m.priority for m in pool)
            pool = [m for m in pool if m.priority == best]
            start = exclude.idx + 1 if exclude is not None else 0
            pool.sort(key=lambda m: (m.idx - start) % len(self.members))
            candidate = pool[0]
        self.term += 1
        for m in self.members:
            if m.alive and m is not candidate:
                m.state = SECONDARY
        candidate.state = PRIMARY
        entry = self.log_noop("new primary")
        candidate.election_time = entry.ts
        candidate.election_date = entry.wall
        log.info("%s: %s is primary (term %d)", self.name, candidate.name, self.term)
        self.topology_changed()
        return candidate

    def step_down(self, member: Member, seconds: float = 60, force: bool = False, election_delay=None):
        if not member.is_primary:
            raise CommandError(10107, "not primary so can't step down")
        now = time.monotonic()
        others = [m for m in self.members if m is not member and m.electable(now)]
        if not others and not force:
            raise CommandError(262, "No electable secondaries caught up as of " +
                               datetime.datetime.now(datetime.UTC).isoformat() +
                               ". Please use the replSetStepDown command with the argument {force: true} to force "
                               "node to step down.")
        member.state = SECONDARY
        member.frozen_until = now + float(seconds)
        self._interrupt(member)
        self.topology_changed()
        delay = self.config.stepdown_election_delay if election_delay is None else election_delay
        self._schedule_election(delay, exclude=member)

    def _interrupt(self, member: Member):
        """What a primary losing its state does: abort transactions, interrupt cursors (when configured)."""
        for txn in list(self.txns.open):
            self.abort_transaction(txn, CommandError(251, f"Transaction {txn.txn_number} has been aborted.",
                                                     labels=[TRANSIENT]))
        if self.config.kill_cursors_on_stepdown:
            def error_for(cursor):
                labels = ["ResumableChangeStreamError"] if getattr(cursor, "tailable", False) else []
                return CommandError(11602, "operation was interrupted because of a replica set state change",
                                    labels=labels)
            member.cursors.kill_all(error_for)

    def freeze(self, member: Member, seconds: float):
        if member.is_primary and seconds > 0:
            raise CommandError(95, "cannot freeze node when primary or running for election. state: Primary")
        member.frozen_until = time.monotonic() + float(seconds) if seconds else 0.0
        if seconds == 0 and self.primary is None:
            self._schedule_election(self.config.stepdown_election_delay)

    async def kill_member(self, member: Member):
        if not member.alive:
            return
        was_primary = member.is_primary
        member.alive = False
        member.state = DOWN
        if member.server is not None:
            member.server.close()
            member.server = None
        member.drop_connections()
        member.cursors.kill_all(None)
        member.cursors.killed.clear()
        self.topology_changed()
        primary = self.primary
        if primary is not None and self.alive_count() < self.majority():
            primary.state = SECONDARY
            self._interrupt(primary)
            self.topology_changed()
        if was_primary:
            self._schedule_election(self.config.election_timeout, exclude=member)

    async def restart_member(self, member: Member, start_server):
        if member.alive:
            return
        member.process_id = ObjectId()
        member.topology_counter = 0
        member.started = time.time()
        member.failpoints.clear()
        await start_server(member)
        member.alive = True
        member.state = SECONDARY
        self.topology_changed()
        if self.primary is None:
            self._schedule_election(self.config.stepdown_election_delay)

    # ---- periodic work -----------------------------------------------------------------------------------------
    async def noop_writer(self):
        interval = self.config.noop_interval
        if not interval or interval <= 0:
            return
        while True:
            await asyncio.sleep(interval)
            if self.primary is not None and time.time() - self.last_ts.time >= interval:
                self.log_noop("periodic noop")

    async def session_reaper(self):
        """Expire idle sessions (30 min), abort transactions older than transactionLifetimeLimitSeconds (60 s),
        and drop cursors idle for 10 minutes."""
        tick = 0
        while True:
            await asyncio.sleep(5)
            tick += 1
            now = time.monotonic()
            for txn in list(self.txns.open):
                if now - txn.started > TXN_LIFETIME:
                    self.abort_transaction(txn, CommandError(251, f"Transaction {txn.txn_number} has been aborted.",
                                                             labels=[TRANSIENT]))
            if tick % 12:
                continue
            cutoff = time.monotonic() - 30 * 60
            for key, s in list(self.sessions.items()):
                if s.last_use < cutoff:
                    self.sessions.pop(key, None)
                    if s.txn is not None:
                        self.abort_transaction(s.txn, None)
            idle = time.monotonic() - 10 * 60
            for m in self.members:
                for cid, cur in list(m.cursors.cursors.items()):
                    if cur.last_used < idle and not cur.busy:
                        m.cursors.cursors.pop(cid, None)

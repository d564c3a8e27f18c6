"""Handshake and server information: hello / isMaster, ping, buildInfo, serverStatus and friends."""

from __future__ import annotations

import os
import time

from bson.int64 import Int64

from devstack.mongo.bsonutil import MAX_BSON_SIZE, to_int
from devstack.mongo.commands import command
from devstack.mongo.errors import CommandError


def _last_write(rs) -> dict:
    ts = rs.last_ts
    wall = rs.last_wall.replace(microsecond=0)
    op_time = {"ts": ts, "t": Int64(rs.term)}
    return {"opTime": op_time, "lastWriteDate": wall, "majorityOpTime": dict(op_time), "majorityWriteDate": wall}


def hello_reply(ctx, legacy: bool) -> dict:
    member = ctx.member
    rs = ctx.rs
    reply: dict = {}
    if ctx.cmd.get("helloOk") is not None and legacy:
        reply["helloOk"] = True
    reply["topologyVersion"] = member.topology_version()
    if rs.standalone:
        reply["ismaster" if legacy else "isWritablePrimary"] = True
        _limits(ctx, reply)
        return reply
    reply["hosts"] = rs.hosts
    reply["setName"] = rs.name
    reply["setVersion"] = rs.config_version
    writable = member.is_primary
    reply["ismaster" if legacy else "isWritablePrimary"] = writable
    reply["secondary"] = member.is_secondary
    primary = rs.primary
    if primary is not None:
        reply["primary"] = primary.name
    reply["me"] = member.name
    if writable:
        reply["electionId"] = rs.election_id
    reply["lastWrite"] = _last_write(rs)
    _limits(ctx, reply)
    return reply


def _limits(ctx, reply: dict):
    rs = ctx.rs
    reply["maxBsonObjectSize"] = MAX_BSON_SIZE
    reply["maxMessageSizeBytes"] = 48000000
    reply["maxWriteBatchSize"] = 100000
    reply["localTime"] = rs.wall_now()
    reply["logicalSessionTimeoutMinutes"] = 30
    reply["connectionId"] = ctx.conn.id if ctx.conn else 0
    reply["minWireVersion"] = 0
    reply["maxWireVersion"] = rs.config.max_wire_version
    reply["readOnly"] = False


async def _hello(ctx, legacy):
    cmd = ctx.cmd
    member = ctx.member
    if ctx.conn is not None and isinstance(cmd.get("client"), dict):
        app = cmd["client"].get("application")
        if isinstance(app, dict):
            ctx.conn.app_name = app.get("name")
    tv = cmd.get("topologyVersion")
    max_await = cmd.get("maxAwaitTimeMS")
    if isinstance(tv, dict) and max_await is not None:
        if tv.get("processId") == member.process_id and int(tv.get("counter", -1)) == member.topology_counter:
            await member.wait_topology_change(member.topology_counter, to_int(max_await) / 1000.0)
        if ctx.conn is not None:
            ctx.conn.awaitable_hello = True
    return hello_reply(ctx, legacy)


@command("hello")
async def hello(ctx):
    return await _hello(ctx, False)


@command("isMaster", aliases=("ismaster",))
async def is_master(ctx):
    return await _hello(ctx, True)


@command("ping")
def ping(ctx):
    return {}


def build_info(ctx) -> dict:
    version = ctx.rs.config.version
    parts = [int(p) for p in version.split(".")] + [0]
    return {
        "version": version,
        "gitVersion": "emulator",
        "modules": [],
        "allocator": "tcmalloc",
        "javascriptEngine": "mozjs",
        "sysInfo": "deprecated",
        "versionArray": parts[:4],
        "openssl": {"running": "disabled", "compiled": "disabled"},
        "buildEnvironment": {"distmod": "emulator", "target_arch": "x86_64", "target_os": "linux"},
        "bits": 64,
        "debug": False,
        "maxBsonObjectSize": MAX_BSON_SIZE,
        "storageEngines": ["devnull", "wiredTiger"],
    }


@command("buildInfo", aliases=("buildinfo",))
def build_info_cmd(ctx):
    return build_info(ctx)


@command("serverStatus")
def server_status(ctx):
    member = ctx.member
    rs = ctx.rs
    uptime = time.time() - member.started
    status = {
        "host": member.name,
        "version": rs.config.version,
        "process": "mongod",
        "pid": Int64(os.getpid()),
        "uptime": float(int(uptime)),
        "uptimeMillis": Int64(int(uptime * 1000)),
        "uptimeEstimate": Int64(int(uptime)),
        "localTime": rs.wall_now(),
        "connections": {"current": len(member.connections), "available": 838860,
                        "totalCreated": member.next_conn_id - 1},
        "repl": {
            "topologyVersion": member.topology_version(),
            "hosts": rs.hosts, "setName": rs.name, "setVersion": rs.config_version,
            "isWritablePrimary": member.is_primary, "secondary": member.is_secondary,
            **({"primary": rs.primary.name} if rs.primary else {}),
            "me": member.name,
            "electionId": rs.election_id,
        },
        "storageEngine": {"name": "wiredTiger", "supportsCommittedReads": True, "persistent":
                          rs.config.data_dir is not None},
        "oplog": {"entries": len(rs.oplog), "bytes": rs.oplog.bytes,
                  **({"earliest": rs.oplog.first.ts, "latest": rs.oplog.last.ts} if rs.oplog.first else {})},
    }
    if rs.standalone:
        del status["repl"], status["oplog"]
    return status


@command("hostInfo")
def host_info(ctx):
    return {"system": {"hostname": ctx.member.name, "cpuArch": "x86_64", "numCores": os.cpu_count() or 1},
            "os": {"type": "Linux", "name": "emulator"}, "extra": {}}


@command("getParameter")
def get_parameter(ctx):
    cmd = ctx.cmd
    params = {"featureCompatibilityVersion": {"version": ".".join(ctx.rs.config.version.split(".")[:2])},
              "periodicNoopIntervalSecs": int(ctx.rs.config.noop_interval),
              "transactionLifetimeLimitSeconds": 60,
              "maxTransactionLockRequestTimeoutMillis": 5}
    if cmd.get("getParameter") == "*":
        return dict(params)
    return {k: v for k, v in params.items() if k in cmd}


@command("setParameter")
def set_parameter(ctx):
    return {"was": None}


@command("getCmdLineOpts")
def cmdline(ctx):
    return {"argv": ["mongod", "--replSet", ctx.rs.name, "--port", str(ctx.member.port)],
            "parsed": {"net": {"port": ctx.member.port}, "replication": {"replSet": ctx.rs.name}}}


@command("whatsmyuri")
def whatsmyuri(ctx):
    return {"you": ctx.conn.peer if ctx.conn else ""}


@command("connectionStatus")
def connection_status(ctx):
    return {"authInfo": {"authenticatedUsers": [], "authenticatedUserRoles": []}}


@command("getLog")
def get_log(ctx):
    return {"totalLinesWritten": 0, "log": []}


@command("getDefaultRWConcern")
def get_default_rw_concern(ctx):
    return {"defaultReadConcern": {"level": "local"}, "defaultWriteConcern": {"w": "majority", "wtimeout": 0},
            "defaultWriteConcernSource": "implicit", "defaultReadConcernSource": "implicit",
            "localUpdateWallClockTime": ctx.rs.wall_now()}


@command("listCommands")
def list_commands(ctx):
    from devstack.mongo.commands import COMMANDS

    return {"commands": {name: {"help": "", "adminOnly": False} for name in sorted(COMMANDS)}}


@command("saslStart")
def sasl_start(ctx):
    raise CommandError(18, "Authentication failed.", code_name_override="AuthenticationFailed")


@command("logout")
def logout(ctx):
    return {}


@command("getFreeMonitoringStatus")
def free_monitoring(ctx):
    return {"state": "disabled"}


@command("features")
def features(ctx):
    return {"oidReset": False}


@command("lockInfo")
def lock_info(ctx):
    return {"lockInfo": []}


@command("currentOp")
def current_op(ctx):
    return {"inprog": []}


@command("killOp")
def kill_op(ctx):
    return {"info": "attempting to kill op"}


@command("fsync")
def fsync(ctx):
    return {"numFiles": 1}

"""Replication and fault commands: replSetGetStatus/Config, replSetStepDown, replSetFreeze,
configureFailPoint, and the emulator's own `emulator*` admin commands for tests in other processes."""

from __future__ import annotations

import datetime
import time

from bson.int64 import Int64

from devstack.mongo.bsonutil import to_int, truthy
from devstack.mongo.commands import command
from devstack.mongo.errors import CommandError
from devstack.mongo.replset import STATE_CODES


def _admin(ctx):
    if ctx.db != "admin":
        raise CommandError(13, f"{ctx.name} may only be run against the admin database.",
                           code_name_override="Unauthorized")


def _member_status(ctx, m) -> dict:
    rs = ctx.rs
    op_time = {"ts": rs.last_ts, "t": Int64(rs.term)}
    wall = rs.last_wall
    doc = {"_id": m.idx, "name": m.name, "health": 1.0 if m.alive else 0.0, "state": STATE_CODES[m.state],
           "stateStr": m.state if m.alive else "(not reachable/healthy)",
           "uptime": int(time.time() - m.started) if m.alive else 0}
    if m.alive:
        doc.update({"optime": op_time, "optimeDate": wall.replace(microsecond=0), "lastAppliedWallTime": wall,
                    "lastDurableWallTime": wall})
    primary = rs.primary
    doc["syncSourceHost"] = primary.name if primary is not None and m is not primary and m.alive else ""
    doc["syncSourceId"] = primary.idx if primary is not None and m is not primary and m.alive else -1
    doc["infoMessage"] = ""
    if m.is_primary and m.election_time is not None:
        doc["electionTime"] = m.election_time
        doc["electionDate"] = m.election_date
    doc["configVersion"] = rs.config_version
    doc["configTerm"] = rs.term
    if m is ctx.member:
        doc["self"] = True
    else:
        doc["lastHeartbeatMessage"] = ""
    return doc


@command("replSetGetStatus")
def repl_set_get_status(ctx):
    _admin(ctx)
    rs = ctx.rs
    op_time = {"ts": rs.last_ts, "t": Int64(rs.term)}
    wall = rs.last_wall
    primary = rs.primary
    me = ctx.member
    return {
        "set": rs.name,
        "date": rs.wall_now(),
        "myState": STATE_CODES[me.state],
        "term": Int64(rs.term),
        "syncSourceHost": primary.name if primary is not None and primary is not me else "",
        "syncSourceId": primary.idx if primary is not None and primary is not me else -1,
        "heartbeatIntervalMillis": Int64(2000),
        "majorityVoteCount": rs.majority(),
        "writeMajorityCount": rs.majority(),
        "votingMembersCount": len(rs.members),
        "writableVotingMembersCount": len(rs.members),
        "optimes": {"lastCommittedOpTime": op_time, "lastCommittedWallTime": wall,
                    "readConcernMajorityOpTime": op_time, "appliedOpTime": op_time, "durableOpTime": op_time,
                    "lastAppliedWallTime": wall, "lastDurableWallTime": wall},
        "members": [_member_status(ctx, m) for m in rs.members],
    }


@command("replSetGetConfig")
def repl_set_get_config(ctx):
    _admin(ctx)
    rs = ctx.rs
    return {"config": {
        "_id": rs.name, "version": rs.config_version, "term": rs.term,
        "members": [{"_id": m.idx, "host": m.name, "arbiterOnly": False, "buildIndexes": True, "hidden": False,
                     "priority": m.priority, "tags": {}, "secondaryDelaySecs": Int64(0), "votes": 1}
                    for m in rs.members],
        "protocolVersion": Int64(1), "writeConcernMajorityJournalDefault": True,
        "settings": {"chainingAllowed": True, "heartbeatIntervalMillis": 2000, "heartbeatTimeoutSecs": 10,
                     "electionTimeoutMillis": int(rs.config.election_timeout * 1000),
                     "catchUpTimeoutMillis": -1, "replicaSetId": rs.members[0].process_id},
    }}


@command("replSetStepDown")
def repl_set_step_down(ctx):
    _admin(ctx)
    seconds = ctx.target
    secs = to_int(seconds) if seconds is not None and not isinstance(seconds, bool) else 60
    if secs is None:
        secs = 60
    ctx.rs.step_down(ctx.member, secs, force=truthy(ctx.cmd.get("force")))
    return {}


@command("replSetFreeze")
def repl_set_freeze(ctx):
    _admin(ctx)
    secs = to_int(ctx.target) or 0
    ctx.rs.freeze(ctx.member, secs)
    return {} if secs else {"info": "unfreezing"}


@command("replSetStepUp")
def repl_set_step_up(ctx):
    _admin(ctx)
    rs = ctx.rs
    if ctx.member.is_primary:
        return {}
    primary = rs.primary
    if primary is not None:
        primary.state = "SECONDARY"
        rs._interrupt(primary)
    ctx.member.frozen_until = 0
    rs.elect(candidate=ctx.member)
    return {}


@command("configureFailPoint")
def configure_fail_point(ctx):
    _admin(ctx)
    name = ctx.target
    if "mode" not in ctx.cmd:
        raise CommandError(2, "Missing mode argument")
    count = ctx.member.failpoints.configure(name, ctx.cmd.get("mode"), ctx.cmd.get("data"))
    return {"count": count}


@command("appendOplogNote", kind="write")
def append_oplog_note(ctx):
    _admin(ctx)
    ctx.rs.log_noop(str(ctx.cmd.get("data")))
    ctx.op_ts = ctx.rs.last_ts
    return {}


# ---- the emulator's own fault commands (documented in docs/emulator.md) --------------------------------------

def _member_arg(ctx, key="member"):
    rs = ctx.rs
    v = ctx.cmd.get(key)
    if v is None:
        v = ctx.target if ctx.name != "emulatorSetDelay" else None
    if v is None or v is True or (isinstance(v, int) and not isinstance(v, bool) and v == -1):
        return ctx.member
    if isinstance(v, str):
        for m in rs.members:
            if m.name == v or str(m.port) == v:
                return m
        if v == "primary":
            if rs.primary is None:
                raise CommandError(10107, "there is no primary")
            return rs.primary
        raise CommandError(2, f"no member {v!r} in replica set {rs.name}")
    idx = to_int(v)
    if idx is None or not 0 <= idx < len(rs.members):
        raise CommandError(2, f"member index {v!r} out of range 0..{len(rs.members) - 1}")
    return rs.members[idx]


@command("emulatorStatus")
def emulator_status(ctx):
    rs = ctx.rs
    oplog = rs.oplog
    return {
        "replset": rs.name, "term": Int64(rs.term), "primary": rs.primary.name if rs.primary else None,
        "members": [{"index": m.idx, "name": m.name, "state": m.state, "alive": m.alive,
                     "frozenFor": max(0.0, m.frozen_until - time.monotonic()), "connections": len(m.connections),
                     "cursors": len(m.cursors.cursors), "delayMS": m.reply_delay_ms} for m in rs.members],
        "oplog": {"entries": len(oplog), "bytes": Int64(oplog.bytes), "maxEntries": oplog.max_entries,
                  "maxBytes": oplog.max_bytes, "first": oplog.first.ts if oplog.first else None,
                  "last": oplog.last.ts if oplog.last else None},
        "dataDir": rs.config.data_dir,
    }


@command("emulatorStepDown")
def emulator_step_down(ctx):
    rs = ctx.rs
    primary = rs.primary
    if primary is None:
        raise CommandError(10107, "there is no primary to step down")
    secs = to_int(ctx.cmd.get("seconds", 60))
    rs.step_down(primary, secs, force=truthy(ctx.cmd.get("force")))
    return {"steppedDown": primary.name}


@command("emulatorElect")
def emulator_elect(ctx):
    rs = ctx.rs
    target = _member_arg(ctx)
    if not target.alive:
        raise CommandError(2, f"member {target.name} is down")
    if target.is_primary:
        return {"primary": target.name}
    primary = rs.primary
    if primary is not None:
        primary.state = "SECONDARY"
        rs._interrupt(primary)
    target.frozen_until = 0
    rs.elect(candidate=target)
    return {"primary": target.name}


@command("emulatorKillMember")
def emulator_kill_member(ctx):
    member = _member_arg(ctx)

    async def later():
        await ctx.rs.kill_member(member)
    if member is ctx.member:
        ctx.after_reply = later
    else:
        ctx.after_reply = later
    return {"killed": member.name}


@command("emulatorRestartMember")
async def emulator_restart_member(ctx):
    member = _member_arg(ctx)
    await ctx.rs.restart_member(member, ctx.conn.server_starter)
    return {"restarted": member.name}


@command("emulatorFreeze")
def emulator_freeze(ctx):
    member = _member_arg(ctx)
    secs = to_int(ctx.cmd.get("seconds", 60)) or 0
    ctx.rs.freeze(member, secs)
    return {"frozen": member.name, "seconds": secs}


@command("emulatorDropConnections")
def emulator_drop_connections(ctx):
    rs = ctx.rs
    which = ctx.cmd.get("member")
    members = rs.members if which is None else [_member_arg(ctx)]

    async def later():
        for m in members:
            m.drop_connections()
    ctx.after_reply = later
    return {"members": [m.name for m in members]}


@command("emulatorSetDelay")
def emulator_set_delay(ctx):
    rs = ctx.rs
    ms = float(ctx.cmd.get("ms", ctx.target if not isinstance(ctx.target, bool) else 0) or 0)
    which = ctx.cmd.get("member")
    members = rs.members if which is None else [_member_arg(ctx)]
    commands = ctx.cmd.get("commands")
    for m in members:
        if commands:
            for c in commands:
                m.command_delays[c] = ms
        else:
            m.reply_delay_ms = ms
            if ms == 0:
                m.command_delays.clear()
    return {"members": [m.name for m in members], "ms": ms}


@command("emulatorSetOplogLimits")
def emulator_set_oplog_limits(ctx):
    oplog = ctx.rs.oplog
    max_entries, max_bytes = oplog.max_entries, oplog.max_bytes
    if "maxEntries" in ctx.cmd:
        v = ctx.cmd["maxEntries"]
        max_entries = to_int(v) if v is not None else None
    if "maxBytes" in ctx.cmd:
        v = ctx.cmd["maxBytes"]
        max_bytes = to_int(v) if v is not None else None
    oplog.set_limits(max_entries, max_bytes)
    return {"entries": len(oplog), "first": oplog.first.ts if oplog.first else None}


@command("emulatorNoop")
def emulator_noop(ctx):
    rs = ctx.rs
    if rs.primary is None:
        raise CommandError(10107, "there is no primary")
    entry = rs.log_noop(str(ctx.cmd.get("msg", "emulator noop")))
    ctx.op_ts = entry.ts
    return {"ts": entry.ts}


@command("emulatorCheckpoint")
def emulator_checkpoint(ctx):
    saver = getattr(ctx.rs, "checkpoint", None)
    if saver is None or ctx.rs.config.data_dir is None:
        raise CommandError(2, "the emulator runs without a data directory")
    saver()
    return {"at": datetime.datetime.now(datetime.UTC).replace(tzinfo=None)}

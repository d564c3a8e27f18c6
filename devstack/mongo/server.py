"""Sockets: one asyncio server per member, one task per connection, OP_MSG / OP_QUERY in, replies out
(with exhaust streaming for awaitable hello and getMore, injected delays, and dropped connections)."""

from __future__ import annotations

import asyncio
import logging
import struct

import bson

from devstack.mongo import rawstrings, wire
from devstack.mongo.bsonutil import RawCursor, elements
from devstack.mongo.dispatch import CloseConnection, run_command
from devstack.mongo.errors import CommandError

log = logging.getLogger("devstack.mongo")
_I32 = struct.Struct("<i")
_NO_DELAY = ("configureFailPoint",)


class Connection:
    def __init__(self, member, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server_starter):
        self.member = member
        self.reader = reader
        self.writer = writer
        self.id = member.next_conn_id
        member.next_conn_id += 1
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else ""
        self.app_name = None
        self.awaitable_hello = False
        self.server_starter = server_starter
        self.after_reply = None
        self.closed = False
        self._request_id = 1
        transport = writer.transport
        if transport is not None:
            # drain() returns once a reply is entirely in the kernel, so work scheduled after a reply (change
            # stream prefetch) never holds back its last bytes
            transport.set_write_buffer_limits(high=0)

    def close(self):
        if not self.closed:
            self.closed = True
            transport = self.writer.transport
            if transport is not None:
                transport.abort()

    def next_request_id(self) -> int:
        self._request_id += 1
        return self._request_id

    async def serve(self):
        member = self.member
        member.connections.add(self)
        reader = self.reader
        try:
            while not self.closed:
                header = await reader.readexactly(16)
                length, request_id, _response_to, opcode = wire.parse_header(header)
                if length < 16 or length > wire.MAX_MESSAGE_SIZE:
                    break
                body = await reader.readexactly(length - 16)
                if opcode == wire.OP_MSG:
                    flags, cmd = wire.parse_op_msg(body)
                    await self._handle_msg(request_id, flags, cmd)
                elif opcode == wire.OP_QUERY:
                    await self._handle_query(request_id, body)
                else:
                    log.warning("%s: unsupported opcode %d, closing connection", member.name, opcode)
                    break
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        except CloseConnection:
            pass
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: connection %d failed", member.name, self.id)
        finally:
            member.connections.discard(self)
            self.close()

    async def _delay(self, cmd):
        member = self.member
        name = next(iter(cmd), "")
        if name.startswith("emulator") or name in _NO_DELAY:
            return
        ms = member.command_delays.get(name, member.reply_delay_ms)
        if ms:
            await asyncio.sleep(ms / 1000.0)

    async def _run(self, cmd, **kw):
        try:
            return await run_command(self.member, self, cmd, **kw)
        except CloseConnection:
            self.close()
            raise

    def _encode(self, reply) -> bytes:
        try:
            cursor = reply.get("cursor")
            if isinstance(cursor, RawCursor):
                rest = elements({k: v for k, v in reply.items() if k != "cursor"})
                chunks = cursor.chunks()
                size = 4 + 8 + sum(map(len, chunks)) + len(rest) + 1
                return b"".join([_I32.pack(size), b"\x03cursor\x00", *chunks, rest, b"\x00"])
            return rawstrings.encode(reply)
        except Exception as exc:
            log.exception("cannot encode reply")
            err = CommandError(10334, f"BSONObj size is invalid or reply could not be encoded: {exc}")
            return bson.encode(err.to_reply())

    async def _send(self, *parts: bytes):
        if self.closed:
            raise CloseConnection()
        if len(parts) > 1 and len(parts[-1]) < 1 << 20:
            parts = (b"".join(parts),)     # one send() for ordinary replies
        for data in parts:
            self.writer.write(data)
        await self.writer.drain()

    async def _handle_msg(self, request_id, flags, cmd):
        await self._delay(cmd)
        reply = await self._run(cmd)
        after, self.after_reply = self.after_reply, None
        if flags & wire.MORE_TO_COME:
            if after:
                asyncio.get_running_loop().create_task(after())
            return
        name = next(iter(cmd), "")
        exhaust = bool(flags & wire.EXHAUST_ALLOWED) and reply.get("ok") and (
            (name in ("hello", "isMaster", "ismaster") and "topologyVersion" in cmd and "maxAwaitTimeMS" in cmd)
            or (name == "getMore" and reply.get("cursor", {}).get("id")))
        response_to = request_id
        while True:
            rid = self.next_request_id()
            out_flags = wire.MORE_TO_COME if exhaust else 0
            head, payload = wire.op_msg_parts(rid, response_to, self._encode(reply), out_flags)
            await self._send(head, payload)
            if after:
                asyncio.get_running_loop().create_task(after())
                after = None
            if not exhaust:
                return
            response_to = rid
            if name == "getMore":
                if not reply.get("cursor", {}).get("id"):
                    return
            else:
                cmd = dict(cmd)
                cmd["topologyVersion"] = reply.get("topologyVersion")
            await self._delay(cmd)
            reply = await self._run(cmd)
            if not reply.get("ok"):
                exhaust = False
            elif name == "getMore" and not reply.get("cursor", {}).get("id"):
                exhaust = False

    async def _handle_query(self, request_id, body):
        flags, collection, _skip, _n, query = wire.parse_op_query(body)
        db, _, coll = collection.partition(".")
        if coll != "$cmd":
            data = wire.encode_op_reply(self.next_request_id(), request_id,
                                        [{"$err": "OP_QUERY is no longer supported", "code": 5739101,
                                          "ok": 0.0}], flags=2)
            await self._send(data)
            return
        if "$query" in query:
            inner = dict(query["$query"])
            if "$readPreference" in query:
                inner["$readPreference"] = query["$readPreference"]
            query = inner
        name = next(iter(query), "")
        if name.lower() not in ("ismaster", "hello"):
            reply = {"ok": 0.0, "errmsg": "Unsupported OP_QUERY command: " + name, "code": 352,
                     "codeName": "UnsupportedOpQueryCommand"}
        else:
            await self._delay(query)
            reply = await self._run(query, db=db, secondary_ok=bool(flags & wire.QUERY_SECONDARY_OK))
        data = wire.encode_op_reply(self.next_request_id(), request_id, [reply])
        await self._send(data)

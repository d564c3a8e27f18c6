"""Shard keys and chunks: a collection's key pattern (ranged or hashed fields), the key value of a document or
of a query's equalities, and the chunk (range of key values, half-open `[min, max)`) that owns a value."""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field

import bson
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.timestamp import Timestamp

from devstack.mongo.bsonutil import MISSING, sort_key
from devstack.mongo.errors import CommandError
from devstack.mongo.query import get_path

_I64 = struct.Struct("<q")


def hash_value(value) -> Int64:
    """A hashed shard key's value: 64 bits of an MD5 of the value's BSON (MongoDB's own hash differs in bytes,
    not in kind: equal values hash equal, neighbours scatter)."""
    digest = hashlib.md5(bson.encode({"": value}), usedforsecurity=False).digest()
    return Int64(_I64.unpack_from(digest)[0])


class ShardKey:
    def __init__(self, pattern):
        if not isinstance(pattern, dict) or not pattern:
            raise CommandError(2, "Shard key pattern must be a non-empty object")
        hashed = [f for f, v in pattern.items() if v == "hashed"]
        for f, v in pattern.items():
            if v != "hashed" and v not in (1, 1.0):
                raise CommandError(2, f"Shard key pattern fields must be 1 or 'hashed'; got {f}: {v!r}")
        if len(hashed) > 1:
            raise CommandError(31303, "A shard key pattern cannot contain more than one hashed field",
                               code_name_override="Location31303")
        self.pattern = dict(pattern)
        self.fields = list(pattern)
        self.hashed = hashed[0] if hashed else None

    def value_of(self, doc) -> dict:
        """The key of a stored document (a missing field counts as null, as MongoDB does since 4.4)."""
        out = {}
        for f in self.fields:
            v = get_path(doc, f)
            v = None if v is MISSING else v
            out[f] = hash_value(v) if f == self.hashed else v
        return out

    def value_from_filter(self, flt) -> dict | None:
        """The key a query pins down with equalities on every key field, else None (the query is broadcast)."""
        if not isinstance(flt, dict):
            return None
        out = {}
        for f in self.fields:
            if f not in flt:
                return None
            v = flt[f]
            if isinstance(v, dict) and v and next(iter(v)).startswith("$"):
                if set(v) != {"$eq"}:
                    return None
                v = v["$eq"]
            if isinstance(v, (dict, list)) and f != self.hashed:
                return None
            out[f] = hash_value(v) if f == self.hashed else v
        return out

    def order(self, key: dict) -> tuple:
        return tuple(sort_key(key.get(f)) for f in self.fields)

    def global_min(self) -> dict:
        return {f: MinKey() for f in self.fields}

    def global_max(self) -> dict:
        return {f: MaxKey() for f in self.fields}


@dataclass
class Chunk:
    min: dict
    max: dict
    shard: str
    version: tuple = (1, 0)
    id: ObjectId = field(default_factory=ObjectId)
    since: Timestamp = field(default_factory=lambda: Timestamp(0, 0))


class ShardedCollection:
    """What config.collections and config.chunks say about one sharded collection."""

    def __init__(self, ns: str, key: ShardKey, uuid, unique: bool, timestamp: Timestamp):
        self.ns = ns
        self.key = key
        self.uuid = uuid
        self.unique = unique
        self.epoch = ObjectId()
        self.timestamp = timestamp
        self.chunks: list[Chunk] = []
        self.major = 1

    def chunk_for(self, key: dict) -> Chunk:
        order = self.key.order(key)
        for chunk in self.chunks:
            if self.key.order(chunk.min) <= order < self.key.order(chunk.max):
                return chunk
        return self.chunks[-1]

    def chunk_containing(self, key: dict) -> Chunk | None:
        order = self.key.order(key)
        for chunk in self.chunks:
            if self.key.order(chunk.min) <= order < self.key.order(chunk.max):
                return chunk
        return None

    def chunk_with_bounds(self, low: dict, high: dict) -> Chunk | None:
        for chunk in self.chunks:
            if self.key.order(chunk.min) == self.key.order(low) and self.key.order(chunk.max) == self.key.order(high):
                return chunk
        return None

    def shards(self) -> list[str]:
        seen: list[str] = []
        for chunk in self.chunks:
            if chunk.shard not in seen:
                seen.append(chunk.shard)
        return seen

    def next_version(self, bump_major: bool) -> tuple:
        if bump_major:
            self.major += 1
            return (self.major, 0)
        top = max(c.version for c in self.chunks) if self.chunks else (self.major, 0)
        return (top[0], top[1] + 1)

    def in_chunk(self, chunk: Chunk, doc) -> bool:
        order = self.key.order(self.key.value_of(doc))
        return self.key.order(chunk.min) <= order < self.key.order(chunk.max)


def hashed_split_points(n: int) -> list[Int64]:
    """n - 1 points splitting the 64-bit hash space into n even ranges."""
    span = 2**64 // n
    return [Int64(-2**63 + span * i) for i in range(1, n)]

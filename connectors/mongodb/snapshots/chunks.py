"""Splitting a collection into `_id` ranges, and the query that reads exactly one range.

Planning (`plan_collection`) takes the smallest and largest `_id` (two index look-ups), then:

- a collection of at most one chunk's worth of documents is one chunk `[min, max]`;
- otherwise the server's `splitVector` gives split points every `chunk size` documents (the command sharding
  uses; it walks the `_id` index without reading documents);
- where `splitVector` is refused (Atlas shared tiers, missing privilege, mongos) a `$sample` of `_id`s, sorted in
  BSON order on the client, gives approximately equal ranges.

Boundaries `[b0 = min, b1, …, bn = max]` make chunks `[b_i, b_i+1)`, the last one `[b_n-1, b_n]`. Documents
inserted outside `[min, max]` after planning are not lost: they were inserted after the snapshot's stream position
and arrive through the stream.

`range_query` keeps every operator inside one BSON type bracket (`$gte`/`$lt` only match their operand's
bracket) and names the brackets strictly between the bounds with `$type`, so a chunk whose bounds are a number
and an ObjectId also reads the strings, objects and binaries in between — and nothing is read twice.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from pymongo.errors import OperationFailure, PyMongoError

from connectors.core.snapshot.chunks import Chunk as CoreChunk
from connectors.core.snapshot.chunks import Plan
from connectors.core.snapshot.chunks import chunks_of as core_chunks_of
from connectors.mongodb.snapshots.bson_order import BRACKETS, MAX_KEY, MIN_KEY, bracket, sort_key, type_aliases

log = logging.getLogger(__name__)

MAX_CHUNKS_PER_COLLECTION = 2048  # keeps the offset record (which lists the boundaries) well under 1 MB
SAMPLE_PER_CHUNK = 8  # $sample size per wanted chunk when splitVector is unavailable
MAX_SAMPLE = 50_000


@dataclass(frozen=True)
class Chunk(CoreChunk):
    """One `_id` range of one collection: `[lower, upper)`, or `[lower, upper]` for a collection's last chunk."""

    def query(self, override: dict | None = None) -> dict:
        return with_filter(range_query(self.lower, self.upper, self.upper_inclusive), override)


def range_query(lower: Any, upper: Any, upper_inclusive: bool) -> dict:
    """A filter matching exactly the `_id`s in [lower, upper) (or [lower, upper]) in BSON index order."""
    low, high = bracket(lower), bracket(upper)
    upper_op = "$lte" if upper_inclusive else "$lt"
    if low > high:
        raise ValueError(f"chunk bounds out of order: {lower!r} > {upper!r}")
    if low == high:
        if low in (MIN_KEY, MAX_KEY):
            return {"_id": {"$type": BRACKETS[low][1][0]}}
        return {"_id": {"$gte": lower, upper_op: upper}}
    parts: list[dict] = [{"_id": {"$type": "minKey"}} if low == MIN_KEY else {"_id": {"$gte": lower}}]
    middle = type_aliases(low + 1, high - 1)
    if middle:
        parts.append({"_id": {"$type": middle}})
    if high == MAX_KEY:
        if upper_inclusive:
            parts.append({"_id": {"$type": "maxKey"}})
    else:
        parts.append({"_id": {upper_op: upper}})
    return {"$or": parts}


def with_filter(query: dict, override: dict | None) -> dict:
    if not override:
        return query
    return {"$and": [override, query]}


def chunks_of(namespace: str, bounds: list, first_number: int) -> list[Chunk]:
    """The chunks that `bounds` (as planned) make, numbered from `first_number`."""
    return core_chunks_of(namespace, bounds, first_number, Chunk)


# -- planning ------------------------------------------------------------------------------------------------


def _edge(collection, direction: int):
    for document in collection.find({}, {"_id": 1}, sort=[("_id", direction)], limit=1):
        return document["_id"]
    return _MISSING


_MISSING = object()


def collection_stats(database, name: str) -> tuple[int, int]:
    """(document count, average document size in bytes; 0 when unknown)."""
    try:
        stats = database.command("collStats", name)
        return int(stats.get("count") or 0), int(stats.get("avgObjSize") or 0)
    except PyMongoError:
        return int(database[name].estimated_document_count()), 0


def document_bytes(client, namespace: str) -> int:
    """About how many bytes a document of the collection holds (collStats' average; 0: unknown)."""
    db_name, _, coll_name = namespace.partition(".")
    return collection_stats(client[db_name], coll_name)[1]


def plan_collection(client, namespace: str, chunk_size: int, max_chunks: int = MAX_CHUNKS_PER_COLLECTION) -> Plan:
    db_name, _, coll_name = namespace.partition(".")
    database = client[db_name]
    collection = database[coll_name]
    lowest = _edge(collection, 1)
    if lowest is _MISSING:
        return Plan([], 0, "empty")
    highest = _edge(collection, -1)
    if highest is _MISSING:  # emptied in between
        return Plan([], 0, "empty")
    count, average = collection_stats(database, coll_name)
    size = max(chunk_size, math.ceil(count / max(1, max_chunks)))
    if count <= size:
        return Plan([lowest, highest], count, "single")
    method = "splitVector"
    try:
        keys = _split_vector(database, namespace, size, average, max_chunks)
    except OperationFailure as error:
        log.info("splitVector refused on %s (%s); sampling chunk boundaries instead", namespace, error.code)
        keys, method = _sampled(collection, count, size), "sample"
    low_key, high_key = sort_key(lowest), sort_key(highest)
    inner: list = []
    last = low_key
    for key in sorted(keys, key=sort_key):
        ordered = sort_key(key)
        if last < ordered < high_key:
            inner.append(key)
            last = ordered
    inner = _thin(inner, max_chunks - 1)
    return Plan([lowest, *inner, highest], count, method)


def _split_vector(database, namespace: str, size: int, average: int, max_chunks: int) -> list:
    # splitVector splits every maxChunkSizeBytes / (2 * avgObjSize) documents (and at most every maxChunkObjects).
    max_bytes = max(1, average) * size * 2
    reply = database.command(
        "splitVector",
        namespace,
        keyPattern={"_id": 1},
        maxChunkSizeBytes=max_bytes,
        maxChunkObjects=size,
        maxSplitPoints=max_chunks,
    )
    return [key["_id"] for key in reply.get("splitKeys", []) if "_id" in key]


def _sampled(collection, count: int, size: int) -> list:
    wanted = max(1, math.ceil(count / size))
    sample_size = min(count, MAX_SAMPLE, wanted * SAMPLE_PER_CHUNK)
    ids = [d["_id"] for d in collection.aggregate([{"$sample": {"size": sample_size}}, {"$project": {"_id": 1}}])]
    ids.sort(key=sort_key)
    if not ids:
        return []
    step = len(ids) / wanted
    return [ids[int(i * step)] for i in range(1, wanted) if int(i * step) < len(ids)]


def _thin(keys: list, limit: int) -> list:
    if len(keys) <= limit:
        return keys
    step = len(keys) / max(1, limit)
    return [keys[int(i * step)] for i in range(limit)]

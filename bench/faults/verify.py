"""The workload's checker: what a read_committed consumer of the topics holds, against the workload's log and the
tables' rows. It parses the JSON events itself (nothing of the connector's code decides what is right): the
relational envelope (`after.seq`) and MongoDB's (`after` and `updateDescription.updatedFields` as extended JSON
strings, the key's `id` too).

Per key (table, id), in topic order: the snapshot's `r` (if any) sets the key's cut, every logged write after it
must be streamed once (lost / duplicated), in seq order (reordered), each delete followed by one tombstone; each
captured transaction has one BEGIN and one END whose `event_count` is its number of events, its events numbered
`total_order` 1..n, and a multi-statement transaction's writes share one transaction id; the latest value per key
(tombstones removing) equals the table's row. A key read twice by the snapshot is duplicated (every source's
snapshot resumes its plan after a crash, under the same position). Recovery after a fault: from its end to the
first event it held back (of a write logged since it began, or a snapshot row).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    key: dict | None
    value: dict | None  # None: a tombstone
    at: float = 0.0


@dataclass
class Verdict:
    changes: int = 0  # streamed writes checked
    snapshot_rows: int = 0  # keys read by the snapshot
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
    unexpected: int = 0  # events of no logged write
    tombstone_errors: int = 0  # deletes without exactly one tombstone after them
    transaction_errors: int = 0
    state_mismatches: int = 0  # keys whose final topic value differs from the table
    examples: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if len(self.examples) < 8:
            self.examples.append(text)

    @property
    def failed(self) -> bool:
        return bool(self.lost or self.duplicated or self.reordered or self.unexpected or self.tombstone_errors
                    or self.transaction_errors or self.state_mismatches)


def _payload(value: dict) -> dict:
    return value["payload"] if "payload" in value and "schema" in value else value


def _extended(value):
    """MongoDB's extended JSON scalars as plain values ({"$numberLong": "7"} -> 7)."""
    if isinstance(value, dict) and len(value) == 1:
        (name, inner), = value.items()
        if name in ("$numberLong", "$numberInt"):
            return int(inner)
    return value


def _key_id(key: dict | None):
    if key is None:
        return None
    found = _payload(key).get("id")
    if isinstance(found, str):  # MongoDB: the _id as extended JSON
        try:
            found = json.loads(found)
        except ValueError:
            return found
    return _extended(found)


def _document(field) -> dict:
    """`after` or `updatedFields`: a dict (relational) or an extended JSON string (MongoDB)."""
    if isinstance(field, str):
        field = json.loads(field)
    return field or {}


def event_seq(value: dict) -> int | None:
    """The seq an event's write wrote (None for a delete): an update's own fields first (MongoDB's `after` of an
    update is the document as looked up later, which may hold a later write's seq)."""
    updated = _document((value.get("updateDescription") or {}).get("updatedFields"))
    if "seq" in updated:
        return _extended(updated["seq"])
    return _extended(_document(value.get("after")).get("seq"))


def verify(log: list[dict], records: list[Record], tables: dict[str, str], transaction_topic: str | None,
           rows: dict[tuple[str, int], int] | None) -> Verdict:
    """`tables`: topic -> table name; `rows`: the tables' rows {(table, id): seq} (None: not compared)."""
    out = Verdict()
    writes: dict[tuple[str, int], list[tuple[int, str]]] = defaultdict(list)  # key -> [(seq, op)] in seq order
    txn_of_seq: dict[int, int] = {}
    size_of_txn: dict[int, int] = {}
    logged_at: dict[int, float] = {}
    for entry in log:
        size_of_txn[entry["txn"]] = len(entry["ops"])
        for table, key, op, seq in entry["ops"]:
            writes[(table, key)].append((seq, op))
            txn_of_seq[seq] = entry["txn"]
            logged_at[seq] = entry["at"]
    started = min((r.at for r in records), default=0.0)  # the first event received: the stream had started
    for ops in writes.values():
        ops.sort()
    delete_seq = {k: seq for k, ops in writes.items() for seq, op in ops if op == "d"}

    per_key: dict[tuple[str, int], list[tuple[str, int | None]]] = defaultdict(list)  # (op or "tomb", seq)
    blocks: list[tuple[int, dict]] = []  # (seq, transaction block) of streamed events
    for record in records:
        if record.topic not in tables:
            continue
        key = (tables[record.topic], _key_id(record.key))
        if record.value is None:
            per_key[key].append(("tomb", None))
            continue
        value = _payload(record.value)
        op = value.get("op")
        seq = delete_seq.get(key) if op == "d" else event_seq(value)
        per_key[key].append((op, seq))
        if op != "r" and value.get("transaction") and seq is not None:
            blocks.append((seq, value["transaction"]))

    topic_state: dict[tuple[str, int], int] = {}
    for key in set(writes) | set(per_key):
        logged = writes.get(key, [])
        logged_seqs = {seq for seq, _ in logged}
        events = per_key.get(key, [])
        reads = [seq for op, seq in events if op == "r"]
        if reads:
            out.snapshot_rows += 1
            if len(reads) > 1:
                out.duplicated += len(reads) - 1
                out.note(f"{key}: read {len(reads)} times by the snapshot")
            cut = max(reads)
            if cut not in logged_seqs:
                out.unexpected += 1
                out.note(f"{key}: snapshot read seq {cut}, which no logged write wrote")
        elif any(op in ("c", "u", "d") for op, _ in events) or not logged:
            # not read by the snapshot: the key did not exist when its chunk was read, and every write streams that
            # came after the stream's start (writes before the connector's first event may precede it: MongoDB
            # streams from where the snapshot began, so a key deleted before its chunk's read shows only its delete)
            first = min((seq for op, seq in events if op in ("c", "u", "d") and seq in logged_seqs), default=None)
            before = [seq for seq, _ in logged if first is not None and seq < first and logged_at[seq] < started]
            cut = max(before, default=-1)
        elif logged[-1][1] == "d":
            cut = logged[-1][0]  # inserted and deleted before its chunk was read: nothing in the topics
        else:
            cut = logged[-1][0]
            out.lost += 1
            out.note(f"{key}: row (seq {cut}) neither snapshotted nor streamed")
        expected = [seq for seq, _ in logged if seq > cut]
        out.changes += len(expected)
        streamed = [(op, seq) for op, seq in events if op in ("c", "u", "d")]
        counts = Counter(streamed)
        for (op, seq), n in counts.items():
            if seq is None or seq not in logged_seqs:
                out.unexpected += n
                out.note(f"{key}: {op} event of seq {seq}, which no logged write wrote")
            elif n > 1:
                out.duplicated += n - 1
                out.note(f"{key}: {op} seq {seq} delivered {n} times")
        delivered = {seq for _, seq in streamed}
        for seq in expected:
            if seq not in delivered:
                out.lost += 1
                out.note(f"{key}: write seq {seq} never delivered")
        highest = -1  # among streamed events (MongoDB streams again the writes a snapshot row already holds)
        for op, seq in events:
            if op in ("tomb", "r") or seq is None:
                continue
            if seq < highest:
                out.reordered += 1
                out.note(f"{key}: {op} seq {seq} after seq {highest}")
            highest = max(highest, seq)
        out.tombstone_errors += _tombstone_errors(key, events, out)
        latest = None
        for op, seq in events:
            latest = None if op in ("tomb", "d") else seq
        if latest is not None:
            topic_state[key] = latest
    if rows is not None:
        for key in set(rows) | set(topic_state):
            if rows.get(key) != topic_state.get(key):
                out.state_mismatches += 1
                out.note(f"{key}: table has seq {rows.get(key)}, the topics end with {topic_state.get(key)}")
    if transaction_topic is not None:
        _check_transactions(out, records, transaction_topic, blocks, txn_of_seq, size_of_txn)
    return out


def _tombstone_errors(key, events: list[tuple[str, int | None]], out: Verdict) -> int:
    """Each delete is followed by exactly one tombstone, before the key's next event; no tombstone without one."""
    errors = 0
    pending = False
    for op, _ in events:
        if op == "tomb":
            if not pending:
                errors += 1
                out.note(f"{key}: a tombstone without a delete before it")
            pending = False
        else:
            if pending:
                errors += 1
                out.note(f"{key}: a delete without its tombstone")
            pending = op == "d"
    if pending:
        errors += 1
        out.note(f"{key}: the last delete has no tombstone")
    return errors


def _check_transactions(out: Verdict, records: list[Record], topic: str, blocks: list[tuple[int, dict]],
                        txn_of_seq: dict[int, int], size_of_txn: dict[int, int]) -> None:
    begins: Counter = Counter()
    ends: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        if record.topic != topic or record.value is None:
            continue
        value = _payload(record.value)
        if value.get("status") == "BEGIN":
            begins[value["id"]] += 1
        elif value.get("status") == "END":
            ends[value["id"]].append(value)
    orders: dict[str, list[int]] = defaultdict(list)
    ids_of_txn: dict[int, set[str]] = defaultdict(set)
    seqs_of_id: dict[str, set[int]] = defaultdict(set)
    for seq, block in blocks:
        if seq in seqs_of_id[block["id"]]:
            continue  # a duplicated event: counted as such already
        seqs_of_id[block["id"]].add(seq)
        orders[block["id"]].append(block["total_order"])
        ids_of_txn[txn_of_seq.get(seq, -1)].add(block["id"])
    for tid, order in orders.items():
        problems = []
        if begins[tid] != 1:
            problems.append(f"{begins[tid]} BEGIN")
        if len(ends[tid]) != 1:
            problems.append(f"{len(ends[tid])} END")
        elif ends[tid][0].get("event_count") != len(order):
            problems.append(f"END event_count {ends[tid][0].get('event_count')} for {len(order)} events")
        if sorted(order) != list(range(1, len(order) + 1)):
            problems.append(f"total_order {sorted(order)[:6]}")
        if problems:
            out.transaction_errors += 1
            out.note(f"transaction {tid}: {', '.join(problems)}")
    for txn, ids in ids_of_txn.items():
        if txn >= 0 and len(ids) != 1:
            out.transaction_errors += 1
            out.note(f"writer transaction {txn} ({size_of_txn.get(txn)} writes) came as transactions {sorted(ids)}")


def recovery(log: list[dict], records: list[Record], tables: dict[str, str],
             faults: list[tuple[float, float]]) -> list[float | None]:
    """Per fault (start, end), monotonic: seconds from its end to the first record received after it of a write
    logged since it began, or of a snapshot row (rows written before it are consumed within milliseconds, before
    it ends); None when nothing came."""
    logged_at = {seq: entry["at"] for entry in log for _, _, _, seq in entry["ops"]}
    delete_at = {(table, key): entry["at"] for entry in log for table, key, op, _ in entry["ops"] if op == "d"}
    arrivals = []  # (received, written) of every data event
    for record in records:
        if record.topic not in tables or record.value is None:
            continue
        value = _payload(record.value)
        if value.get("op") == "r":
            arrivals.append((record.at, float("inf")))
        elif value.get("op") == "d":
            arrivals.append((record.at, delete_at.get((tables[record.topic], _key_id(record.key)), 0.0)))
        else:
            arrivals.append((record.at, logged_at.get(event_seq(value), 0.0)))
    out = []
    for start, end in faults:
        after = [received for received, written in arrivals if received >= end and written >= start]
        out.append(min(after) - end if after else None)
    return out


class Collector(threading.Thread):
    """Reads the given topics from their beginning with isolation.level=read_committed, keeping every record."""

    def __init__(self, bootstrap: str, topics: list[str]):
        super().__init__(daemon=True)
        self.bootstrap, self.topics = bootstrap, list(topics)
        self.records: list[Record] = []
        self.ops: Counter = Counter()  # events received per op ("r", "c", "u", "d"), for cheap progress checks
        self.halt = threading.Event()
        self._lock = threading.Lock()

    def run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        consumer = Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": f"faults-verify-{uuid.uuid4().hex}",
            "enable.auto.commit": False, "isolation.level": "read_committed", "fetch.wait.max.ms": 50,
            "log_level": 0,
        })
        assigned: set[str] = set()
        next_lookup = 0.0
        try:
            while not self.halt.is_set():
                if len(assigned) < len(self.topics) and time.monotonic() >= next_lookup:
                    next_lookup = time.monotonic() + 0.5
                    try:
                        metadata = consumer.list_topics(timeout=2).topics
                    except Exception:  # noqa: BLE001 - the broker may be frozen; look again later
                        metadata = {}
                    for topic in set(self.topics) - assigned:
                        if topic in metadata and metadata[topic].partitions:
                            consumer.incremental_assign([TopicPartition(topic, p, OFFSET_BEGINNING)
                                                         for p in metadata[topic].partitions])
                            assigned.add(topic)
                if not assigned:
                    self.halt.wait(0.2)
                    continue
                batch = []
                for message in consumer.consume(500, 0.2):
                    if message.error() is not None:
                        continue
                    key = json.loads(message.key()) if message.key() else None
                    value = json.loads(message.value()) if message.value() is not None else None
                    batch.append(Record(message.topic(), message.partition(), key, value, time.monotonic()))
                ops = Counter(_payload(r.value).get("op") for r in batch if r.value is not None)
                with self._lock:
                    self.records.extend(batch)
                    self.ops.update(ops)
        finally:
            consumer.close()

    def snapshot(self) -> list[Record]:
        with self._lock:
            return list(self.records)

    def count(self, *ops: str) -> int:
        """Events received so far of these ops."""
        with self._lock:
            return sum(self.ops[op] for op in ops)

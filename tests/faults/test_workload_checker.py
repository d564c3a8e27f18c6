"""The campaign's checker (bench/faults/verify.py) on hand-made topic contents: it must report a lost write, a
duplicate (a row read twice by a snapshot too), a reorder, a missing tombstone, broken transaction metadata and a
final state that differs from the table, pass a clean history (so a campaign cannot pass while the checker sees
nothing), read MongoDB's envelope, and time the recovery after each fault."""

from __future__ import annotations

import json
import random

from bench.faults.verify import Record, recovery, verify
from bench.faults.workload import State

TOPICS = {"p.public.w0": "w0", "p.public.w1": "w1"}
TX = "p.transaction"

# seeded rows 0 and 1 of w0 (seq 0, 1), read by the snapshot; then: txn 2 updates w0/0 (seq 2) and inserts w1/0
# (seq 3), txn 3 deletes w0/1 (seq 4), txn 4 updates w0/0 again (seq 5), txn 5 inserts w1/1 (seq 6)
LOG = [
    {"txn": 0, "at": 0.0, "ops": [["w0", 0, "c", 0], ["w0", 1, "c", 1]]},
    {"txn": 2, "at": 1.0, "ops": [["w0", 0, "u", 2], ["w1", 0, "c", 3]]},
    {"txn": 3, "at": 2.0, "ops": [["w0", 1, "d", 4]]},
    {"txn": 4, "at": 3.0, "ops": [["w0", 0, "u", 5]]},
    {"txn": 5, "at": 4.0, "ops": [["w1", 1, "c", 6]]},
]
ROWS = {("w0", 0): 5, ("w1", 0): 3, ("w1", 1): 6}


def _event(op, key, seq, tid=None, order=None, before=None):
    after = None if op == "d" else {"id": key, "seq": seq, "pad": "p"}
    value = {"before": before, "after": after, "op": op, "source": {"lsn": 1},
             "transaction": None if tid is None else {"id": tid, "total_order": order, "data_collection_order": 1}}
    return value


def _data(table, key, value):
    topic = next(t for t, name in TOPICS.items() if name == table)
    return Record(topic, 0, {"id": key}, value)


def _tx(status, tid, count=None):
    return Record(TX, 0, {"id": tid}, {"status": status, "id": tid, "event_count": count, "data_collections": None})


def _clean() -> list[Record]:
    return [
        _data("w0", 0, _event("r", 0, 0)), _data("w0", 1, _event("r", 1, 1)),
        _tx("BEGIN", "t2"), _data("w0", 0, _event("u", 0, 2, "t2", 1)), _data("w1", 0, _event("c", 0, 3, "t2", 2)),
        _tx("END", "t2", 2),
        _tx("BEGIN", "t3"), _data("w0", 1, _event("d", 1, None, "t3", 1)), _data("w0", 1, None), _tx("END", "t3", 1),
        _tx("BEGIN", "t4"), _data("w0", 0, _event("u", 0, 5, "t4", 1)), _tx("END", "t4", 1),
        _tx("BEGIN", "t5"), _data("w1", 1, _event("c", 1, 6, "t5", 1)), _tx("END", "t5", 1),
    ]


def test_a_clean_history_passes_and_counts_snapshot_rows_and_changes_apart():
    verdict = verify(LOG, _clean(), TOPICS, TX, ROWS)
    assert not verdict.failed, verdict.examples
    assert (verdict.snapshot_rows, verdict.changes) == (2, 5)


def test_a_lost_write_is_reported():
    records = [r for r in _clean() if not (r.value and r.value.get("op") == "c" and r.key == {"id": 1})]
    verdict = verify(LOG, records, TOPICS, TX, ROWS)
    assert verdict.lost == 1 and verdict.failed
    assert verdict.state_mismatches == 1  # w1/1 is in the table, not in the topics


def test_a_duplicate_is_reported():
    records = _clean()
    records.insert(12, records[11])  # the update of seq 5 delivered twice
    verdict = verify(LOG, records, TOPICS, TX, ROWS)
    assert verdict.duplicated == 1 and verdict.failed


def test_a_reorder_is_reported():
    records = _clean()
    records[3], records[11] = records[11], records[3]  # w0/0: seq 5 before seq 2
    verdict = verify(LOG, records, TOPICS, TX, ROWS)
    assert verdict.reordered == 1 and verdict.failed
    assert verdict.state_mismatches == 1  # the topic ends with seq 2, the table has 5


def test_a_missing_or_doubled_tombstone_is_reported():
    records = _clean()
    assert records[8].value is None
    without = records[:8] + records[9:]
    assert verify(LOG, without, TOPICS, TX, ROWS).tombstone_errors == 1
    doubled = records[:9] + [records[8]] + records[9:]
    assert verify(LOG, doubled, TOPICS, TX, ROWS).tombstone_errors == 1


def test_broken_transaction_metadata_is_reported():
    records = _clean()
    wrong_count = [_tx("END", "t2", 3) if r.value == _tx("END", "t2", 2).value else r for r in records]
    assert verify(LOG, wrong_count, TOPICS, TX, ROWS).transaction_errors == 1
    two_begins = records[:2] + [_tx("BEGIN", "t2")] + records[2:]
    assert verify(LOG, two_begins, TOPICS, TX, ROWS).transaction_errors == 1
    split = [_data("w1", 0, _event("c", 0, 3, "t9", 1)) if r is records[4] else r for r in records]
    split += [_tx("BEGIN", "t9"), _tx("END", "t9", 1)]
    verdict = verify(LOG, split, TOPICS, TX, ROWS)  # one writer transaction delivered as two
    assert verdict.transaction_errors >= 2  # t2's END counts 2 for 1 event, and txn 2 came as t2 and t9


def test_a_row_the_snapshot_missed_is_lost():
    records = _clean()[1:]  # w0/0 never read by the snapshot, its later updates streamed
    verdict = verify(LOG, records, TOPICS, TX, ROWS)
    assert verdict.lost >= 1 and verdict.failed


def test_the_writer_state_follows_its_log():
    state = State(LOG)
    assert state.alive == {"w0": [0], "w1": [0, 1], "w2": []}
    assert (state.seq, state.txn) == (7, 6)
    ops = state.plan(random.Random(3))
    assert [op[3] for op in ops] == list(range(7, 7 + len(ops)))
    assert all(op[2] != "d" or op[1] in state.alive[op[0]] for op in ops)


def test_a_key_inserted_and_deleted_before_its_chunk_was_read_needs_no_event():
    """A resumed snapshot reads a chunk later than streaming starts and drops the changes it covers: a key created
    and deleted before that chunk's read leaves nothing in the topics, and that is right; a live row is not."""
    log = [*LOG, {"txn": 6, "at": 5.0, "ops": [["w1", 2, "c", 7]]}, {"txn": 7, "at": 6.0, "ops": [["w1", 2, "d", 8]]}]
    assert not verify(log, _clean(), TOPICS, TX, ROWS).failed
    alive = [*LOG, {"txn": 6, "at": 5.0, "ops": [["w1", 2, "c", 7]]}]
    verdict = verify(alive, _clean(), TOPICS, TX, {**ROWS, ("w1", 2): 7})
    assert verdict.lost == 1 and verdict.state_mismatches == 1


def test_a_row_read_twice_by_the_snapshot_is_duplicated():
    records = _clean()
    records.insert(1, records[0])
    verdict = verify(LOG, records, TOPICS, TX, ROWS)
    assert verdict.duplicated == 1 and verdict.failed


def _mongo(op, key, seq=None, updated=None, tid=None, order=None):
    """A MongoDB change event as the connector writes it: `after` and `updatedFields` are extended JSON strings."""
    after = None if op == "d" else json.dumps({"_id": {"$numberLong": str(key)}, "seq": seq, "pad": "p"})
    description = None if updated is None else {"updatedFields": json.dumps({"seq": updated}), "removedFields": []}
    return {"before": None, "after": after, "updateDescription": description, "op": op, "source": {},
            "transaction": None if tid is None else {"id": tid, "total_order": order, "data_collection_order": 1}}


def _mongo_data(table, key, value, at=1.0):
    topic = next(t for t, name in TOPICS.items() if name == table)
    return Record(topic, 0, {"id": json.dumps({"$numberLong": str(key)})}, value, at)


def test_mongodb_events_are_read_by_their_own_fields():
    """An update's seq comes from its own `updatedFields` (the looked-up `after` may hold a later write's); the
    stream starts where the snapshot began, so it may repeat writes a snapshot row holds and show only the delete of
    a key deleted before its chunk's read."""
    log = [{"txn": 0, "at": 0.0, "ops": [["w0", 0, "c", 0], ["w0", 1, "c", 1]]},
           {"txn": 1, "at": 0.5, "ops": [["w0", 0, "u", 2]]},
           {"txn": 2, "at": 0.6, "ops": [["w0", 1, "d", 3]]},
           {"txn": 3, "at": 2.0, "ops": [["w0", 0, "u", 4], ["w1", 0, "c", 5]]}]
    records = [
        _mongo_data("w0", 0, _mongo("r", 0, 2)),  # the chunk read after the update of seq 2 (w0/1 already gone)
        _mongo_data("w0", 0, _mongo("u", 0, 4, updated=2)),  # the stream repeats seq 2; `after` looked up later
        _mongo_data("w0", 1, _mongo("d", 1)), _mongo_data("w0", 1, None),
        Record(TX, 0, {"id": "t"}, {"status": "BEGIN", "id": "t"}, 2.1),
        _mongo_data("w0", 0, _mongo("u", 0, 4, updated=4, tid="t", order=1), 2.1),
        _mongo_data("w1", 0, _mongo("c", 0, 5, tid="t", order=2), 2.1),
        Record(TX, 0, {"id": "t"}, {"status": "END", "id": "t", "event_count": 2}, 2.1),
    ]
    rows = {("w0", 0): 4, ("w1", 0): 5}
    verdict = verify(log, records, TOPICS, TX, rows)
    assert not verdict.failed, verdict.examples
    assert (verdict.snapshot_rows, verdict.changes) == (1, 3)
    without_update = [r for r in records if not (r.value and (r.value.get("updateDescription") or {})
                                                 .get("updatedFields") == json.dumps({"seq": 4}))]
    verdict = verify(log, without_update, TOPICS, TX, rows)
    assert verdict.lost == 1 and verdict.state_mismatches == 1
    late = [*log, {"txn": 4, "at": 3.0, "ops": [["w1", 0, "d", 6]]}]  # written after the stream started: must come
    assert verify(late, records, TOPICS, TX, None).lost == 1


def test_recovery_is_timed_from_a_faults_end_to_the_first_event_it_held_back():
    """Per fault: the first event received after its end of a write logged since it began, or a snapshot row."""
    log = [{"txn": n, "at": float(n), "ops": [["w0", n, "c", n]]} for n in range(6)]  # write n logged at time n
    records = [_data("w0", n, _event("c", n, n)) for n in range(6)]
    arrivals = [0.5, 2.5, 2.6, 3.6, 9.0, 9.1]
    records = [Record(r.topic, r.partition, r.key, r.value, at) for r, at in zip(records, arrivals, strict=True)]
    records.append(Record(records[0].topic, 0, {"id": 99}, _event("r", 99, 99), 12.0))
    faults = [(1.5, 2.0), (4.5, 6.0), (9.5, 10.0), (12.5, 13.0)]
    timed = recovery(log, records, TOPICS, faults)
    assert [round(t, 6) if t is not None else None for t in timed] == [0.6, 3.1, 2.0, None]  # writes 2, 5; the r

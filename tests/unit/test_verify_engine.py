"""Verify's pieces that need no server: which PostgreSQL transactions a snapshot holds (across the 2^32 wrap of
event txIds), and how a topic's records fold into the state at a position."""

from __future__ import annotations

import json

from connectors.core.verify_events import field_diff, key_text, read_event, row_state, same_row
from connectors.core.verify_topics import TopicState, fold
from connectors.postgres.verify import TransactionSnapshot


def test_a_snapshot_holds_the_transactions_before_it_and_not_those_in_progress_or_later():
    snapshot = TransactionSnapshot("100:105:101,103")
    assert [x for x in range(95, 110) if snapshot.visible(x)] == [95, 96, 97, 98, 99, 100, 102, 104]


def test_event_txids_are_placed_in_the_epoch_nearest_the_snapshot():
    epoch = 1 << 32
    snapshot = TransactionSnapshot(f"{epoch + 10}:{epoch + 20}:")
    assert snapshot.visible(5)  # epoch + 5
    assert not snapshot.visible(25)  # epoch + 25: later
    assert snapshot.visible(0xFFFFFFF0)  # the previous epoch's last ids
    late = TransactionSnapshot("4294967200:4294967290:")  # ids about to wrap
    assert not late.visible(3)  # the next epoch's first ids


def event(op, after, at, key=1):
    value = {"op": op, "after": after, "source": {"at": at}}
    return key_text(json.dumps({"id": key}).encode()), read_event(json.dumps(value).encode())


def test_the_state_at_a_position_keeps_each_keys_last_covered_event_and_marks_later_ones():
    state = TopicState()
    covers = lambda source: source["at"] <= 10  # noqa: E731
    for key, built in (event("c", {"id": 1, "v": 1}, 5), event("u", {"id": 1, "v": 2}, 9),
                       event("u", {"id": 1, "v": 3}, 11), event("c", {"id": 2, "v": 1}, 6, key=2),
                       event("d", None, 8, key=2)):
        fold(state, key, built, covers, None)
    assert state.rows == {'{"id":1}': '{"id":1,"v":2}'}
    assert state.later == {'{"id":1}'}
    tombstone = read_event(None)
    fold(state, '{"id":1}', tombstone, covers, None)  # follows the later delete: not at the position
    assert '{"id":1}' in state.rows


def test_an_unavailable_value_keeps_the_previous_one_and_a_truncate_empties_the_table():
    state = TopicState()
    covers = lambda source: True  # noqa: E731
    fold(state, *event("c", {"id": 1, "big": "x" * 10, "v": 1}, 1), covers, "__unavailable")
    fold(state, *event("u", {"id": 1, "big": "__unavailable", "v": 2}, 2), covers, "__unavailable")
    assert json.loads(state.rows['{"id":1}']) == {"id": 1, "big": "x" * 10, "v": 2}
    fold(state, None, read_event(json.dumps({"op": "t", "after": None, "source": {}}).encode()), covers, None)
    assert state.rows == {}


def test_a_mongodb_document_is_kept_as_its_text_and_compared_as_text_else_as_canonical_json():
    state = TopicState()
    fold(state, *event("r", '{"_id": 1,"v": 2,"w": [1, 2]}', 1), lambda source: True, None)
    held = state.rows['{"id":1}']
    assert held == '{"_id": 1,"v": 2,"w": [1, 2]}'  # the event's own text: the source side writes the same
    assert same_row('{"_id": 1,"v": 2,"w": [1, 2]}', held)
    assert same_row('{"w":[1,2],"_id":1,"v":2}', held)  # another order and spacing: the same document
    assert not same_row('{"_id": 1,"v": 3,"w": [1, 2]}', held)
    assert not same_row('{"_id": 1,"v": 2,"w": [2, 1]}', held)
    assert not same_row('{"_id": 1,"v": 2}', held)


def test_field_diff_names_each_differing_field_with_both_values():
    assert field_diff({"a": 1, "b": 2, "c": [1]}, {"a": 1, "b": 3, "d": 4}) == {"b": [2, 3], "c": [[1], None],
                                                                               "d": [None, 4]}


def test_a_snapshot_read_at_the_views_own_wal_position_is_covered():
    """A snapshot's rows (their `lsn` the slot's consistent point) are in a view taken at that very WAL position (a
    quiet database writes nothing after the slot's creation); a streamed event there is not."""
    from connectors.postgres.verify import PgView

    view = PgView.__new__(PgView)  # no connection: covers() reads only the view's position
    view.wal_lsn, view.snapshot = 5000, TransactionSnapshot("100:105:")
    assert view.covers({"snapshot": "true", "lsn": 5000, "txId": 99})
    assert view.covers({"snapshot": "last", "lsn": 4999})
    assert not view.covers({"snapshot": "true", "lsn": 5001})
    assert not view.covers({"snapshot": "false", "lsn": 5000})  # no txId: the record's own LSN, after the view
    assert view.covers({"snapshot": "false", "lsn": 7000, "txId": 102}) and not view.covers({"txId": 105})


class RoundsView:
    """A view of one table of ten keys (`v` 1 each in the source) whose topic state at each view is given: per
    round, the keys whose topic value differs from the source's."""

    placeholder = None
    read_event = staticmethod(read_event)
    read_key = staticmethod(key_text)

    def __init__(self, topic_rows: dict[str, str], runs_ahead: bool):
        self.topic_rows, self.runs_ahead = topic_rows, runs_ahead
        self.position = {"round": len(RoundsPartition.opened)}

    def tables(self):
        return ["t"]

    def topic(self, table):
        return "topic.t"

    def plan(self, table, chunk_size):
        from connectors.core.snapshot.chunks import Plan
        return Plan([0, 5, 10], 10, "fixed")

    def read_rows(self, chunk):
        return [(key_text(json.dumps({"id": n})), row_state({"id": n, "v": 1}))
                for n in range(chunk.lower, chunk.upper)]

    def covers(self, source):
        return True

    def reached(self, position):
        return True

    def close(self):
        pass


class RoundsPartition:
    name = "p"
    opened: list = []

    def __init__(self, differing_per_round: list[dict[int, int]], runs_ahead: bool):
        self.differing_per_round, self.runs_ahead = differing_per_round, runs_ahead
        RoundsPartition.opened = []

    def offset_key(self):
        return b"k"

    def committed_position(self, value):
        return "committed"

    def open_view(self):
        differing = self.differing_per_round[len(RoundsPartition.opened)]
        rows = {key_text(json.dumps({"id": n}).encode()): json.dumps({"id": n, "v": differing.get(n, 1)})
                for n in range(10)}
        view = RoundsView({key: json.dumps(json.loads(row), separators=(",", ":")) for key, row in rows.items()},
                          self.runs_ahead)
        RoundsPartition.opened.append(view)
        return view

    def close(self):
        pass


def verify_in_rounds(differing_per_round: list[dict[int, int]], runs_ahead: bool = True):
    from types import SimpleNamespace

    from connectors.core.verify import Verifier, VerifyOptions

    partition = RoundsPartition(differing_per_round, runs_ahead)
    config = SimpleNamespace(name="c", offset_storage_topic="offsets")
    verifier = Verifier(config, [partition], "127.0.0.1:1", VerifyOptions(chunk_size=5, rounds=3))
    verifier.offsets = SimpleNamespace(read_value=lambda key: (b"v", None))
    verifier.topics = SimpleNamespace(
        read=lambda topic, covers, placeholder, read, read_key: TopicState(
            rows=dict(RoundsPartition.opened[-1].topic_rows)))
    return verifier.run()


def test_a_later_view_compares_again_only_the_keys_that_differed():
    """Under writes that never stop, each view of a MongoDB connector with updateLookup finds a few keys whose event
    ran ahead of the view, and other keys each time: comparing the whole table again in every view reported the
    last view's run-ahead keys. Only the keys that differed are compared again; one that still differs in the last
    view (a real difference) is reported."""
    report = verify_in_rounds([{3: 2, 9: 99}, {5: 2, 9: 99}, {7: 2, 9: 99}])
    assert [(m.key, m.kind, m.fields) for m in report.mismatches] == [('{"id":9}', "different", {"v": [1, 99]})]
    assert report.rows == 10 and report.rechecked == 3 and len(report.positions) == 3  # keys 3 and 9, then 9
    assert report.tables[0].different == 1


def test_keys_that_settle_in_a_later_view_leave_no_mismatch():
    report = verify_in_rounds([{3: 2}, {}, {}])
    assert report.mismatched == 0 and report.rechecked == 1 and len(report.positions) == 2
    assert report.tables[0].chunks_differing == 0


def test_a_difference_in_a_view_whose_events_cannot_run_ahead_is_reported_at_once():
    report = verify_in_rounds([{3: 2}, {}, {}], runs_ahead=False)
    assert [m.key for m in report.mismatches] == ['{"id":3}'] and len(report.positions) == 1

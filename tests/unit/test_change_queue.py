"""ChangeQueue: the bounded hand-over between the change stream reader and the pipeline."""

from __future__ import annotations

import queue
import threading
import time

import pytest

from connectors.core.metrics import StreamingMetrics
from connectors.core.stream import ChangeQueue, ChangeSpan, Idle, each_change

MARKERS = (Idle,)


def test_take_returns_what_is_queued_up_to_the_limit_in_order():
    changes = ChangeQueue(10)
    for n in range(7):
        changes.put({"n": n})
    assert [item["n"] for item in changes.take(5, 1.0, MARKERS)] == [0, 1, 2, 3, 4]
    assert [item["n"] for item in changes.take(5, 1.0, MARKERS)] == [5, 6]
    assert changes.qsize() == 0


def test_a_marker_ends_the_batch():
    changes = ChangeQueue(10)
    for item in ({"n": 0}, Idle({"t": 1}), {"n": 1}):
        changes.put(item)
    assert changes.take(10, 1.0, MARKERS) == [{"n": 0}, Idle({"t": 1})]
    assert changes.take(10, 1.0, MARKERS) == [{"n": 1}]


def test_take_waits_only_while_empty():
    changes = ChangeQueue(10)
    assert changes.take(10, 0.05, MARKERS) == []
    threading.Timer(0.2, changes.put, ({"n": 1},)).start()
    assert changes.take(10, 30, MARKERS) == [{"n": 1}]


def test_put_blocks_while_full_and_resumes_when_taken():
    changes = ChangeQueue(2)
    changes.put({"n": 0})
    changes.put({"n": 1})
    with pytest.raises(queue.Full):
        changes.put({"n": 2}, timeout=0.05)
    done = threading.Event()

    def put_third():
        changes.put({"n": 2}, timeout=30)
        done.set()

    threading.Thread(target=put_third, daemon=True).start()
    assert not done.wait(0.2)  # still full: the reader is held back (max.queue.size)
    assert changes.take(1, 1.0, MARKERS) == [{"n": 0}]
    deadline = time.monotonic() + 30
    while not done.is_set() and time.monotonic() < deadline:
        done.wait(0.05)
    assert done.is_set()
    assert changes.take(10, 1.0, MARKERS) == [{"n": 1}, {"n": 2}]


def test_a_wake_just_before_a_take_ends_its_wait():
    changes = ChangeQueue(10)
    changes.wake()  # e.g. a commit that completed while the pipeline was building
    result: list = []
    taker = threading.Thread(target=lambda: result.append(changes.take(10, 600, MARKERS)), daemon=True)
    taker.start()
    taker.join(60)
    assert not taker.is_alive() and result == [[]]



def test_put_many_queues_as_many_as_there_is_room_for_in_order():
    changes = ChangeQueue(5)
    changes.put({"n": 0})
    assert changes.put_many([{"n": n} for n in range(1, 8)]) == 4  # room for four
    with pytest.raises(queue.Full):
        changes.put_many([{"n": 5}], timeout=0.05)
    assert [item["n"] for item in changes.take(10, 1.0, MARKERS)] == [0, 1, 2, 3, 4]
    assert changes.put_many([{"n": 5}, {"n": 6}]) == 2
    assert changes.put_many([]) == 0
    assert [item["n"] for item in changes.take(10, 1.0, MARKERS)] == [5, 6]


def test_put_many_wakes_a_waiting_take():
    changes = ChangeQueue(10)
    result: list = []
    taker = threading.Thread(target=lambda: result.append(changes.take(10, 600, MARKERS)), daemon=True)
    taker.start()
    while not changes.taker_waits:  # the precondition: the taker waits before the put
        time.sleep(0.001)
    changes.put_many([{"n": 1}, {"n": 2}])
    taker.join(60)
    assert not taker.is_alive() and result == [[{"n": 1}, {"n": 2}]]


def test_the_queue_metric_is_the_queues_fill_when_read():
    metrics = StreamingMetrics("c", "rs0", queue_total_capacity=8)
    changes = ChangeQueue(8)
    metrics.watch_queue(changes)
    assert metrics.snapshot()["QueueRemainingCapacity"] == 8
    changes.put_many(["a", "b", "c"])
    assert metrics.snapshot()["QueueRemainingCapacity"] == 5  # no one told the metrics: they read the queue
    changes.take(2, 0, ())
    assert metrics.snapshot()["QueueRemainingCapacity"] == 7
    metrics.watch_queue(None)  # streaming ended
    assert metrics.snapshot()["QueueRemainingCapacity"] == 8


def test_a_marker_anywhere_in_a_long_queue_ends_the_batch_after_it():
    """take() looks at a whole batch at once: a marker at any place among many changes ends the batch right after
    it, every marker type given ends one, and a marker past the limit does not shorten the batch."""
    class Failed:
        pass

    for at in (0, 1, 500, 999):
        for marker in (Idle({"t": at}), Failed()):
            changes = ChangeQueue(2000)
            items = [{"n": n} for n in range(1000)]
            items.insert(at, marker)
            changes.put_many(items)
            assert changes.take(2000, 1.0, (Idle, Failed)) == items[:at + 1]
            assert changes.take(2000, 1.0, (Idle, Failed)) == items[at + 1:]
            changes.put_many(items)
            assert changes.take(at, 1.0, (Idle, Failed)) == items[:at]  # the marker is past the limit
            assert changes.take(2000, 1.0, ()) == items[at:]  # no marker type: nothing ends the batch
    assert changes.qsize() == 0


def test_the_byte_bound_queues_only_what_fits():
    """max.queue.size.in.bytes: with room for 100 items by count, 1,000 bytes hold ten 100-byte items; the rest wait
    for a take."""
    changes = ChangeQueue(100, max_bytes=1000)
    assert changes.put_many([{"n": n} for n in range(50)], timeout=0, item_bytes=100) == 10
    assert changes.queued_bytes == 1000
    with pytest.raises(queue.Full):
        changes.put({"n": 10}, timeout=0, size=1)
    assert [item["n"] for item in changes.take(3, 0, MARKERS)] == [0, 1, 2]
    assert changes.queued_bytes == 700
    assert changes.put_many([{"n": n} for n in range(10, 50)], timeout=0, item_bytes=100) == 3
    changes.take(100, 0, MARKERS)
    assert changes.queued_bytes == 0 and changes.qsize() == 0


def test_an_item_larger_than_the_byte_bound_goes_through_alone():
    changes = ChangeQueue(100, max_bytes=1000)
    changes.put({"n": 0}, timeout=0, size=5000)  # an empty queue takes it: a bound below one item cannot stall
    with pytest.raises(queue.Full):
        changes.put({"n": 1}, timeout=0, size=1)
    assert changes.take(10, 0, MARKERS) == [{"n": 0}]
    assert changes.put_many([{"n": 1}, {"n": 2}], timeout=0, item_bytes=5000) == 1


def test_items_of_no_size_are_bounded_by_count_alone():
    changes = ChangeQueue(5, max_bytes=1000)
    assert changes.put_many([{"n": n} for n in range(8)], timeout=0) == 5
    assert changes.queued_bytes == 0


def test_under_a_byte_bound_every_item_arrives_once_in_order_and_the_bound_holds():
    """A reader of items of mixed sizes against a taker: at every take the queue held at most max_bytes (or one
    item), and the taker got every item once, in order."""
    changes = ChangeQueue(10_000, max_bytes=4096)
    sizes = [(n * 7919) % 3000 + 1 for n in range(2000)]
    held: list[tuple[int, int]] = []
    original_take = changes.take

    def take(limit, timeout, markers):
        held.append((changes.queued_bytes, changes.qsize()))
        return original_take(limit, timeout, markers)

    def read():
        for n, size in enumerate(sizes):
            if n % 3:
                changes.put({"n": n}, timeout=30, size=size)
            else:
                assert changes.put_many([{"n": n}], timeout=30, item_bytes=size) == 1

    reader = threading.Thread(target=read)
    reader.start()
    got: list[int] = []
    while len(got) < len(sizes):
        got.extend(item["n"] for item in take(7, 1.0, MARKERS))
    reader.join()
    assert got == list(range(len(sizes)))
    assert all(queued <= 4096 or count == 1 for queued, count in held)
    assert max(queued for queued, _ in held) > 0


def test_a_raw_mongodb_event_counts_its_bson_and_a_decoded_one_nothing():
    from connectors.mongodb.rawjson import RawChangeEvent
    from connectors.mongodb.stream import QUEUED_RAW_EVENT_BYTES, queued_event_bytes

    assert queued_event_bytes(RawChangeEvent(b"x" * 1000, None)) == 1000 + QUEUED_RAW_EVENT_BYTES
    assert queued_event_bytes({"operationType": "insert"}) == 0
    assert queued_event_bytes(Idle(None)) == 0


def _waiting_take(changes: ChangeQueue, fill: int) -> tuple[threading.Thread, list]:
    result: list = []
    taker = threading.Thread(target=lambda: result.append(changes.take(10, 600, MARKERS, fill)), daemon=True)
    taker.start()
    deadline = time.monotonic() + 30
    while not changes.taker_waits and taker.is_alive() and time.monotonic() < deadline:
        time.sleep(0.001)
    assert changes.taker_waits, "the take did not wait"
    return taker, result


def test_a_take_with_a_fill_waits_until_that_many_are_queued():
    changes = ChangeQueue(10)
    taker, result = _waiting_take(changes, 5)
    changes.put_many([{"n": 1}, {"n": 2}])
    changes.put({"n": 3})
    taker.join(0.3)
    assert taker.is_alive() and changes.taker_waits  # three of five: still waiting
    changes.put_many([{"n": 4}, {"n": 5}])
    taker.join(60)
    assert not taker.is_alive() and result == [[{"n": n} for n in range(1, 6)]]


@pytest.mark.parametrize("end", ["marker", "wake"])
def test_a_marker_or_a_wake_ends_a_take_with_a_fill(end):
    changes = ChangeQueue(10)
    taker, result = _waiting_take(changes, 5)
    changes.put_many([{"n": 1}])
    if end == "marker":
        changes.put_many([Idle({"t": 1})])
    else:
        changes.wake()
    taker.join(60)
    assert not taker.is_alive()
    assert result == [[{"n": 1}, Idle({"t": 1})] if end == "marker" else [{"n": 1}]]


def test_sampled_size_averages_a_spread_sample():
    from connectors.core.stream import sampled_size

    assert sampled_size(["x"], len) == 1
    items = ["x" * 10] * 48 + ["y" * 1010] * 48  # every sixth is sampled: eight of each half
    assert sampled_size(items, len) == 510
    assert sampled_size(["a" * n for n in range(1, 6)], len) == 3  # five items: all of them


class Numbers(ChangeSpan):
    """The changes first..end - 1, each an int."""

    __slots__ = ("first", "end")

    def __init__(self, first: int, end: int):
        self.first, self.end = first, end

    def __len__(self) -> int:
        return self.end - self.first

    def __iter__(self):
        return iter(range(self.first, self.end))

    def split(self, count: int) -> tuple[Numbers, Numbers]:
        assert 0 < count < len(self)
        return Numbers(self.first, self.first + count), Numbers(self.first + count, self.end)


def test_a_span_counts_its_changes_and_is_split_where_the_queue_or_the_limit_ends():
    changes = ChangeQueue(10)
    changes.put(-1)
    rest = changes.put_span(Numbers(0, 12))
    assert (rest.first, rest.end) == (9, 12) and changes.qsize() == 10  # room for nine of its changes
    with pytest.raises(queue.Full):
        changes.put_span(rest, timeout=0.05)
    batch, count = changes.take_counted(4, 1.0, MARKERS)
    assert batch[0] == -1 and list(each_change(batch)) == [-1, 0, 1, 2] and count == 4 and changes.qsize() == 6
    assert changes.put_span(Numbers(9, 10)) is None and changes.put_span(Numbers(10, 12)) is None
    batch, count = changes.take_counted(7, 1.0, MARKERS)
    assert list(each_change(batch)) == list(range(3, 10)) and count == 7
    assert batch[-1] == 9  # a span of one change is queued as the change itself
    assert changes.take(1, 1.0, MARKERS) == [10] and changes.take(5, 1.0, MARKERS) == [11]  # and split into one
    assert changes.qsize() == 0


@pytest.mark.parametrize("seed", range(20))
def test_spans_plain_items_and_markers_each_arrive_once_in_order_within_every_limit(seed):
    """A reader of plain changes, markers and spans of any length against a taker of random limits: every change
    arrives once and in order, each take holds at most its limit of changes (and says how many), none of what it
    returns is a span of one change, a batch ends at its first marker, and the queue's count of changes and of bytes
    follow what it holds."""
    import random

    rng = random.Random(seed)
    bound = rng.choice([0, 200, 5000])
    changes = ChangeQueue(rng.choice([1, 5, 50]), max_bytes=bound)
    sent: list = []
    done = threading.Event()

    def read():
        number = 0
        for _ in range(400):
            kind = rng.random()
            if kind < 0.1:
                marker = Idle(number)
                changes.put(marker, timeout=30)
                sent.append(marker)
            elif kind < 0.4:
                changes.put(number, timeout=30, size=7)
                sent.append(number)
                number += 1
            else:
                span = Numbers(number, number + rng.randint(1, 40))
                rest = span
                while rest is not None:
                    rest = changes.put_span(rest, timeout=30, change_bytes=rng.choice([0, 3, 60]))
                sent.extend(span)
                number = span.end
        done.set()

    reader = threading.Thread(target=read)
    reader.start()
    got: list = []
    while not done.is_set() or changes.qsize():
        limit = rng.randint(1, 60)
        batch, count = changes.take_counted(limit, 0.05, MARKERS, fill=rng.randint(1, 5))
        flat = list(each_change(batch))
        assert count == len(flat) <= limit
        assert not any(isinstance(item, ChangeSpan) and len(item) < 2 for item in batch)
        assert not any(isinstance(item, Idle) for item in batch[:-1])
        got.extend(flat)
        assert changes.queued_bytes >= 0 and (bound == 0 or changes.queued_bytes <= bound or changes.qsize() <= 40)
    reader.join()
    assert got == sent
    assert changes.qsize() == 0 and changes.queued_bytes == 0


@pytest.mark.parametrize("seed", range(20))
def test_the_bytes_of_split_spans_are_those_of_the_changes_queued(seed):
    """Puts and takes in turn (one thread): after each, the queue's bytes and count are those of the changes it still
    holds, a span's split parts counting their own changes' bytes."""
    import random

    rng = random.Random(seed)
    changes = ChangeQueue(rng.choice([3, 30]), max_bytes=rng.choice([0, 500]))
    held: list[tuple[object, int]] = []  # (change, its bytes) queued, oldest first
    number = 0
    for _ in range(300):
        if rng.random() < 0.5:
            each = rng.choice([0, 4, 25])
            span = Numbers(number, number + rng.randint(1, 20))
            try:
                rest = changes.put_span(span, timeout=0, change_bytes=each)
            except queue.Full:
                continue
            queued = len(span) - len(rest or ())
            held.extend((change, each) for change in list(span)[:queued])
            number += queued
        else:
            batch, count = changes.take_counted(rng.randint(1, 12), 0, MARKERS)
            assert list(each_change(batch)) == [change for change, _ in held[:count]]
            del held[:count]
        assert changes.qsize() == len(held)
        assert changes.queued_bytes == (sum(size for _, size in held) if changes.max_bytes else 0)

"""The supervisor's placement rule (workers.placement): the least-loaded live worker, and when to move one."""

from __future__ import annotations

from collections import Counter

from workers.placement import Placement


def test_each_pipeline_goes_to_the_live_worker_holding_the_fewest():
    placement = Placement(["a@h", "b@h"], Counter({"a@h": 3, "b@h": 1}))
    assert [placement.choose() for _ in range(4)] == ["b@h", "b@h", "a@h", "b@h"]
    assert placement.load == Counter({"a@h": 4, "b@h": 4})


def test_no_live_worker_leaves_the_task_to_the_shared_queue():
    assert Placement([]).choose() is None


def test_a_move_is_asked_only_past_the_bound():
    joined = Placement(["a@h", "b@h"], Counter({"a@h": 4, "b@h": 0}))
    assert joined.imbalance(1) == ("a@h", "b@h")
    assert joined.imbalance(4) is None
    assert Placement(["a@h", "b@h"], Counter({"a@h": 3, "b@h": 2})).imbalance(1) is None
    assert Placement(["a@h"], Counter({"a@h": 8})).imbalance(0) is None  # nowhere to move to

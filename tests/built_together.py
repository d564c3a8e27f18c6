"""A builder's batch path (`build_changes`, the source's `position_after_changes`) against `build` and
`position_after` of each change in turn, over runs of random lengths: what the pipeline relies on when it hands a
batch's changes to the builder in one call."""

from __future__ import annotations

import random
from collections.abc import Callable

from connectors.kafka.sink import payload_size


def assert_built_together_as_alone(together, alone, changes: list, position_after: Callable,
                                   position_after_changes: Callable, rng: random.Random, seed: object,
                                   position_fields: Callable = lambda position: position,
                                   ends_run: Callable = lambda change: False) -> None:
    """`together` and `alone` are two builders made alike; the same messages, counts, first and last captured change
    and positions must come out of both. `seed` is shown in a failure. A run also ends, one time in two, at a change
    `ends_run` picks (a rare kind a run must be able to end with)."""
    expected: list = []
    by_operation: dict[str, int] = {}
    filtered = 0
    captured: list = []
    for change in changes:
        built = alone.build(change)
        if built is None:
            filtered += 1
            continue
        operation, messages = built
        expected.extend(messages)
        if operation is not None:
            by_operation[operation] = by_operation.get(operation, 0) + 1
            captured.append(change)
    captured_ids = {id(change) for change in captured}
    messages: list = []
    totals: dict[str, int] = {}
    filtered_together = 0
    firsts, lasts = [], []
    folded = together_position = None
    start = 0
    while start < len(changes):
        run = changes[start:start + rng.randint(1, 300)]
        for index, change in enumerate(run[:-1]):
            if ends_run(change) and rng.random() < 0.5:
                run = run[:index + 1]
                break
        start += len(run)
        built_from = len(messages)
        built = together.build_changes(run, messages)
        if built.payload is not None:  # the bytes the builder counted are those of what it built
            assert built.payload == sum(map(payload_size, messages[built_from:])), seed
        for operation, count in built.by_operation.items():
            totals[operation] = totals.get(operation, 0) + count
        filtered_together += built.filtered
        run_captured = [change for change in run if id(change) in captured_ids]
        assert built.first is (run_captured[0] if run_captured else None), seed
        assert built.last is (run_captured[-1] if run_captured else None), seed
        firsts.append(built.first)
        lasts.append(built.last)
        for change in run:
            folded = position_after(change, folded)
        together_position = position_after_changes(run, together_position)
        assert position_fields(together_position) == position_fields(folded), seed
    for built, wanted in zip(messages, expected, strict=False):  # the first difference, if any, is shown
        assert built == wanted, (seed, built, wanted)
    assert len(messages) == len(expected), seed
    assert (totals, filtered_together) == (by_operation, filtered), seed
    firsts, lasts = [f for f in firsts if f is not None], [last for last in lasts if last is not None]
    assert firsts[0] is captured[0] and lasts[-1] is captured[-1], seed

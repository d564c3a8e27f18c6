"""The core's `heartbeats_move_source` hook (connectors.core.source), driven with the in-memory source: its position
stands still (no change is ever written), so only the hook decides whether heartbeats go on.

A source whose heartbeat writes to it (PostgreSQL or MySQL with `heartbeat.action.query`) sets the hook; its
heartbeats are due every interval, position moved or not. Without the hook, a heartbeat is due only when the
position moved since the last commit: after the first one (nothing was committed before it), none at all.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from connectors.core.stream import Idle
from connectors.runner import ConnectorRunner
from tests.faults.memory_source import (
    PARTITION,
    MemoryBuilder,
    MemoryConfig,
    MemoryPartitionSource,
    MemoryReader,
    MemorySource,
)
from tests.integration.kafka_reading import read_topic
from tests.waiting import wait_for

pytestmark = pytest.mark.integration

INTERVAL_MS = 200


class IdleRecordingBuilder(MemoryBuilder):
    """Notes when the pipeline hands an idle batch: it decides right after whether a heartbeat is due."""

    def __init__(self, config, idle_times: list[float]):
        super().__init__(config)
        self.idle_times = idle_times

    def idle(self) -> list:
        self.idle_times.append(time.monotonic())
        return []


class MovesOnlyReader(MemoryReader):
    """Reports its position only when it moved, as PostgreSQL's reader does (a keepalive past the last one): with the
    position standing still, one Idle marker and then none."""

    reported: int | None = None  # the position of the last Idle marker queued

    def _put(self, item) -> bool:
        if isinstance(item, Idle):
            if item.position == self.reported:
                return True
            self.reported = item.position
        return super()._put(item)


class StillSource(MemorySource):
    def __init__(self, config, heartbeats_move_source: bool, reports_moves_only: bool = False):
        super().__init__(config)
        self.moves, self.idle_times, self.reports_moves_only = heartbeats_move_source, [], reports_moves_only

    def open(self, partition):
        source = MemoryPartitionSource(self.config, partition)
        source.heartbeats_move_source = self.moves
        source.event_builder = lambda transaction_state=None: IdleRecordingBuilder(self.config, self.idle_times)
        if self.reports_moves_only:
            source.open_reader = lambda position, changes, metrics, backoff, stop: MovesOnlyReader(
                self.config, position or 0, changes, stop)
        return source


@pytest.fixture
def running(stack, unique_name, tmp_path):
    def start(heartbeats_move_source: bool, reports_moves_only: bool = False):
        head = tmp_path / "head"
        head.write_text("0")  # no change ever: the position stays at seq 0
        config = MemoryConfig(name=unique_name, head_file=str(head), offset_storage_topic=f"{unique_name}.offsets",
                              heartbeat_interval_ms=INTERVAL_MS)
        source = StillSource(config, heartbeats_move_source, reports_moves_only)
        runner = ConnectorRunner(config, stack.kafka_bootstrap, threading.Event(), source=source)
        thread = threading.Thread(target=runner.run, name="still-runner", daemon=True)
        thread.start()
        started.append((runner, thread))
        return runner, source

    started: list = []
    yield start
    for runner, thread in started:
        runner.stop.set()
        thread.join(30)
        assert not runner.errors, runner.errors


def heartbeats(runner) -> int:
    metrics = runner.metrics().get(PARTITION)
    return metrics["NumberOfHeartbeats"] if metrics else 0


def test_heartbeats_go_on_while_the_position_stands_still_when_they_move_the_source(running, stack):
    runner, _ = running(heartbeats_move_source=True)
    wait_for(lambda: heartbeats(runner) >= 4, 60, "four heartbeats", interval=0.02)
    records = read_topic(stack.kafka_bootstrap, runner.config.offset_storage_topic)
    offsets = [json.loads(record.value) for record in records]
    positions = [offset["seq"] for offset in offsets if offset["seq"] is not None]  # the snapshot's have none
    assert len(positions) >= 4 and set(positions) == {0}


def test_heartbeats_go_on_when_the_reader_reports_its_position_only_once(running, stack):
    """The first (and only) marker is spent by the first commit; the heartbeats after it use the committed position
    (once, a marker that came within an interval of a commit was spent without one, and they stopped for good)."""
    runner, source = running(heartbeats_move_source=True, reports_moves_only=True)
    wait_for(lambda: heartbeats(runner) >= 4, 60, "four heartbeats", interval=0.02)
    assert len(source.idle_times) == 1  # gate: every heartbeat after the first came with no marker at all


def test_no_heartbeat_while_the_position_stands_still_otherwise(running):
    runner, source = running(heartbeats_move_source=False)
    wait_for(lambda: heartbeats(runner) >= 1, 60, "the first heartbeat (nothing was committed before it)",
             interval=0.02)
    after_first = time.monotonic()
    # Gate: idle batches handed well past several intervals since that commit, each a moment a heartbeat would be due.
    wait_for(lambda: source.idle_times and source.idle_times[-1] > after_first + 5 * INTERVAL_MS / 1000, 60,
             "idle batches five intervals after the first heartbeat", interval=0.02)
    assert heartbeats(runner) == 1

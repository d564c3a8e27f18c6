"""Pipelines spread over the live `streaming` workers: a worker that joins takes its share from the busy one (within
CDC_REBALANCE_BOUND), and when a worker dies (kill -9) its pipelines move to the survivor. Real Celery workers with
different node names and beat (the supervisor), as deployed; four MongoDB connectors."""

from __future__ import annotations

import signal
import sqlite3
from collections import Counter
from contextlib import closing

import pytest
import redis

from tests.platform_processes import Platform
from workers.leases import holder

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REDIS_DB = 2  # apart from a running demo (0) and the other process tests
CONNECTORS = 4


@pytest.fixture
def platform(stack, tmp_path):
    processes = Platform(stack, tmp_path, REDIS_DB, CDC_PIPELINE_PROCESSES="0", CDC_REBALANCE_BOUND="1")
    processes.migrate()
    yield processes
    processes.stop()


def _holders(platform: Platform) -> Counter:
    """Pipelines per worker label (the node name's part before its random suffix), from the leases."""
    client = redis.Redis.from_url(platform.env["REDIS_URL"])
    workers = [holder(client, key) for key in client.scan_iter(match="cdc:lease:*")]
    return Counter(worker.split("-", 1)[0] for worker in workers if worker)


def _phases(platform: Platform, names: list[str]) -> set[str]:
    """The observed phases of the connectors' pipelines, read from the platform's SQLite file (a `manage.py shell`
    per poll takes longer than a poll on a loaded machine)."""
    with closing(sqlite3.connect(platform.tmp_path / "db.sqlite3", timeout=30)) as db:
        rows = db.execute("SELECT c.name, s.phase FROM connectors_replicasetstate s JOIN connectors_connector c "
                          "ON s.connector_id = c.id").fetchall()
    return {phase for name, phase in rows if name in names}


@pytest.mark.timeout(900)
def test_pipelines_spread_over_workers_rebalance_on_join_and_move_on_death(platform, mongo_rs, unique_name):
    names = [f"ws{i}" + unique_name.replace("-", "")[-10:] for i in range(CONNECTORS)]
    platform.django(
        "from web.connectors.models import Connector\n"
        f"for name in {names!r}:\n"
        f"    Connector.objects.create(name=name, topic_prefix=name, connection_string={mongo_rs.uri!r}, "
        "properties={'database.include.list': name, 'snapshot.mode': 'never', 'poll.interval.ms': 100, "
        "'offset.storage.topic': name + '.offsets'})\n")
    platform.start_worker("alpha", concurrency=CONNECTORS + 2)
    platform.start_beat()
    platform.wait_for(lambda: _holders(platform) == Counter(alpha=CONNECTORS), 240,
                      "every pipeline on the only worker", "alpha")
    platform.wait_for(lambda: _phases(platform, names) == {"streaming"}, 300, "every pipeline streaming", "alpha")

    # a second worker joins: the supervisor moves pipelines to it until the two differ by at most one
    platform.start_worker("beta", concurrency=CONNECTORS + 2)
    spread = platform.wait_for(
        lambda: (lambda held: held if sum(held.values()) == CONNECTORS and len(held) == 2
                 and max(held.values()) - min(held.values()) <= 1 else None)(_holders(platform)),
        240, "the pipelines to spread over both workers", "beat")
    assert set(spread) == {"alpha", "beta"}

    # the first worker dies: its pipelines move to the survivor once their leases expire
    platform.processes["alpha"].send_signal(signal.SIGKILL)
    platform.processes["alpha"].wait()
    platform.wait_for(lambda: _holders(platform) == Counter(beta=CONNECTORS), 240,
                      "every pipeline on the surviving worker", "beat")

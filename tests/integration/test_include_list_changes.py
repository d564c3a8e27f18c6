"""A connector whose database include list is changed several times (narrowed, widened, narrowed again) while
writes go on, each change applied by restarting its runner with the new configuration, as the control plane
does: it keeps running, and every write to an included database is delivered exactly once.

The watch scope narrows with the include list (one database: a database-wide stream). The stored resume token is
then the last delivered event's, which may lie in a database the new list excludes: a database-wide stream cannot
find it (280, "cannot resume stream; the resume token was not found", on MongoDB as on the emulator), and the
connector used to stay failed. It now resumes deployment-wide from such a token."""

from __future__ import annotations

import itertools
import json
import threading
import time

import pymongo
import pytest

from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import RunningConnector, connector_config, topic_exists

pytestmark = pytest.mark.integration


class Writer(threading.Thread):
    """Inserts {_id: n} into collection `c` of each database in turn, recording what was acknowledged."""

    def __init__(self, client: pymongo.MongoClient, databases: list[str], numbers: itertools.count):
        super().__init__(daemon=True)
        self.client, self.databases, self.numbers = client, databases, numbers
        self.acknowledged: dict[str, list[int]] = {db: [] for db in databases}
        self.halt = threading.Event()

    def write(self, db: str) -> None:
        n = next(self.numbers)
        self.client[db]["c"].insert_one({"_id": n})
        self.acknowledged[db].append(n)

    def run(self) -> None:
        for db in itertools.cycle(self.databases):
            if self.halt.wait(0.02):
                return
            self.write(db)


def _delivered(bootstrap: str, topic: str) -> list[int]:
    if not topic_exists(bootstrap, topic):
        return []
    return [json.loads(json.loads(r.value)["after"])["_id"] for r in read_topic(bootstrap, topic) if r.value]


@pytest.mark.timeout(300)
def test_include_list_narrowed_widened_and_narrowed_while_writing(stack, mongo_rs, unique_name):
    prefix = "i" + unique_name.replace("-", "")[-10:]
    a, b = f"{prefix}a", f"{prefix}b"
    client = pymongo.MongoClient(mongo_rs.uri, serverSelectionTimeoutMS=10_000)
    numbers = itertools.count()
    expected: dict[str, list[int]] = {a: [], b: []}
    # (include list, the database written last: the one the next list drops, so its event is the stored token)
    phases = [([a, b], b), ([a], a), ([a, b], a), ([b], b)]
    for included, last in phases:
        config = connector_config(prefix, mongo_rs.uri, database__include__list=",".join(included),
                                  snapshot__mode="never")
        running = RunningConnector(config, stack.kafka_bootstrap).start()
        running.wait_streaming(60)
        writer = Writer(client, [a, b], numbers)
        writer.start()
        time.sleep(1.5)
        writer.halt.set()
        writer.join(10)
        writer.write(last)
        for db in included:
            expected[db] += writer.acknowledged[db]
        deadline = time.monotonic() + 60
        while any(set(expected[db]) - set(_delivered(stack.kafka_bootstrap, f"{prefix}.{db}.c")) for db in included):
            assert running.pipeline().metrics.phase == "streaming", running.pipeline().metrics.last_error
            assert time.monotonic() < deadline, f"include list {included}: writes not delivered"
            time.sleep(0.2)
        assert running.finish() == {"rs0": "stopped"}
    client.close()
    for db in (a, b):
        delivered = _delivered(stack.kafka_bootstrap, f"{prefix}.{db}.c")
        assert sorted(delivered) == sorted(expected[db]), db  # nothing lost, nothing twice

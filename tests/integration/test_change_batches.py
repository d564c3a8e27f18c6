"""The change stream reader's own handling of its cursor (connectors/mongodb/change_batches.py): a stream that was
open resumes at once after a failed getMore, and a cursor the server ends after an invalidate is reopened after it."""

from __future__ import annotations

import threading

import pytest
from pymongo import monitoring

from connectors.config.types import CaptureScope
from connectors.core.metrics import StreamingMetrics
from connectors.core.stream import Backoff, Idle
from connectors.mongodb.client import open_client
from connectors.mongodb.filters import WatchTarget
from connectors.mongodb.stream import ChangeStreamReader, StartPosition, StreamOptions, next_cluster_time
from tests.reader_queue import ReaderQueue
from tests.waiting import wait_for

pytestmark = pytest.mark.integration


class _Commands(monitoring.CommandListener):
    """The change streams a client opens (its aggregates' $changeStream stages), and its getMores that failed."""

    def __init__(self) -> None:
        self.stages: list[dict] = []
        self.failed_get_mores = 0

    def started(self, event) -> None:
        if event.command_name == "aggregate":
            self.stages.append(event.command["pipeline"][0]["$changeStream"])

    def succeeded(self, event) -> None:
        pass

    def failed(self, event) -> None:
        if event.command_name == "getMore":
            self.failed_get_mores += 1


def _reader(uri: str, database: str, read_preference: str, backoff: Backoff, listener=None):
    options = {"host": uri, "serverSelectionTimeoutMS": 10_000, "readPreference": read_preference}
    client = open_client(options, [listener] if listener else ())
    start = client[database].command("ping")["operationTime"]
    out = ReaderQueue()
    stop = threading.Event()
    metrics = StreamingMetrics(database, "rs0")
    start = StartPosition(start_at_operation_time=next_cluster_time(start))
    reader = ChangeStreamReader(client, WatchTarget(CaptureScope.COLLECTION, database, "docs"), [],
                                StreamOptions(max_await_ms=100), start, out, metrics, backoff, stop)
    return client, reader, out, stop, metrics


def _changes(out: ReaderQueue, count: int) -> list:
    changes = []
    while len(changes) < count:
        item = out.get(timeout=30)
        if not isinstance(item, Idle):
            changes.append(item)
    return changes


@pytest.mark.parametrize("read_preference", ["primary", "primaryPreferred"])
def test_a_failed_get_more_resumes_at_once_without_losing_or_repeating_a_change(stack, mongo_rs, unique_name,
                                                                                  read_preference):
    database = "b" + unique_name.replace("-", "")[-12:]
    commands = _Commands()
    # a backoff longer than the test waits: only an immediate resume gets the later changes through
    client, reader, out, stop, metrics = _reader(mongo_rs.uri, database, read_preference,
                                                 Backoff(initial_ms=600_000, max_attempts=3), commands)
    try:
        reader.start()
        client[database].docs.insert_many([{"_id": i} for i in range(3)])
        before = _changes(out, 3)
        mongo_rs.configure_fail_point({"times": 1}, {"failCommands": ["getMore"], "errorCode": 43})
        wait_for(lambda: commands.failed_get_mores, 30, "the getMore the fail point fails")
        client[database].docs.insert_many([{"_id": i} for i in range(3, 6)])
        after = _changes(out, 3)
    finally:
        stop.set()
        reader.join(10)
        client.close()
    assert [change["documentKey"]["_id"] for change in before + after] == list(range(6))
    if reader.reads_by_batch:  # pymongo's ChangeStream resumes on its own: the reader never sees the failure
        assert metrics.disconnects == 1


def test_a_cursor_ended_by_an_invalidate_is_reopened_after_it(stack, mongo_rs, unique_name):
    database = "i" + unique_name.replace("-", "")[-12:]
    aggregates = _Commands()
    client, reader, out, stop, _ = _reader(mongo_rs.uri, database, "primary", Backoff(initial_ms=1000, max_attempts=3),
                                           aggregates)
    assert reader.reads_by_batch
    try:
        reader.start()
        client[database].docs.insert_one({"_id": 1})
        client[database].drop_collection("docs")
        changes = _changes(out, 3)
        assert [change["operationType"] for change in changes] == ["insert", "drop", "invalidate"]
        client[database].docs.insert_one({"_id": 2})  # the collection again, after the invalidate
        (again,) = _changes(out, 1)
    finally:
        stop.set()
        reader.join(10)
        client.close()
    assert (again["operationType"], again["documentKey"]) == ("insert", {"_id": 2})
    assert len(aggregates.stages) == 2
    assert aggregates.stages[1]["startAfter"] == changes[-1]["_id"]

"""What the all-types tests of the SQL connectors (tests/postgres/test_types_connector.py,
tests/mariadb/test_source_types.py) share: consuming a topic until it holds enough records, and the checks of the
envelopes of a snapshot → stream → incremental snapshot run that every source makes alike."""

from __future__ import annotations

import json
import time

from tests.integration.kafka_reading import read_topic

# op and source.snapshot of the two snapshot rows, the two streamed rows, then the four rows again incrementally
OPS = ["r", "r", "c", "c"] + ["r"] * 4
# Debezium 3.x marks the first row of a snapshot's first table `first` (the PostgreSQL and MariaDB sources do)
DEBEZIUM_SNAPSHOT_MARKERS = ["first", "last", "false", "false"] + ["incremental"] * 4
SNAPSHOT_MARKERS = DEBEZIUM_SNAPSHOT_MARKERS


def records_at_least(runner, bootstrap: str, topic: str, count: int, timeout: float = 60.0):
    """The topic's read_committed records once it holds `count` or more; fails at once if the pipeline failed (a value
    it cannot map), naming the error. `runner` is an in-process pipeline with `.runner.errors`."""
    deadline = time.monotonic() + timeout
    while True:
        assert not runner.runner.errors, runner.runner.errors
        try:
            records = read_topic(bootstrap, topic)
        except KeyError:  # not created yet
            records = []
        if len(records) >= count:
            return records
        assert time.monotonic() < deadline, f"{topic}: {len(records)} records, wanted {count}"
        time.sleep(0.3)


def snapshot_stream_incremental_values(records, topic: str, ids: tuple[int, ...],
                                       markers: list[str] = SNAPSHOT_MARKERS) -> tuple[list[dict], dict]:
    """Checks the eight records of a snapshot (two rows), a stream (two rows) and an incremental snapshot (the four
    again), with key and value schemas on: operations, snapshot markers, keys (an int32 `id`) and one value schema
    for all. Returns the decoded values and the `after` field of their schema."""
    assert len(records) == 8
    values = [json.loads(r.value) for r in records]
    assert [v["payload"]["op"] for v in values] == OPS
    assert [v["payload"]["source"]["snapshot"] for v in values] == markers
    key_schema = {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"}],
                  "optional": False, "name": f"{topic}.Key"}
    keys = [json.loads(r.key) for r in records]
    assert keys == [{"schema": key_schema, "payload": {"id": i}} for i in ids + ids]

    schema = values[0]["schema"]
    assert all(v["schema"] == schema for v in values), "the snapshots' and the stream's value schemas differ"
    after = next(f for f in schema["fields"] if f["field"] == "after")
    assert after["name"] == f"{topic}.Value"
    return values, after

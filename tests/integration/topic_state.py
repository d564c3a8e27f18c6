"""Test helper: the state a consumer builds from change topics, compared with the database's."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from bson import json_util

from tests.integration.kafka_reading import Record, read_topic
from tests.integration.pipeline_harness import topic_exists


def _document(text: str) -> dict:
    return json_util.loads(text)


def build_state(records: list[Record]) -> dict[str, dict]:
    """{key: document} after applying every event in topic order (r/c/u with `after`, patches, deletes)."""
    state: dict[str, dict] = {}
    for record in records:
        if record.value is None:
            continue
        key = json.loads(record.key)["id"]
        event = json.loads(record.value)
        op = event["op"]
        if op in ("r", "c"):
            state[key] = _document(event["after"])
        elif op == "u":
            if event["after"] is not None:
                state[key] = _document(event["after"])
            else:
                update = event["updateDescription"]
                document = dict(state.get(key, {}))
                document.update(_document(update["updatedFields"] or "{}"))
                for name in update["removedFields"] or []:
                    document.pop(name, None)
                state[key] = document
        elif op == "d":
            state.pop(key, None)
    return state


def database_state(collection) -> dict[str, dict]:
    return {json_util.dumps(d["_id"], json_options=json_util.RELAXED_JSON_OPTIONS): d for d in collection.find()}


def normalise(state: dict[str, dict]) -> dict[str, str]:
    """Documents compared by value (key order aside): canonical extended JSON with sorted keys."""
    canonical = json_util.CANONICAL_JSON_OPTIONS
    return {
        json.dumps(json.loads(json_util.dumps({"_id": d["_id"]}, json_options=canonical)), sort_keys=True):
            json.dumps(json.loads(json_util.dumps(d, json_options=canonical)), sort_keys=True)
        for d in state.values()
    }


def wait_for_state(bootstrap: str, topic: str, collection, timeout: float = 30,
                   records_filter: Callable[[Record], bool] | None = None) -> list[Record]:
    """Waits until the topic's state equals the collection's; returns the topic's records."""
    deadline = time.monotonic() + timeout
    expected = normalise(database_state(collection))
    records: list[Record] = []
    actual: dict = {}
    while time.monotonic() < deadline:
        if topic_exists(bootstrap, topic):
            records = read_topic(bootstrap, topic)
            actual = normalise(build_state(records))
            if actual == expected:
                return records
        time.sleep(0.3)
    missing = sorted(set(expected) - set(actual))[:5]
    extra = sorted(set(actual) - set(expected))[:5]
    wrong = [k for k in expected if k in actual and actual[k] != expected[k]][:3]
    raise AssertionError(f"{topic}: state differs from the database: {len(expected)} documents expected, "
                         f"{len(actual)} built; missing {missing}, extra {extra}, "
                         f"different {[(k, expected[k], actual[k]) for k in wrong]}")

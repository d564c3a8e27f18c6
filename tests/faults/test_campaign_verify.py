"""The campaign's second checker, the product's Verify (bench/faults/product_verify.py), can fail: a session whose
topic is corrupted after the writer stopped and every write was delivered (one key's latest value changed, a stray
key produced) fails, and its notes name exactly those keys. On a private broker and PostgreSQL server, as the
campaign runs them."""

from __future__ import annotations

import json
import os
import random

import pytest
from confluent_kafka import Producer

from bench.faults import Campaign, Session
from bench.faults.sources import PostgresSource
from devstack.private_kafka import PrivateKafka

STRAY_ID = 10**9


def _ports() -> range | None:
    text = os.environ.get("BENCH_FAULTS_PORTS")
    if not text:
        return None
    low, _, high = text.partition("-")
    return range(int(low), int(high) + 1)


class CorruptingSession(Session):
    """Once every logged write is delivered (the scenario is over), rewrites one key's latest event with another
    `seq` and produces a copy of it under a key the table never had."""

    corrupted: tuple[str, str, int] | None = None  # (topic, table, id) of the changed key

    def _drain(self) -> None:
        super()._drain()
        latest = {}
        for record in self.collector.snapshot():
            if record.topic in self.tables and record.key is not None:
                latest[(record.topic, record.key["id"])] = record
        topic, key = next(k for k, r in sorted(latest.items()) if r.value is not None and r.value["op"] in "cur")
        event = latest[(topic, key)].value
        producer = Producer({"bootstrap.servers": self.campaign.kafka.bootstrap})
        changed = {**event, "after": {**event["after"], "seq": -1}}
        producer.produce(topic, json.dumps(changed), json.dumps({"id": key}))
        stray = {**event, "after": {**event["after"], "id": STRAY_ID}}
        producer.produce(topic, json.dumps(stray), json.dumps({"id": STRAY_ID}))
        assert producer.flush(30) == 0
        self.corrupted = (topic, self.tables[topic], key)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_verify_after_a_session_names_the_keys_of_a_corrupted_topic(tmp_path):
    ports = _ports()
    kafka = PrivateKafka(tmp_path / "stack", ports)
    source = PostgresSource()
    try:
        kafka.start()
        source.start(tmp_path, ports)
        campaign = Campaign(kafka, source, tmp_path, random.Random(1), 35.0, rate=20, ports=ports)
        with CorruptingSession(campaign, "vc").setup(50) as session:
            session.wait_streaming()
            session.wait(1)
    finally:
        source.stop()
        kafka.stop()
    outcome = session.outcome
    _, table, key = session.corrupted
    verify_notes = [note for note in outcome.notes if ": Verify: " in note]
    assert outcome.failed and outcome.verify_rows >= 100, outcome
    assert (outcome.verify_missing, outcome.verify_extra, outcome.verify_different, outcome.verify_errors) == \
        (0, 1, 1, 0), outcome
    assert len(verify_notes) == 2, outcome.notes
    assert any(f'different public.{table} {{"id":{key}}} {{"seq": [' in note for note in verify_notes), verify_notes
    assert any(f'extra public.{table} {{"id":{STRAY_ID}}}' in note for note in verify_notes), verify_notes

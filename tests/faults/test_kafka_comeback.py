"""Kafka unreachable while a connector streams (every connection to the broker refused, as while a broker killed with
-9 is down), reachable again once the pipeline's backoff has grown long: the pipeline retries within seconds of the
broker answering, not at the end of its backoff.

The runner used to wait out the whole backoff (up to connect.backoff.max.delay.ms, 120 s) after the broker was back:
one recovery after a Kafka kill -9 took 92 s in the fault campaign. The broker is reached through the campaign's
TCP fault proxy (bench/faults/netproxy.py, in front of a listener that advertises the proxy's port), so that it is
down and back at once, whatever the time a real broker takes to restart on a loaded machine."""

from __future__ import annotations

import logging
import time

import pymongo
import pytest

from bench.faults.netproxy import FaultProxy
from devstack.mongo import start_replica_set
from devstack.private_kafka import PrivateKafka, free_ports
from tests.integration.pipeline_harness import RunningConnector, connector_config, wait_for_events

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PORTS = range(45700, 45760)  # this suite's own; the shared stack and other suites use others
BACKOFF_MS = 4_000  # retries after 4 s, 8 s, 16 s, 32 s: the broker answers again early in the 32 s wait


class Messages(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.mark.timeout(600)
def test_a_pipeline_retries_as_soon_as_the_broker_answers_again(tmp_path, unique_name):
    kafka = PrivateKafka(tmp_path / "kafka", PORTS)
    listen, shown = free_ports(2, range(kafka.port + 2, PORTS.stop))
    proxy = FaultProxy("127.0.0.1", listen, shown)
    kafka.env["DEVSTACK_KAFKA_PROXIED_LISTENER"] = f"{listen}:{shown}"
    kafka.start()
    proxy.start()
    rs = start_replica_set(members=1)
    messages = Messages()
    logging.getLogger("connectors.core.pipeline").addHandler(messages)
    name = "kc" + unique_name.replace("-", "")[-12:]
    topic = f"{name}.{name}.docs"
    running = None
    try:
        docs = pymongo.MongoClient(rs.uri)[name].docs
        config = connector_config(name, rs.uri, database__include__list=name, snapshot__mode="never",
                                  connect__backoff__initial__delay__ms=BACKOFF_MS)
        running = RunningConnector(config, f"127.0.0.1:{proxy.port}").start()
        running.wait_streaming(120)
        docs.insert_one({"_id": 0})
        wait_for_events(kafka.bootstrap, topic, 1, timeout=60)

        proxy.refuse()  # the broker is down for the pipeline
        docs.insert_one({"_id": 1})  # a batch to write: the pipeline retries Kafka with a growing backoff
        deadline = time.monotonic() + 400
        while not any("in 32.0s" in message for message in messages.messages):
            assert time.monotonic() < deadline, messages.messages
            assert running.thread.is_alive(), running.error
            time.sleep(0.2)
        time.sleep(2)  # into the 32 s wait: waiting it out would take 30 s more
        proxy.heal()
        back = time.monotonic()
        wait_for_events(kafka.bootstrap, topic, 2, timeout=150)
        recovery = time.monotonic() - back
        assert recovery < 20, f"the first event came {recovery:.0f}s after the broker was back"
        running.stop.set()
        running.thread.join(60)
        assert not running.thread.is_alive(), "the pipeline did not stop within 60 s of being asked"
    finally:
        logging.getLogger("connectors.core.pipeline").removeHandler(messages)
        if running is not None:
            running.stop.set()
            running.thread.join(60)
        proxy.close()
        rs.stop()
        kafka.stop()

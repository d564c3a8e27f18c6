"""A broker that freezes while the sink checks a batch's topics (after an aborted batch it checks them again):
the batch fails as retriable, with a sentence saying so, and is written once the broker is back. And one that
freezes mid-batch, so that aborting the batch fails too: the error says what becomes of the batch.

The runner used to crash here with a bare TimeoutError ("failed ()") from the topic check's futures."""

from __future__ import annotations

import re

import pytest
from confluent_kafka.admin import AdminClient

from connectors.kafka.errors import SinkFatalError, SinkRetriableError
from connectors.kafka.sink import OutMessage, TransactionalSink
from connectors.kafka.topics import TopicAdmin
from devstack.private_kafka import PrivateKafka
from tests.integration.kafka_reading import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PORTS = range(45100, 45200)  # this suite's own; the shared stack and other suites use others


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    kafka = PrivateKafka(tmp_path_factory.mktemp("kafka"), PORTS).start()
    try:
        yield kafka
    finally:
        kafka.stop()


class FreezingAdmin(AdminClient):
    """A real AdminClient that, once armed, freezes the broker right after its next topic listing answered: the
    topic check then waits on a broker that does not answer."""

    def __init__(self, broker: PrivateKafka):
        super().__init__({"bootstrap.servers": broker.bootstrap})
        self.broker, self.armed = broker, False

    def list_topics(self, *args, **kwargs):
        metadata = super().list_topics(*args, **kwargs)
        if self.armed:
            self.armed = False
            self.broker.freeze()
        return metadata


@pytest.mark.timeout(180)
def test_a_broker_frozen_during_the_topic_check_fails_the_batch_as_retriable(broker, unique_name):
    topic = f"frozen.{unique_name}"
    admin = FreezingAdmin(broker)
    sink = TransactionalSink(broker.bootstrap, unique_name, "rs0", offsets_topic=f"{topic}.offsets",
                             topic_admin=TopicAdmin(admin, timeout=4.0))
    with sink:
        sink.write_batch([OutMessage(topic, b"1", b"one")])
        sink.topics.forget(topic)  # as after an aborted batch: the next one checks the topic again
        admin.armed = True
        try:
            with pytest.raises(SinkRetriableError) as raised:
                sink.write_batch([OutMessage(topic, b"2", b"two")])
        finally:
            broker.thaw()
        assert str(raised.value) == (
            f"Kafka did not answer within 4s while reading the settings of topic {topic!r}. The batch was not "
            "written; writing it again is safe."
        )
        sink.write_batch([OutMessage(topic, b"2", b"two")])
    assert [record.value for record in read_topic(broker.bootstrap, topic)] == [b"one", b"two"]


@pytest.mark.timeout(180)
def test_a_batch_whose_abort_fails_says_what_happens_to_it(broker, unique_name):
    """The broker freezes mid-batch: the flush times out, so does the abort. The error says the producer is
    recreated (which aborts the batch) and why the batch failed, without claiming the abort succeeded."""
    topic = f"abort.{unique_name}"
    sink = TransactionalSink(broker.bootstrap, unique_name, "rs0", offsets_topic=f"{topic}.offsets")
    with sink:
        sink.write_batch([OutMessage(topic, b"1", b"one")])
        sink.timeout = 6.0  # how long the flush and the abort wait (opening kept the default: a loaded machine)
        broker.freeze()
        try:
            with pytest.raises(SinkFatalError) as raised:
                sink.write_batch([OutMessage(topic, b"2", b"two")])
        finally:
            broker.thaw()
    assert re.fullmatch(
        r"Kafka failed while aborting a failed batch \(_TIMED_OUT: [^()]+\)\. The producer is recreated, which "
        r"aborts the batch \(read_committed readers never see it\), and the batch is written again\. The batch had "
        r"failed because: Kafka acknowledged 0 of 1 messages within 6s",
        str(raised.value),
    ), str(raised.value)

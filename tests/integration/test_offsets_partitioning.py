"""A pipeline's offset is read from the partition its key hashes to, and another connector's open transaction
in another partition of the shared offsets topic does not hold that read up."""

from __future__ import annotations

import itertools

import pytest
from confluent_kafka import Producer

from connectors.kafka.offset_record import OffsetRecord, encode_key
from connectors.kafka.offsets import OffsetStore
from connectors.kafka.partitioning import partition_for
from connectors.kafka.sink import TransactionalSink
from connectors.kafka.topics import ensure_topics, offsets_topic_spec

pytestmark = pytest.mark.integration

PARTITIONS = 25


def test_murmur2_places_keys_where_librdkafka_does(stack, unique_name):
    topic = f"it.murmur.{unique_name}"
    ensure_topics(stack.kafka_bootstrap, [offsets_topic_spec(topic, PARTITIONS)])
    keys = [encode_key(f"connector-{n}", f"rs{n % 3}") for n in range(200)] + [b"", b"a", b"ab", b"abc", b"abcd"]
    placed: dict[bytes, int] = {}
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap, "partitioner": "murmur2_random"})
    for key in keys:
        producer.produce(topic, b"x", key, on_delivery=lambda error, message: placed.__setitem__(
            message.key(), message.partition()))
    assert producer.flush(30) == 0
    assert placed == {key: partition_for(key, PARTITIONS) for key in keys}


def test_another_connectors_open_transaction_does_not_hold_up_reading_an_offset(stack, unique_name):
    offsets = f"it.shared-offsets.{unique_name}"
    ensure_topics(stack.kafka_bootstrap, [offsets_topic_spec(offsets, PARTITIONS)])
    ours = f"ours-{unique_name}"
    theirs = next(name for name in (f"theirs-{n}-{unique_name}" for n in itertools.count())
                  if partition_for(encode_key(name, "rs0"), PARTITIONS)
                  != partition_for(encode_key(ours, "rs0"), PARTITIONS))
    with TransactionalSink(stack.kafka_bootstrap, ours, "rs0", offsets_topic=offsets) as sink:
        sink.write_batch([], OffsetRecord(ours, "rs0", resume_token={"_data": "8201"}))
    # `theirs` begins a transaction holding an offset record and never ends it (a connector frozen mid-commit).
    frozen = Producer({"bootstrap.servers": stack.kafka_bootstrap, "transactional.id": f"{theirs}.rs0"})
    frozen.init_transactions(10)
    frozen.begin_transaction()
    # an explicit partition: this producer's default partitioner is not murmur2 and could land on ours
    theirs_key = encode_key(theirs, "rs0")
    frozen.produce(offsets, b"{}", theirs_key, partition=partition_for(theirs_key, PARTITIONS))
    frozen.flush(10)
    try:
        # Before reads went to the key's partition, this waited for that transaction and failed after 20 s.
        record = OffsetStore(stack.kafka_bootstrap, offsets, timeout=20).get(ours, "rs0")
        assert record.resume_token == {"_data": "8201"}
    finally:
        frozen.abort_transaction(10)

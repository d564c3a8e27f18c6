"""Test helper: change events as our connectors make them, and the MongoDB state they lead to.

`Collection` plays a MongoDB collection: every write returns the `ChangeRecord` a change stream would
yield (with or without full documents and pre-images, as `capture.mode` asks) and keeps the documents, so
a test knows the exact state the events must rebuild. `encode` runs records through the real
`connectors.mongodb.transformer.Transformer` for any event-format option; `produce` writes messages to Kafka in
transactions (optionally aborting some), the way the KafkaSink does.
"""

from __future__ import annotations

import copy
import datetime
import json
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bson import Int64, ObjectId, Timestamp
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connectors.mongodb.config import ConnectorConfig
from connectors.mongodb.envelopes import apply_update
from connectors.mongodb.events import KafkaMessage
from connectors.mongodb.records import ChangeRecord, Namespace, SnapshotMarker, UpdateDescription
from connectors.mongodb.transformer import Transformer

EPOCH = 1_700_000_000


class Clock:
    """Cluster times: one increment per write, shared by the writes of a transaction."""

    def __init__(self, seconds: int = EPOCH):
        self.seconds, self.inc = seconds, 0

    def tick(self) -> Timestamp:
        self.inc += 1
        if self.inc > 50:
            self.seconds, self.inc = self.seconds + 1, 1
        return Timestamp(self.seconds, self.inc)


@dataclass
class Collection:
    db: str
    name: str
    clock: Clock
    full_update: bool = False  # capture.mode=change_streams_update_full
    pre_image: bool = False  # capture.mode=*_with_pre_image

    def __post_init__(self):
        self.docs: dict = {}
        self.txn: tuple[dict, int, Timestamp] | None = None

    @property
    def namespace(self) -> Namespace:
        return Namespace(self.db, self.name)

    def _time(self) -> Timestamp:
        return self.txn[2] if self.txn else self.clock.tick()

    def _record(self, operation_type: str, _id, **fields) -> ChangeRecord:
        cluster_time = self._time()
        raw = {
            "_id": {"_data": uuid.uuid4().hex},
            "operationType": operation_type,
            "clusterTime": cluster_time,
            "wallTime": datetime.datetime.fromtimestamp(cluster_time.time, datetime.UTC).replace(tzinfo=None),
            "ns": {"db": self.db, "coll": self.name},
            "documentKey": {"_id": _id},
            **fields,
        }
        if self.txn:
            raw["lsid"], raw["txnNumber"] = self.txn[0], Int64(self.txn[1])
        return ChangeRecord.from_change_event(raw)

    def begin(self, number: int) -> None:
        self.txn = ({"id": uuid.UUID(int=number).bytes.hex()}, number, self.clock.tick())

    def commit(self) -> None:
        self.txn = None

    def insert(self, doc: dict) -> ChangeRecord:
        doc = copy.deepcopy(doc)
        self.docs[doc["_id"]] = doc
        return self._record("insert", doc["_id"], fullDocument=copy.deepcopy(doc))

    def update(self, _id, set_=None, unset=(), truncate=()) -> ChangeRecord:
        before = self.docs[_id]
        description = UpdateDescription(dict(set_ or {}), tuple(unset), ())
        after = apply_update(before, description)
        for path, size in truncate:
            node = after
            for part in path.split("."):
                node = node[part]
            del node[size:]
        self.docs[_id] = after
        fields = {
            "updateDescription": {
                "updatedFields": copy.deepcopy(dict(set_ or {})),
                "removedFields": list(unset),
                "truncatedArrays": [{"field": f, "newSize": n} for f, n in truncate],
            }
        }
        if self.full_update:
            fields["fullDocument"] = copy.deepcopy(after)
        if self.pre_image:
            fields["fullDocumentBeforeChange"] = copy.deepcopy(before)
        return self._record("update", _id, **fields)

    def replace(self, doc: dict) -> ChangeRecord:
        before = self.docs[doc["_id"]]
        self.docs[doc["_id"]] = copy.deepcopy(doc)
        fields = {"fullDocument": copy.deepcopy(doc)}
        if self.pre_image:
            fields["fullDocumentBeforeChange"] = copy.deepcopy(before)
        return self._record("replace", doc["_id"], **fields)

    def delete(self, _id) -> ChangeRecord:
        before = self.docs.pop(_id)
        fields = {"fullDocumentBeforeChange": copy.deepcopy(before)} if self.pre_image else {}
        return self._record("delete", _id, **fields)

    def snapshot(self) -> list[ChangeRecord]:
        """Snapshot reads of every document, at the cluster time the snapshot starts."""
        start = self.clock.tick()
        records = []
        items = list(self.docs.values())
        for position, doc in enumerate(items):
            marker = SnapshotMarker.LAST if position == len(items) - 1 else SnapshotMarker.TRUE
            records.append(ChangeRecord.snapshot_read(self.namespace, copy.deepcopy(doc), cluster_time=start,
                                                      marker=marker))
        return records


def transformer(prefix: str, clock=time.time, **props) -> Transformer:
    config = {"name": prefix, "topic.prefix": prefix, "mongodb.connection.string": "mongodb://localhost"}
    config.update({key.replace("__", "."): value for key, value in props.items()})
    return Transformer(ConnectorConfig.from_properties(config), "rs0", clock=clock)


def encode(records: Iterable[ChangeRecord], prefix: str, **props) -> list[KafkaMessage]:
    # Each event is built when it happens, as in a pipeline: a snapshot read when the snapshot starts (Debezium
    # 3.x's snapshot source.ts_ms is the read time), a change half a second after its cluster time.
    now = [float(EPOCH)]
    stage = transformer(prefix, clock=lambda: now[0], **props)
    messages: list[KafkaMessage] = []
    for record in records:
        if record.cluster_time is not None:
            now[0] = record.cluster_time.time + (0 if record.is_snapshot else 0.5)
        messages.extend(stage.transform(record))
    messages.extend(stage.idle())
    return messages


def create_topics(bootstrap: str, topics: Sequence[str], partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1) for topic in topics])
    for future in futures.values():
        future.result(30)


def produce(
    bootstrap: str,
    messages: Sequence[KafkaMessage] | Sequence[tuple],
    *,
    partition_of=None,
    aborted: Sequence[KafkaMessage] = (),
) -> None:
    """Produce ``messages`` in one committed transaction (``partition_of(index, message)`` chooses a
    partition), then ``aborted`` in a transaction that is aborted: read_committed readers never see those."""
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "transactional.id": f"spark-test-{uuid.uuid4().hex}",
        "enable.idempotence": True,
        "linger.ms": 5,
    })
    producer.init_transactions(30)
    for batch, commit in ((messages, True), (aborted, False)):
        if not batch:
            continue
        producer.begin_transaction()
        for index, message in enumerate(batch):
            kwargs = {}
            if partition_of is not None:
                kwargs["partition"] = partition_of(index, message)
            producer.produce(message.topic, key=message.key, value=message.value, **kwargs)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


def oid(n: int) -> ObjectId:
    return ObjectId(f"{n:024x}")


def key_id(_id) -> str:
    """The `id` column for a document id (the key's relaxed Extended JSON)."""
    from connectors.mongodb import extjson

    return extjson.key_json(_id)


def json_lines(text: str) -> list[dict]:
    return [json.loads(line[len("CDCJOB "):]) for line in text.splitlines() if line.startswith("CDCJOB ")]

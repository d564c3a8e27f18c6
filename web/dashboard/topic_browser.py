"""The topic browser's Kafka side: any topic, read as a read_committed consumer.

* `browse` — messages of chosen partitions from the newest ones backwards, or forwards from an offset or a time,
  optionally only those whose key, value or headers contain a text (case-insensitive);
* `exact_counts` — records a read_committed consumer sees per partition (transaction markers and aborted records
  take offsets but are no messages, so log end minus log start is only an upper bound), counted by reading the
  partitions within a time budget; a count cut off by the budget says so;
* `details` — partitions (offsets, leader, replicas), the topic's configuration (DescribeConfigs) and the consumer
  groups with committed offsets on it, with their lag per partition.
"""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType
from django.conf import settings

from web.dashboard.message_filter import Filter

LEGAL_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
SCOPES = ("key", "value", "headers")
STARTS = ("newest", "offset", "timestamp")
MAX_SCAN = 20_000  # messages read per partition for one page before giving up the search
MAX_GROUPS = 100  # consumer groups asked for their offsets at a time
PREVIEW_CHARS = 120  # a message's key and value on its one line in the table
MAX_SHOWN_CHARS = 100_000  # a value's text shown (and copied or downloaded) in full up to this length


class KafkaUnavailable(Exception):
    pass


class UnknownTopic(Exception):
    pass


def _fail(error: KafkaException) -> KafkaUnavailable:
    return KafkaUnavailable(str(error.args[0] if error.args else error))


def _consumer(**extra) -> Consumer:
    return Consumer({
        "bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS,
        "group.id": "cdc-dashboard-browser",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "socket.timeout.ms": 3000,
        "fetch.wait.max.ms": 50,
        **extra,
    })


def _admin() -> AdminClient:
    return AdminClient({"bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS, "socket.timeout.ms": 3000})


# -- topics and partitions ------------------------------------------------------------------------------------


@dataclass
class Partition:
    id: int
    low: int
    high: int
    leader: int = -1
    replicas: list[int] = field(default_factory=list)
    in_sync: list[int] = field(default_factory=list)
    count: int | None = None  # exact, or at least this many when not `counted`
    counted: bool = False


@dataclass
class TopicSummary:
    name: str
    partitions: int
    internal: bool


def all_topics(timeout: float = 5.0) -> list[TopicSummary]:
    consumer = _consumer()
    try:
        metadata = consumer.list_topics(timeout=timeout)
    except KafkaException as error:
        raise _fail(error) from None
    finally:
        consumer.close()
    return [TopicSummary(name, len(topic.partitions), name.startswith("__"))
            for name, topic in sorted(metadata.topics.items()) if topic.error is None]


def partitions(topic: str, timeout: float = 5.0) -> list[Partition]:
    """The topic's partitions with their log start and end offsets; UnknownTopic when it does not exist."""
    if not LEGAL_TOPIC.match(topic):
        raise UnknownTopic(topic)
    consumer = _consumer()
    try:
        metadata = consumer.list_topics(topic, timeout=timeout)
        described = metadata.topics.get(topic)
        if described is None or described.error is not None:
            raise UnknownTopic(topic)
        found = []
        for number, partition in sorted(described.partitions.items()):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, number), timeout=timeout, cached=False)
            found.append(Partition(number, low, high, partition.leader, list(partition.replicas),
                                   list(partition.isrs)))
        return found
    except KafkaException as error:
        raise _fail(error) from None
    finally:
        consumer.close()


def exact_counts(topic: str, parts: list[Partition], budget: float = 3.0) -> None:
    """Fills `count`/`counted` of each partition by reading it up to the end seen now (read_committed)."""
    todo = {p.id: p for p in parts if p.high > p.low}
    for part in parts:
        part.count, part.counted = 0, part.high <= part.low
    if not todo:
        return
    consumer = _consumer(**{"fetch.max.bytes": 52_428_800})
    deadline = time.monotonic() + budget
    try:
        consumer.assign([TopicPartition(topic, p.id, p.low) for p in todo.values()])
        while todo and time.monotonic() < deadline:
            for message in consumer.consume(10_000, 0.1):
                if message.error() is None and message.partition() in todo \
                        and message.offset() < todo[message.partition()].high:
                    todo[message.partition()].count += 1
            for position in consumer.position([TopicPartition(topic, p) for p in todo]):
                if position.offset >= todo[position.partition].high:
                    todo.pop(position.partition).counted = True
    except KafkaException as error:
        raise _fail(error) from None
    finally:
        consumer.close()


# -- messages -----------------------------------------------------------------------------------------------


@dataclass
class Query:
    partitions: list[int] | None = None  # None: every partition
    start: str = "newest"
    offset: int = 0
    timestamp_ms: int = 0
    count: int = 20
    text: str = ""
    scopes: tuple[str, ...] = SCOPES
    resume: dict[int, int] | None = None  # the live tail: partition -> next offset to read (a reconnected tail)
    filter: Filter | None = None  # a filter expression (message_filter) the messages must match as well


@dataclass
class Message:
    partition: int
    offset: int
    timestamp_ms: int
    key: Any
    key_text: str
    value: Any
    pretty: str
    headers: list[tuple[str, str]]
    size: int
    preview: str = ""  # the value on one line, cut at PREVIEW_CHARS
    value_cut: bool = False  # `pretty` stops at MAX_SHOWN_CHARS


@dataclass
class Page:
    messages: list[Message]
    scanned: int  # messages looked at
    complete: bool  # every candidate message was looked at (else: stopped by the scan limit or the time budget)


def _decode(raw: bytes | None) -> Any:
    if raw is None:
        return None
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _expand(value: Any) -> Any:
    """Debezium's MongoDB `before`/`after`/`patch`/`filter` are JSON strings: show them as documents."""
    if isinstance(value, dict):
        payload = value.get("payload") if isinstance(value.get("payload"), dict) else value
        for key in ("before", "after", "patch", "filter"):
            if isinstance(payload.get(key), str):
                try:
                    payload[key] = json.loads(payload[key])
                except ValueError:
                    pass
    return value


def _text(raw: bytes | None) -> str:
    return "" if raw is None else raw.decode("utf-8", errors="replace")


def _matches(message, query: Query) -> bool:
    # offsets_for_times may land on a transaction marker stamped at its commit, before older records: skip those
    if query.start == "timestamp" and message.timestamp()[1] < query.timestamp_ms:
        return False
    if query.filter is not None and not query.filter.matches(
            _decode(message.key()), _expand(_decode(message.value())),
            [(name, _text(raw)) for name, raw in message.headers() or ()]):
        return False
    return _contains_text(message, query)


def _contains_text(message, query: Query) -> bool:
    if not query.text:
        return True
    needle = query.text.casefold()
    if "key" in query.scopes and needle in _text(message.key()).casefold():
        return True
    if "value" in query.scopes and needle in _text(message.value()).casefold():
        return True
    if "headers" in query.scopes:
        for name, value in message.headers() or ():
            if needle in f"{name}: {_text(value)}".casefold():
                return True
    return False


def _message(message) -> Message:
    key = _decode(message.key())
    key_text = key if isinstance(key, str) else ("" if key is None else json.dumps(key, sort_keys=True))
    value = _expand(_decode(message.value()))
    headers = [(name, _text(raw)) for name, raw in (message.headers() or ())]
    size = len(message.key() or b"") + len(message.value() or b"")
    pretty = json.dumps(value, indent=2, ensure_ascii=False)
    return Message(message.partition(), message.offset(), message.timestamp()[1], key, key_text, value,
                   pretty[:MAX_SHOWN_CHARS], headers, size, preview=_one_line(value),
                   value_cut=len(pretty) > MAX_SHOWN_CHARS)


def _one_line(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    text = " ".join(text[:PREVIEW_CHARS + 1].split())
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS - 1] + "…"


def browse(topic: str, parts: list[Partition], query: Query, timeout: float = 8.0) -> Page:
    chosen = [p for p in parts if query.partitions is None or p.id in query.partitions]
    chosen = [p for p in chosen if p.high > p.low]
    if not chosen:
        return Page([], 0, True)
    deadline = time.monotonic() + timeout
    if query.start == "newest":
        return _newest(topic, chosen, query, deadline)
    starts = _start_offsets(topic, chosen, query, timeout)
    page = _forward(topic, {p.id: (starts[p.id], p.high) for p in chosen if starts[p.id] < p.high}, query, deadline,
                    limit=query.count)
    page.messages.sort(key=lambda m: (m.timestamp_ms, m.partition, m.offset))
    return page


def _start_offsets(topic: str, chosen: list[Partition], query: Query, timeout: float) -> dict[int, int]:
    if query.start == "offset":
        return {p.id: min(max(query.offset, p.low), p.high) for p in chosen}
    return offsets_for_time(topic, chosen, query.timestamp_ms, timeout)


def offsets_for_time(topic: str, chosen: list[Partition], timestamp_ms: int, timeout: float) -> dict[int, int]:
    """Partition -> the first offset stamped at or after the time, or the log end where there is none."""
    consumer = _consumer()
    try:
        found = consumer.offsets_for_times([TopicPartition(topic, p.id, timestamp_ms) for p in chosen],
                                           timeout=timeout)
    except KafkaException as error:
        raise _fail(error) from None
    finally:
        consumer.close()
    highs = {p.id: p.high for p in chosen}
    return {tp.partition: tp.offset if tp.offset >= 0 else highs[tp.partition] for tp in found}


def _forward(topic: str, ranges: dict[int, tuple[int, int]], query: Query, deadline: float,
             limit: int | None) -> Page:
    """Matching messages in [start, end) of each partition, in offset order; stops after `limit` matches."""
    if not ranges:
        return Page([], 0, True)
    consumer = _consumer()
    found: list[Message] = []
    scanned, cut = 0, False
    pending = dict(ranges)
    try:
        consumer.assign([TopicPartition(topic, p, start) for p, (start, _) in ranges.items()])
        while pending and time.monotonic() < deadline and (limit is None or len(found) < limit):
            for message in consumer.consume(500, 0.1):
                if message.error() is not None or message.partition() not in pending:
                    continue
                if message.offset() >= pending[message.partition()][1]:
                    continue
                scanned += 1
                if _matches(message, query):
                    found.append(_message(message))
            for position in consumer.position([TopicPartition(topic, p) for p in pending]):
                start, end = ranges[position.partition]
                if position.offset >= end:
                    pending.pop(position.partition)
                elif position.offset - start >= MAX_SCAN:
                    pending.pop(position.partition)
                    cut = True
    except KafkaException as error:
        raise _fail(error) from None
    finally:
        consumer.close()
    if limit is not None and len(found) > limit:
        found = sorted(found, key=lambda m: (m.timestamp_ms, m.partition, m.offset))[:limit]
    return Page(found, scanned, not pending and not cut)


def _newest(topic: str, chosen: list[Partition], query: Query, deadline: float) -> Page:
    """The newest matching messages: reads backwards in growing windows (markers and aborted records take offsets)
    until enough are found, the log start is reached, MAX_SCAN offsets were read or the time is up."""
    window = 2 * query.count + 10
    while True:
        ranges = {p.id: (max(p.low, p.high - window), p.high) for p in chosen}
        page = _forward(topic, ranges, query, deadline, limit=None)
        reached_start = all(start <= p.low for p, (start, _) in zip(chosen, ranges.values(), strict=True))
        if len(page.messages) >= query.count or reached_start or window >= MAX_SCAN or time.monotonic() > deadline:
            break
        window = min(MAX_SCAN, window * 4)
    page.messages.sort(key=lambda m: (m.timestamp_ms, m.offset), reverse=True)
    page.messages = page.messages[:query.count]
    page.complete = page.complete and reached_start
    return page


# -- configuration and consumer groups ----------------------------------------------------------------------


@dataclass
class ConfigRow:
    name: str
    value: str | None
    source: str
    default: bool
    sensitive: bool


@dataclass
class GroupLag:
    group: str
    state: str
    partitions: list[tuple[int, int, int, int]]  # (partition, committed offset, log end, lag)

    @property
    def total_lag(self) -> int:
        return sum(lag for *_, lag in self.partitions)


def config(topic: str, timeout: float = 5.0) -> list[ConfigRow]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    admin = _admin()  # kept referenced until the answer: a collected client cancels its requests
    try:
        entries = admin.describe_configs([resource], request_timeout=timeout)[resource].result(timeout + 1)
    except (KafkaException, FutureTimeout) as error:
        raise KafkaUnavailable(str(error)) from None
    rows = [ConfigRow(name, None if entry.is_sensitive else entry.value, _source(entry.source), entry.is_default,
                      entry.is_sensitive) for name, entry in entries.items()]
    return sorted(rows, key=lambda row: (row.default, row.name))


def _source(source) -> str:
    """The name of a ConfigEntry's source (DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG, …): confluent-kafka hands over the
    enum's number."""
    try:
        return ConfigSource(int(getattr(source, "value", source))).name
    except (TypeError, ValueError):
        return str(source)


def consumer_groups(topic: str, parts: list[Partition], timeout: float = 5.0) -> tuple[list[GroupLag], int]:
    """Groups with committed offsets on the topic, with lag = log end − committed offset per partition, and how many
    groups were left unasked when `timeout` ran out. Every group is asked (Kafka cannot list a topic's groups),
    MAX_GROUPS requests at a time."""
    admin = _admin()
    deadline = time.monotonic() + timeout
    try:
        listed = admin.list_consumer_groups(request_timeout=timeout).result(timeout + 1)
        groups = sorted(listed.valid, key=lambda g: g.group_id)
        ends = {p.id: p.high for p in parts}
        found = []
        for start in range(0, len(groups), MAX_GROUPS):
            left = deadline - time.monotonic()
            if left <= 0:
                return found, len(groups) - start
            batch = groups[start:start + MAX_GROUPS]
            requests = {g.group_id: admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g.group_id)],
                                                                      request_timeout=left)
                        for g in batch}
            for listing in batch:
                result = requests[listing.group_id][listing.group_id].result(left + 1)
                rows = [(tp.partition, tp.offset, ends.get(tp.partition, tp.offset),
                         max(0, ends.get(tp.partition, tp.offset) - tp.offset))
                        for tp in result.topic_partitions or () if tp.topic == topic and tp.offset >= 0]
                if rows:
                    state = getattr(listing.state, "name", str(listing.state)).lower()
                    found.append(GroupLag(listing.group_id, state, sorted(rows)))
        return found, 0
    except (KafkaException, FutureTimeout) as error:
        raise KafkaUnavailable(str(error)) from None


# -- live tail ----------------------------------------------------------------------------------------------


def message_json(message: Message) -> dict:
    """What a page needs to show a message (the live tail sends this)."""
    return {"partition": message.partition, "offset": message.offset, "timestamp_ms": message.timestamp_ms,
            "key_text": message.key_text, "headers": [list(pair) for pair in message.headers],
            "pretty": message.pretty, "size": message.size, "preview": message.preview,
            "value_cut": message.value_cut}


class Tail:
    """Follows the committed messages written to a topic from now on (read_committed), matching `query`.

    `run()` (in its own thread) assigns the chosen partitions at their current log end (or at `query.resume`'s
    offset, kept within the log, when a tail that was cut off reconnects), calls `on_ready(positions)`
    — from then on every message committed to them is seen — and then `on_message(message)` for each match, at most
    `per_second` a second (`on_skipped(n)` says how many were left out), until `stop` is set.
    """

    def __init__(self, topic: str, query: Query, stop, on_ready, on_message, on_skipped, per_second: int = 50):
        self.topic, self.query, self.stop = topic, query, stop
        self.on_ready, self.on_message, self.on_skipped = on_ready, on_message, on_skipped
        self.per_second = per_second

    def run(self) -> None:
        parts = [p for p in partitions(self.topic) if self.query.partitions is None or p.id in self.query.partitions]
        consumer = _consumer()
        try:
            resume = self.query.resume or {}
            starts = {p.id: min(max(resume.get(p.id, p.high), p.low), p.high) for p in parts}
            consumer.assign([TopicPartition(self.topic, p, offset) for p, offset in starts.items()])
            self.on_ready(starts)
            second, sent, skipped = int(time.monotonic()), 0, 0
            while not self.stop.is_set():
                for message in consumer.consume(100, 0.5):
                    if message.error() is not None or not _matches(message, self.query):
                        continue
                    now = int(time.monotonic())
                    if now != second:
                        if skipped:
                            self.on_skipped(skipped)
                        second, sent, skipped = now, 0, 0
                    if sent >= self.per_second:
                        skipped += 1
                        continue
                    sent += 1
                    self.on_message(_message(message))
        except KafkaException as error:
            raise _fail(error) from None
        finally:
            consumer.close()

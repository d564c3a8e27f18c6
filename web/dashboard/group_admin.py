"""Consumer groups (AdminClient): list them, reset a group's committed offsets on one topic to the earliest or latest
offsets or to a time, and delete a group; writes are an operator's, audited (`group.reset`, `group.delete`) and
refused while the group has active members (they would overwrite the offsets at their next commit)."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

from web.connectors import audit
from web.dashboard import topic_browser
from web.dashboard.topic_admin import TIMEOUT_S, admin_client, wait_for
from web.dashboard.topic_produce import Refused

MAX_LISTED = 1000
TARGETS = ("earliest", "latest", "timestamp")


class GroupBusy(Refused):
    """The group has active members."""


class NoSuchGroup(Refused):
    pass


@dataclass
class GroupSummary:
    group: str
    state: str
    simple: bool


@dataclass
class GroupDetail:
    group: str
    state: str
    members: int


def _state(state) -> str:
    return getattr(state, "name", str(state)).lower()


def all_groups() -> tuple[list[GroupSummary], int]:
    """The cluster's consumer groups by id (at most MAX_LISTED) and how many more there are."""
    admin = admin_client()
    listed = wait_for(admin.list_consumer_groups(request_timeout=TIMEOUT_S))
    groups = sorted(listed.valid, key=lambda g: g.group_id)
    return ([GroupSummary(g.group_id, _state(g.state), bool(g.is_simple_consumer_group)) for g in groups[:MAX_LISTED]],
            max(0, len(groups) - MAX_LISTED))


def describe(group: str) -> GroupDetail:
    admin = admin_client()
    found = wait_for(admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S)[group])
    if _state(found.state) == "dead":
        raise NoSuchGroup(f"There is no consumer group {group}.")
    return GroupDetail(group, _state(found.state), len(found.members or ()))


def _require_idle(group: str) -> GroupDetail:
    detail = describe(group)
    if detail.members:
        raise GroupBusy(f"Consumer group {group} has {detail.members} active member"
                        f"{'' if detail.members == 1 else 's'}; stop its consumers first (they would overwrite "
                        "the offsets at their next commit).")
    return detail


def target_offsets(topic: str, to: str, timestamp_ms: int | None) -> dict[int, int]:
    """Partition -> the offset `to` names: the log start, the log end, or the first offset at or after the time
    (the log end where there is none)."""
    parts = topic_browser.partitions(topic)
    if to == "earliest":
        return {p.id: p.low for p in parts}
    if to == "latest":
        return {p.id: p.high for p in parts}
    return topic_browser.offsets_for_time(topic, parts, timestamp_ms, TIMEOUT_S)


def reset_offsets(group: str, topic: str, to: str, timestamp_ms: int | None, *, user, source: str) -> dict[int, int]:
    if to not in TARGETS:
        raise Refused(f"to={to} is not known; reset to earliest, latest or timestamp.")
    if to == "timestamp" and timestamp_ms is None:
        raise Refused("A reset to a time needs the time (timestamp_ms).")
    _require_idle(group)
    offsets = target_offsets(topic, to, timestamp_ms)
    admin = admin_client()
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p, o) for p, o in sorted(offsets.items())])
    wait_for(admin.alter_consumer_group_offsets([request], request_timeout=TIMEOUT_S)[group])
    audit.record(user, source, "group.reset", f"group:{group}",
                 after={"topic": topic, "to": to, "timestamp_ms": timestamp_ms,
                        "offsets": {str(p): o for p, o in sorted(offsets.items())}})
    return offsets


def delete_group(group: str, *, user, source: str) -> None:
    _require_idle(group)
    admin = admin_client()
    wait_for(admin.delete_consumer_groups([group], request_timeout=TIMEOUT_S)[group])
    audit.record(user, source, "group.delete", f"group:{group}")

"""GTID positions of both flavours, parsed, merged and written in the servers' own text form.

MariaDB: one `domain-server-sequence` per replication domain, e.g. `0-1-42,1-2-7` (@@gtid_binlog_pos); a
replica resumes after the listed GTIDs. MySQL: a set of intervals per source UUID (optionally per tag, 8.3+),
e.g. `3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7,4f4f...:1-3` (Executed_Gtid_Set, gtid_executed).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from connectors import ConnectorError


class GtidFormatError(ConnectorError):
    pass


# --- MariaDB -----------------------------------------------------------------------------------------------------

@dataclass(frozen=True, order=True)
class MariaGtid:
    domain: int
    server_id: int
    sequence: int

    @classmethod
    def parse(cls, text: str) -> MariaGtid:
        parts = text.strip().split("-")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise GtidFormatError(f"{text!r} is not a MariaDB GTID; expected domain-server-sequence such as 0-1-42")
        return cls(int(parts[0]), int(parts[1]), int(parts[2]))

    def __str__(self) -> str:
        return f"{self.domain}-{self.server_id}-{self.sequence}"


@dataclass(frozen=True)
class MariaGtidPosition:
    """The last GTID of each domain; immutable, `advance` returns a new position."""

    last: tuple[MariaGtid, ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> MariaGtidPosition:
        gtids: dict[int, MariaGtid] = {}
        for part in (text or "").replace("\n", "").split(","):
            if not part.strip():
                continue
            gtid = MariaGtid.parse(part)
            if gtid.domain in gtids:
                raise GtidFormatError(f"{text!r} names domain {gtid.domain} twice; a position has one GTID per domain")
            gtids[gtid.domain] = gtid
        return cls(tuple(sorted(gtids.values())))

    def domains(self) -> dict[int, MariaGtid]:
        return {g.domain: g for g in self.last}

    def advance(self, gtid: MariaGtid | str) -> MariaGtidPosition:
        gtid = MariaGtid.parse(gtid) if isinstance(gtid, str) else gtid
        domains = self.domains()
        domains[gtid.domain] = gtid
        return MariaGtidPosition(tuple(sorted(domains.values())))

    def merge(self, other: MariaGtidPosition) -> MariaGtidPosition:
        """Per domain, the GTID with the higher sequence (what both have seen)."""
        domains = self.domains()
        for gtid in other.last:
            mine = domains.get(gtid.domain)
            if mine is None or gtid.sequence > mine.sequence:
                domains[gtid.domain] = gtid
        return MariaGtidPosition(tuple(sorted(domains.values())))

    def contains(self, gtid: MariaGtid | str) -> bool:
        """Whether a replica at this position has already seen `gtid` (sequences grow within a domain)."""
        gtid = MariaGtid.parse(gtid) if isinstance(gtid, str) else gtid
        mine = self.domains().get(gtid.domain)
        return mine is not None and gtid.sequence <= mine.sequence

    def __str__(self) -> str:
        return ",".join(str(g) for g in self.last)

    def __bool__(self) -> bool:
        return bool(self.last)


# --- MySQL -------------------------------------------------------------------------------------------------------

Interval = tuple[int, int]  # inclusive
_TAG = re.compile(r"^[a-z_][a-z0-9_]{0,31}$")


def _merge_intervals(intervals) -> tuple[Interval, ...]:
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return tuple((a, b) for a, b in merged)


@dataclass(frozen=True)
class MysqlGtidSet:
    """Executed transactions per (source UUID, tag); tag "" for untagged GTIDs."""

    intervals: tuple[tuple[str, str, tuple[Interval, ...]], ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> MysqlGtidSet:
        found: dict[tuple[str, str], list[Interval]] = {}
        for member in (text or "").replace("\n", "").split(","):
            member = member.strip()
            if not member:
                continue
            sid, *rest = member.split(":")
            try:
                source = str(uuid.UUID(sid.strip()))
            except ValueError:
                raise GtidFormatError(
                    f"{member!r} does not start with a server UUID; expected uuid:1-5[:7-9] such as "
                    "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"
                ) from None
            if not rest:
                raise GtidFormatError(f"{member!r} has no transaction numbers; expected uuid:1-5")
            tag = ""
            for part in rest:
                part = part.strip()
                interval = _parse_interval(part)
                if interval is None:
                    if not _TAG.match(part.lower()):
                        raise GtidFormatError(f"{part!r} in {member!r} is neither an interval (1-5) nor a GTID tag")
                    tag = part.lower()
                    continue
                found.setdefault((source, tag), []).append(interval)
        return cls._of(found)

    @classmethod
    def _of(cls, found: dict[tuple[str, str], list[Interval]]) -> MysqlGtidSet:
        return cls(tuple(
            (source, tag, _merge_intervals(ivs)) for (source, tag), ivs in sorted(found.items()) if ivs
        ))

    def _as_dict(self) -> dict[tuple[str, str], list[Interval]]:
        return {(s, t): list(ivs) for s, t, ivs in self.intervals}

    def union(self, other: MysqlGtidSet) -> MysqlGtidSet:
        found = self._as_dict()
        for source, tag, ivs in other.intervals:
            found.setdefault((source, tag), []).extend(ivs)
        return self._of(found)

    def add(self, gtid: str) -> MysqlGtidSet:
        """Add one GTID, `uuid:n` or `uuid:tag:n`, as a GtidEvent names it."""
        return self.union(MysqlGtidSet.parse(gtid))

    def contains(self, gtid: str) -> bool:
        single = MysqlGtidSet.parse(gtid)
        mine = self._as_dict()
        for source, tag, ivs in single.intervals:
            for start, end in ivs:
                if not any(a <= start and end <= b for a, b in mine.get((source, tag), [])):
                    return False
        return True

    def __str__(self) -> str:
        members: list[str] = []
        by_source: dict[str, list[str]] = {}
        for source, tag, ivs in self.intervals:
            parts = by_source.setdefault(source, [])
            if tag:
                parts.append(tag)
            parts.extend(f"{a}" if a == b else f"{a}-{b}" for a, b in ivs)
        for source, parts in by_source.items():
            members.append(":".join([source, *parts]))
        return ",".join(members)

    def __bool__(self) -> bool:
        return bool(self.intervals)


def _parse_interval(part: str) -> Interval | None:
    bounds = part.split("-")
    if not 1 <= len(bounds) <= 2 or not all(b.isdigit() for b in bounds):
        return None
    start, end = int(bounds[0]), int(bounds[-1])
    if start < 1 or end < start:
        raise GtidFormatError(f"GTID interval {part!r} is empty or starts below 1")
    return start, end

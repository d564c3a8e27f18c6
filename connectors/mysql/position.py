"""The MySQL/MariaDB source's `Position` (a binlog place, Debezium's offset fields) and the snapshot progress that
keeps the snapshot's binlog position."""

from __future__ import annotations

from dataclasses import dataclass, field

from connectors.core.snapshot.progress import SnapshotProgress
from connectors.mysql.binlog import BinlogPosition
from connectors.mysql.overlap import ReadPoint, SnapshotOverlap, overlap_of

OVERLAP_FIELD = "snapshot_overlap"  # the offset record's field for the stream's filter after a snapshot


@dataclass(slots=True, unsafe_hash=True)  # one per change: see binlog.BinlogPosition
class MySqlPosition:
    """The core's Position: equal when the binlog place is; `ts_sec` (the event's server time) goes along, and
    after a snapshot whose chunks were read in views of their own, the stream's filter (`overlap`)."""

    binlog: BinlogPosition
    ts_sec: int = field(default=0, compare=False)
    overlap: SnapshotOverlap | None = field(default=None, compare=False)

    @classmethod
    def from_json(cls, value: dict) -> MySqlPosition:
        return cls(BinlogPosition.from_offset(value), int(value.get("ts_sec") or 0),
                   SnapshotOverlap.from_json(value.get(OVERLAP_FIELD)))


class MySqlSnapshotProgress(SnapshotProgress):
    """Keeps the snapshot's binlog position (`file`, `pos`, `gtids`) and its time (`read_at`, ms)."""

    def stream_position(self) -> MySqlPosition | None:
        fields = self.start_fields
        if not fields.get("file") and not fields.get("gtids"):
            return None
        overlap = None
        if fields.get("file"):
            start = ReadPoint(fields["file"], int(fields["pos"]), fields.get("gtids") or "")
            overlap = overlap_of(start, self.collections)
        return MySqlPosition(BinlogPosition(file=fields.get("file"), pos=fields.get("pos"),
                                            gtids=fields.get("gtids") or None), int(fields.get("read_at", 0)) // 1000,
                             overlap)

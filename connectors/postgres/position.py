"""Where a PostgreSQL pipeline stands: Debezium's PostgreSQL offset (Kafka Connect key `[name, {"server": prefix}]`,
value with `lsn`, `lsn_commit`, `lsn_proc`, `txId`, `ts_usec`) and the rule that drops what a restart replays.

pgoutput sends a transaction's changes only once it committed, each after a Begin that carries the commit LSN, and in
WAL order within it, so (commit LSN, change LSN) orders every change the slot sends. The offset of a batch records
that pair for the last change it holds: `lsn_commit` = the transaction's commit LSN, `lsn_proc` = the change's LSN
(`lsn` too, as Debezium writes it). After a restart the slot replays from its confirmed flush position; a change is
already in Kafka iff its pair is not after the stored one — which also covers a transaction split across two Kafka
batches. `completed` marks a position taken at a transaction's end: everything of that transaction is covered.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from connectors.postgres.overlap import SnapshotOverlap

OVERLAP_FIELD = "snapshot_overlap"  # the offset record's field for the stream's filter after a resumed snapshot


class OffsetError(ValueError):
    """A stored offset that is not a PostgreSQL position."""


def offset_key(connector_name: str, topic_prefix: str) -> list:
    return [connector_name, {"server": topic_prefix}]


def offset_key_json(connector_name: str, topic_prefix: str) -> str:
    return json.dumps(offset_key(connector_name, topic_prefix), separators=(",", ":"), ensure_ascii=False)


@dataclass(slots=True, unsafe_hash=True)  # one per change: see pgoutput.Begin
class Position:
    lsn_commit: int  # commit LSN of the transaction the last emitted change belongs to
    lsn_proc: int  # LSN of the last emitted change (the commit's end LSN when `completed`)
    tx_id: int | None = None
    ts_usec: int | None = None  # commit time of that transaction
    completed: bool = False  # the whole transaction is in Kafka
    # after a resumed snapshot, what its chunks read later already hold (only a snapshot's stream start has it)
    overlap: SnapshotOverlap | None = field(default=None, compare=False)

    def covers(self, commit_lsn: int, change_lsn: int) -> bool:
        """True when the change (commit LSN, change LSN) was emitted at or before this position."""
        if commit_lsn != self.lsn_commit:
            return commit_lsn < self.lsn_commit
        return self.completed or change_lsn <= self.lsn_proc

    def covers_transaction(self, commit_lsn: int) -> bool:
        """True when every change of the transaction committed at `commit_lsn` is in Kafka."""
        return commit_lsn < self.lsn_commit or (commit_lsn == self.lsn_commit and self.completed)

    def offset(self) -> dict[str, Any]:
        """The offset value, Debezium's keys (plus `transaction_completed`, ours, which Debezium ignores)."""
        value: dict[str, Any] = {"lsn_proc": self.lsn_proc, "lsn_commit": self.lsn_commit, "lsn": self.lsn_proc}
        if self.tx_id is not None:
            value["txId"] = self.tx_id
        if self.ts_usec is not None:
            value["ts_usec"] = self.ts_usec
        value["transaction_completed"] = self.completed
        return value

    @classmethod
    def from_offset(cls, value: dict[str, Any]) -> Position:
        try:
            lsn_proc = int(value.get("lsn_proc", value["lsn"]))
            lsn_commit = int(value.get("lsn_commit", lsn_proc))
        except (KeyError, TypeError, ValueError):
            raise OffsetError(f"not a PostgreSQL offset (needs lsn or lsn_proc): {value!r}") from None
        tx_id = value.get("txId")
        ts_usec = value.get("ts_usec")
        # a Debezium offset without our flag: its lsn_proc is the last processed event, not necessarily a commit end
        completed = bool(value.get("transaction_completed", False))
        return cls(lsn_commit, lsn_proc, None if tx_id is None else int(tx_id),
                   None if ts_usec is None else int(ts_usec), completed,
                   SnapshotOverlap.from_json(value.get(OVERLAP_FIELD)))

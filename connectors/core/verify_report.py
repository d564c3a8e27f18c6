"""What a Verify run found (docs/verify.md): counts per table, the first differing keys with a field-level diff,
the source positions compared and the time taken; JSON for the CLI, the Celery task and the dashboard."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

MISSING = "missing"  # in the source, not in the topic
EXTRA = "extra"  # in the topic, not in the source (deleted there, or never there)
DIFFERENT = "different"  # in both, with other values


@dataclass
class Mismatch:
    table: str
    key: str  # the record key as canonical JSON
    kind: str  # MISSING, EXTRA or DIFFERENT
    fields: dict = field(default_factory=dict)  # DIFFERENT: {field: [source value, topic value]}


@dataclass
class TableReport:
    table: str
    topic: str
    rows: int = 0  # source rows checked
    chunks: int = 0
    chunks_differing: int = 0
    topic_records: int = 0
    missing: int = 0
    extra: int = 0
    different: int = 0
    skipped: str | None = None  # why the table was not compared

    @property
    def mismatched(self) -> int:
        return self.missing + self.extra + self.different


@dataclass
class VerifyReport:
    connector: str
    tables: list[TableReport] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)  # the first `max_keys` of them
    positions: list[dict] = field(default_factory=list)  # where the source was read ({partition, ...})
    seconds: float = 0.0
    rechecked: int = 0  # keys compared again at a later position because they changed after the first
    waited: float = 0.0  # seconds spent waiting for the connector to capture up to a view's position
    topic_seconds: float = 0.0  # reading the topics
    source_seconds: float = 0.0  # reading the source and comparing

    @property
    def rows(self) -> int:
        return sum(t.rows for t in self.tables)

    @property
    def chunks(self) -> int:
        return sum(t.chunks for t in self.tables)

    @property
    def missing(self) -> int:
        return sum(t.missing for t in self.tables)

    @property
    def extra(self) -> int:
        return sum(t.extra for t in self.tables)

    @property
    def different(self) -> int:
        return sum(t.different for t in self.tables)

    @property
    def mismatched(self) -> int:
        return self.missing + self.extra + self.different

    def to_json(self) -> dict:
        return {
            "connector": self.connector, "rows": self.rows, "chunks": self.chunks, "missing": self.missing,
            "extra": self.extra, "different": self.different, "mismatched": self.mismatched,
            "seconds": round(self.seconds, 3), "rows_per_second": round(self.rows / self.seconds, 1)
            if self.seconds else None, "rechecked": self.rechecked, "positions": self.positions,
            "waited_seconds": round(self.waited, 3), "topic_seconds": round(self.topic_seconds, 3),
            "source_seconds": round(self.source_seconds, 3),
            "tables": [{**asdict(t), "mismatched": t.mismatched} for t in self.tables],
            "mismatches": [asdict(m) for m in self.mismatches],
        }

    def summary(self) -> str:
        verdict = "topics equal the source" if not self.mismatched else f"{self.mismatched} rows differ"
        return (f"{self.connector}: {verdict} ({self.rows} rows in {self.chunks} chunks of {len(self.tables)} "
                f"tables; missing in topic {self.missing}, extra in topic {self.extra}, different {self.different}; "
                f"{self.seconds:.1f}s)")

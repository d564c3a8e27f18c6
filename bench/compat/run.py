"""One comparison: the source's workload captured by Debezium and by ours on one Kafka, dumped and compared."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException

from bench.compat import compare, debezium
from bench.compat.dump import dump, read_topic, topics_with_prefix
from bench.topics import delete_topics
from connectors.events.version import DEBEZIUM_VERSION


@dataclass
class Outcome:
    source: str
    schemas_enable: bool
    reports: list[compare.TopicReport]
    masks: list[str]
    java_version: int
    debezium_version: str = DEBEZIUM_VERSION

    @property
    def clean(self) -> bool:
        return all(report.clean for report in self.reports)


def _has_records(bootstrap: str, topic: str) -> bool:
    try:
        return topic in topics_with_prefix(bootstrap, topic) and bool(read_topic(bootstrap, topic))
    except KafkaException:  # a topic just created may have no leader yet: asked again on the next poll
        return False


def _count(bootstrap: str, prefix: str, skip: tuple[str, ...] = ()) -> int:
    return sum(len(read_topic(bootstrap, topic)) for topic in topics_with_prefix(bootstrap, prefix)
               if topic not in skip)


def source_version(source) -> str:
    """The Debezium release a source is compared with: the pinned one unless its connector is not published in it."""
    return getattr(source, "debezium_version", DEBEZIUM_VERSION)


def run(source, bootstrap: str, schemas_enable: bool, timeout: float = 600, keep: bool = False) -> Outcome:
    """`source`: a workload object (bench.compat.postgres.PostgresCompat and the like)."""
    folder = Path(tempfile.mkdtemp(prefix=f"compat-{source.name}-"))
    worker = None
    try:
        source.prepare()
        worker = debezium.DebeziumWorker(source.connector_artifact, source.debezium_properties(), bootstrap,
                                         folder, schemas_enable, source_version(source))
        source.start_ours(bootstrap, schemas_enable)
        checks = (worker.check, source.check_ours)
        debezium.wait_for(source.both_started, "both connectors to start", timeout, checks)
        # the snapshots are done before the workload's DDL (Debezium reads the catalog outside its snapshot)
        debezium.wait_for(lambda: _count(bootstrap, f"{source.prefix}.") >= source.snapshot_events and _count(
            bootstrap, f"{debezium.ROUTED_PREFIX}{source.prefix}.") >= source.snapshot_events,
            f"both snapshots ({source.snapshot_events} events each)", timeout, checks)
        source.run_workload()
        ours_end = f"{source.prefix}.{source.end_topic_suffix}"
        theirs_end = f"{debezium.ROUTED_PREFIX}{ours_end}"
        debezium.wait_for(lambda: _has_records(bootstrap, ours_end) and _has_records(bootstrap, theirs_end),
                          "the workload's last event on both sides", timeout, checks)
        # every event before the last one is in Kafka too (one task each, written in order)
        source.stop_ours()
        worker.stop()
        # without the dot: MariaDB's schema change topic is named after the prefix alone
        theirs = dump(bootstrap, f"{debezium.ROUTED_PREFIX}{source.prefix}")
        ours = dump(bootstrap, source.prefix)
        reports = [compare.compare_topic(topic, theirs.get(topic, []), ours.get(topic, []), source.masks,
                                         intentional=source.intentional)
                   for topic in sorted(set(theirs) | set(ours))]
        return Outcome(source.name, schemas_enable, reports, [mask.label for mask in source.masks],
                       worker.java_version, source_version(source))
    finally:
        source.stop_ours()
        if worker is not None:
            worker.stop()
        if not keep:
            source.cleanup()
            delete_topics(bootstrap, f"{debezium.ROUTED_PREFIX}{source.prefix}", source.prefix,
                          f"compat-offsets-{source.prefix}")


def _clip(data: bytes, limit: int = 1500) -> str:
    text = data.decode(errors="replace")
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def render(outcome: Outcome) -> str:
    lines = [f"== {outcome.source}, schemas.enable={str(outcome.schemas_enable).lower()}: Debezium "
             f"{outcome.debezium_version} on Kafka Connect {debezium.KAFKA_CONNECT_VERSION} "
             f"(Java {outcome.java_version}) beside ours",
             "masks (on both sides, a value replaced by its kind; null stays null):",
             *(f"  - {label}" for label in outcome.masks)]
    total = identical = intentional = 0
    for report in outcome.reports:
        paired = report.ours - len(report.only_ours)
        total += max(report.theirs, report.ours)
        identical += report.identical
        intentional += report.intentional_only
        lines.append(f"{report.topic}: Debezium {report.theirs} events, ours {report.ours}; byte-identical "
                     f"{report.identical} of {paired} paired ({report.identical_unmasked} without masks"
                     + (f", {report.intentional_only} differing only where intended)" if report.intentional_only
                        else ")"))
        for where, category in sorted(report.differing.items(), key=lambda item: -item[1].count):
            lines.append(f"  differing at {where}: {category.count}")
            _, theirs, ours = category.example
            lines.append(f"    Debezium: {_clip(theirs)}")
            lines.append(f"    ours:     {_clip(ours)}")
        for where, (category, reason) in sorted(report.intentional.items()):
            lines.append(f"  intended difference at {where}: {category.count} ({reason})")
        for label, records in (("Debezium only", report.only_theirs), ("ours only", report.only_ours)):
            if records:
                lines.append(f"  {label}: {len(records)}, e.g. {_clip(records[0])}")
    percent = 100.0 * identical / total if total else 100.0
    lines.append(f"== {outcome.source}, schemas.enable={str(outcome.schemas_enable).lower()}: {identical} of {total} "
                 f"events byte-identical ({percent:.1f}%)"
                 + (f", {intentional} more differing only where intended" if intentional else "")
                 + ("" if outcome.clean else "; UNLISTED DIFFERENCES"))
    return "\n".join(lines)

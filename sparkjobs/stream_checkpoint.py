"""Where a Structured Streaming query stands in its Kafka topics, read from its checkpoint folder (no Spark).

Spark writes ``<checkpoint>/offsets/<batch>`` before a micro-batch runs (a version line, a metadata line, then one
JSON line per source: ``{"topic": {"partition": next offset}}``) and ``<checkpoint>/commits/<batch>`` once it is
done. The offsets of the newest committed batch are the next offset the query reads in each partition: past every
record it processed, and past the transaction markers an exactly-once producer leaves between them.
"""

from __future__ import annotations

import json
import os

MAX_BYTES = 1024 * 1024


def _batches(folder: str) -> list[int]:
    try:
        return sorted(int(name) for name in os.listdir(folder) if name.isdigit())
    except (FileNotFoundError, NotADirectoryError):
        return []


def committed_offsets(checkpoint_path: str) -> dict[str, dict[int, int]]:
    """Per topic and partition, the next offset after the newest committed batch; empty when none committed."""
    committed = _batches(os.path.join(checkpoint_path, "commits"))
    if not committed:
        return {}
    path = os.path.join(checkpoint_path, "offsets", str(committed[-1]))
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return {}
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return {}
    positions: dict[str, dict[int, int]] = {}
    for line in lines[2:]:
        try:
            source = json.loads(line)
        except ValueError:
            continue
        if not isinstance(source, dict):
            continue
        for topic, partitions in source.items():
            if isinstance(partitions, dict):
                positions.setdefault(topic, {}).update({int(p): int(o) for p, o in partitions.items()})
    return positions

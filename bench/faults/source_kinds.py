"""Every source the campaign can run, by the name `--source` takes."""

from __future__ import annotations

from bench.faults.sharded_source import ShardedMongoSource
from bench.faults.sources import SOURCES as SINGLE_SERVER_SOURCES

SOURCES = {**SINGLE_SERVER_SOURCES, "mongodb-sharded": ShardedMongoSource}

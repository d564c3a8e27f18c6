"""The short form of `python -m bench.compat --source mariadb` (schemas on, one JVM): Debezium's MariaDB connector on
Kafka Connect and ours capture the same workload (every type of docs/mariadb.md's table, NULLs, extremes, DDL,
TRUNCATE, key changes, a keyless table, transactions, snapshot and stream) on the devstack's MariaDB and Kafka; every
record must be byte-identical after the listed masks, but for the differences bench.compat.mariadb.INTENTIONAL
names with their reasons."""

from __future__ import annotations

import pytest

from bench.compat import run
from bench.compat.debezium import DebeziumUnavailable
from bench.compat.mariadb import INTENTIONAL, MariadbCompat
from devstack import settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.xfail(strict=True, reason="the relational envelope's shared parts are not on this branch yet: field order "
                   "(transaction before op), snapshot markers (first, first_in_data_collection, ...), column defaults "
                   "in the Connect schemas (and a NOT NULL zero date's fallback to its default), JsonConverter's "
                   "escapes of characters beyond the BMP (Kafka 4.1.1's Jackson 2.19 writes \\uD83D\\uDE00)")
def test_mariadb_events_are_debeziums_byte_for_byte(stack):
    try:
        outcome = run.run(MariadbCompat(), settings.kafka_bootstrap(), True, timeout=300)
    except DebeziumUnavailable as error:
        pytest.skip(f"Debezium cannot run here: {error}")
    unexpected = {f"{report.topic}: {where}": category.example
                  for report in outcome.reports for where, category in report.differing.items()
                  if where not in INTENTIONAL}
    one_side = {report.topic: (len(report.only_theirs), len(report.only_ours))
                for report in outcome.reports if report.only_theirs or report.only_ours}
    assert not unexpected and not one_side, (run.render(outcome), unexpected, one_side)
    assert sum(report.identical for report in outcome.reports) > 60  # the workload's events were compared

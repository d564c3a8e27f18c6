"""The CI short form of `python -m bench.compat --source postgres`: Debezium 3.6.1.Final's PostgreSQL connector (one
Kafka Connect JVM) and ours on the same workload, schemas on; any difference but the masked values and those listed
as intended (bench/compat/postgres.py, docs/postgres.md) fails, with the comparison's report."""

from __future__ import annotations

import pytest

from bench.compat import run
from bench.compat.postgres import PostgresCompat

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.timeout(1500)
def test_postgres_events_are_debeziums_byte_for_byte(stack):
    outcome = run.run(PostgresCompat(), stack.kafka_bootstrap, schemas_enable=True, timeout=600)
    report = run.render(outcome)
    print(report)
    assert outcome.reports and all(r.theirs and r.ours for r in outcome.reports), report  # both sides wrote events
    assert outcome.clean, report

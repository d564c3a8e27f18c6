"""The CI short form of `python -m bench.compat --source mariadb`: Debezium's MariaDB connector (3.5.0.Final, one Kafka
Connect JVM) and ours on the same workload (every type of docs/mariadb.md's table but INET4 and INET6, on which
Debezium fails; a UUID key; NULLs, extremes, DDL, TRUNCATE, key changes, a keyless table, transactions, snapshot and
stream, column defaults of every type), schemas on; any difference but the masked values and those listed as
intended (bench/compat/mariadb.py, docs/mariadb.md) fails, with the comparison's report."""

from __future__ import annotations

import pytest

from bench.compat import run
from bench.compat.mariadb import MariadbCompat

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.timeout(1500)
def test_mariadb_events_are_debeziums_byte_for_byte(stack):
    outcome = run.run(MariadbCompat(), stack.kafka_bootstrap, schemas_enable=True, timeout=600)
    report = run.render(outcome)
    print(report)
    assert outcome.reports and all(r.theirs and r.ours for r in outcome.reports), report  # both sides wrote events
    assert outcome.clean, report

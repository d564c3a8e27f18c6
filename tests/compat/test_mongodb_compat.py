"""The CI short form of `python -m bench.compat --source mongodb`: Debezium 3.6.1.Final's MongoDB connector (one
Kafka Connect JVM) and ours on the same workload against the devstack's MongoDB, capture.mode
change_streams_update_full_with_pre_image (before, after and update descriptions all written), transaction metadata
on, schemas on; any difference but the masked values and those listed as intended (bench/compat/mongodb.py,
docs/events.md) fails, with the comparison's report."""

from __future__ import annotations

import pytest

from bench.compat import run
from bench.compat.mongodb import MongodbCompat

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.timeout(1500)
def test_mongodb_events_are_debeziums_byte_for_byte(stack):
    outcome = run.run(MongodbCompat("change_streams_update_full_with_pre_image"), stack.kafka_bootstrap,
                      schemas_enable=True, timeout=600)
    report = run.render(outcome)
    print(report)
    assert outcome.reports and all(r.theirs and r.ours for r in outcome.reports), report  # both sides wrote events
    assert any(r.topic.endswith(".transaction") for r in outcome.reports), report
    assert outcome.clean, report

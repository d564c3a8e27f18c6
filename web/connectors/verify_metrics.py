"""Verify's samples on /metrics (docs/verify.md): the last finished run of each connector."""

from __future__ import annotations

from web.connectors.verify_models import VerifyRun, VerifyStatus


def add_verify_samples(out, connector) -> None:
    """`cdc_verify_mismatched_rows` and `cdc_verify_rows_checked` of the connector's last completed run, and when it
    finished (none before its first run)."""
    last = (VerifyRun.objects.filter(connector=connector, status=VerifyStatus.DONE)
            .order_by("-finished_at", "-id").only("mismatched", "rows", "finished_at").first())
    if last is None:
        return
    labels = {"connector": connector.name}
    out.add("cdc_verify_mismatched_rows", "gauge", "Rows missing, extra or different in the last Verify run.",
            labels, last.mismatched)
    out.add("cdc_verify_rows_checked", "gauge", "Source rows the last Verify run checked.", labels, last.rows)
    if last.finished_at is not None:
        out.add("cdc_verify_last_run_timestamp_seconds", "gauge", "When the last Verify run finished.", labels,
                last.finished_at.timestamp())

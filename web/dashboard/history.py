"""Chart series from the hour of per-second samples workers keep in Redis (workers.publish.history)."""

from __future__ import annotations

import time

import redis

from workers import publish


def series(samples: list[dict], *, since_ms: int = 0, step_s: int = 1) -> dict[str, list]:
    """Columns for uPlot: t (seconds), eps (mean per step), lag (max per step, ms), events (last per step)."""
    out: dict[str, list] = {"t": [], "eps": [], "lag": [], "events": []}
    bucket: list[dict] = []
    current = None

    def flush():
        if not bucket:
            return
        eps = [s["eps"] for s in bucket if s.get("eps") is not None]
        lag = [s["lag"] for s in bucket if s.get("lag") is not None]
        out["t"].append(current * step_s)
        out["eps"].append(round(sum(eps) / len(eps), 2) if eps else None)
        out["lag"].append(max(lag) if lag else None)
        out["events"].append(bucket[-1].get("events"))

    for sample in samples:
        t = sample.get("t")
        if not isinstance(t, int | float) or t < since_ms:
            continue
        slot = int(t // 1000) // step_s
        if slot != current:
            flush()
            bucket, current = [], slot
        bucket.append(sample)
    flush()
    return out


def replica_set_series(connector: str, replica_sets: list[str], *, minutes: int = 60,
                       step_s: int = 1) -> dict[str, dict[str, list]]:
    """{replica set: series} of the last `minutes`; empty series when Redis is unreachable."""
    since_ms = int((time.time() - minutes * 60) * 1000)
    found = {}
    for rs in replica_sets:
        try:
            samples = publish.history(connector, rs)
        except redis.RedisError:
            samples = []
        found[rs] = series(samples, since_ms=since_ms, step_s=step_s)
    return found


def connector_rate(per_rs: dict[str, dict[str, list]]) -> dict[str, list]:
    """Events per second of a whole connector: the sum over its replica sets, slot by slot."""
    totals: dict[int, float] = {}
    for columns in per_rs.values():
        for t, eps in zip(columns["t"], columns["eps"], strict=True):
            totals[t] = totals.get(t, 0.0) + (eps or 0.0)
    slots = sorted(totals)
    return {"t": slots, "eps": [round(totals[t], 2) for t in slots]}

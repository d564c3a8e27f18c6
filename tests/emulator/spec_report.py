"""Run MongoDB's unified-format spec suites against the emulator and print, as Markdown (kept in
docs/emulator.md, "Fidelity"), the pass / fail / skip counts per suite and every skipped test grouped by reason.

    python -m tests.emulator.spec_report            # runs every test (about a minute)
    python -m tests.emulator.spec_report --no-run   # skip list only
"""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
from collections import Counter, defaultdict

import pymongo

from tests.emulator import spec_source
from tests.emulator.spec_skips import skip_reason
from tests.emulator.unified import SkipTest, UnifiedRunner, choose_topology, load_area

AREAS = ("change-streams", "crud", "transactions")


def planned():
    """[(area, stem, doc, test, topology or None, skip reason or None)] for every spec test."""
    out = []
    for area in AREAS:
        for stem, doc, test in load_area(area):
            own = skip_reason(stem, test["description"])
            if own:
                out.append((area, stem, doc, test, None, f"emulator: {own}"))
                continue
            topology, reason = choose_topology(doc, test)
            if not reason and "skipReason" in test:
                topology, reason = None, "spec: " + test["skipReason"]
            out.append((area, stem, doc, test, topology, reason))
    return out


def _runners():
    from devstack.mongo import start_replica_set, start_standalone
    from devstack.mongo.sharded_handle import start_sharded_cluster

    rs = start_replica_set(members=3, election_timeout=0.3, stepdown_election_delay=0.05, noop_interval=0)
    single = start_standalone()
    sharded = start_sharded_cluster(shards=2, members=3, election_timeout=0.3, stepdown_election_delay=0.05,
                                    noop_interval=0)
    clients = [pymongo.MongoClient(h.uri, serverSelectionTimeoutMS=10000) for h in (rs, single, sharded)]
    runners = {"replicaset": UnifiedRunner(rs.uri, clients[0], rs),
               "single": UnifiedRunner(single.uri, clients[1], single, topology="single"),
               "sharded": UnifiedRunner(sharded.uri, clients[2], sharded.mongos_fail_points(), topology="sharded")}

    def stop():
        for c in clients:
            c.close()
        rs.stop()
        single.stop()
        sharded.stop()
    return runners, stop


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-run", action="store_true", help="only list the skipped tests")
    args = parser.parse_args(argv)
    missing = [m for m in map(spec_source.missing_message, AREAS) if m]
    if missing:
        print("\n".join(missing), file=sys.stderr)
        return 2
    logging.disable(logging.CRITICAL)
    tests = planned()
    counts: dict = {area: Counter() for area in AREAS}
    skipped: dict = defaultdict(list)
    failures = []
    runners, stop = (None, None) if args.no_run else _runners()
    try:
        for area, stem, doc, test, topology, reason in tests:
            name = f"{area}/{stem}: {test['description']}"
            if reason:
                counts[area]["skip"] += 1
                skipped[reason].append(name)
                continue
            if runners is None:
                counts[area]["run"] += 1
                continue
            try:
                runners[topology].run(doc, test)
            except SkipTest as exc:
                counts[area]["skip"] += 1
                skipped[str(exc)].append(name)
                continue
            except Exception:
                counts[area]["fail"] += 1
                failures.append((name, traceback.format_exc(limit=3)))
                continue
            counts[area]["pass"] += 1
            if topology != "replicaset":
                counts[area][f"pass on {topology}"] += 1
    finally:
        if stop:
            stop()
    print(f"Spec tests from {spec_source.describe()}.\n")
    print("| suite | tests | pass | fail | skip |\n| --- | --- | --- | --- | --- |")
    for area in AREAS:
        c = counts[area]
        total = sum(v for k, v in c.items() if k in ("pass", "fail", "skip", "run"))
        passed = str(c["pass"]) if runners else f"{c['run']} run"
        extra = "".join(f" ({v} {k[5:]}-server)" for k, v in c.items() if k.startswith("pass on "))
        print(f"| {area} | {total} | {passed}{extra} | {c['fail']} | {c['skip']} |")
    total_skipped = sum(len(v) for v in skipped.values())
    print(f"\n{total_skipped} spec tests are skipped:\n")
    for reason in sorted(skipped, key=lambda r: (-len(skipped[r]), r)):
        print(f"**{reason}** ({len(skipped[reason])})\n")
        for t in sorted(skipped[reason]):
            print(f"- {t}")
        print()
    for name, trace in failures:
        print(f"FAILED {name}\n{trace}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

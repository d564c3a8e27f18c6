"""Benchmark of the MongoDB emulator as pymongo sees it: inserts/s, change events/s served to one
watch() from a pre-filled oplog, and documents/s for a snapshot find (1 KB documents).

    python bench/emulator.py [--docs 100000] [--uri mongodb://...]

Without --uri it starts the emulator in a separate process (as `python -m devstack up` does), so client and
server each get their own core. Prints one line per figure.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import bson
import pymongo
from bson.raw_bson import RawBSONDocument
from bson.timestamp import Timestamp

ROOT = Path(__file__).resolve().parent.parent


def one_kb_doc(i: int) -> dict:
    return {"_id": i, "name": f"customer-{i:08d}", "email": f"user{i}@example.com", "age": 20 + i % 50,
            "active": i % 3 == 0, "score": i * 1.5, "tags": ["alpha", "beta", "gamma"],
            "address": {"street": f"{i} Main Street", "city": "Springfield", "zip": f"{10000 + i % 89999}"},
            "notes": "x" * 782}


def cpu_seconds(pid: int | None) -> float:
    """CPU time (user + system) a process has used so far, from /proc (0 when unknown)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


class Phase:
    """Wall time of a phase, plus the emulator's and this process's CPU time during it."""

    def __init__(self, server_pid):
        self.pid = server_pid

    def __enter__(self):
        self.wall = time.perf_counter()
        self.server = cpu_seconds(self.pid)
        self.client = time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.server = cpu_seconds(self.pid) - self.server
        self.client = time.process_time() - self.client

    def report(self, label: str, n: int, unit: str):
        line = f"{label:<38} {n / self.wall:>10,.0f} {unit}/s"
        if self.pid is not None and self.server > 0:
            line += (f"   (emulator CPU {self.server * 1e6 / n:,.1f} us/{unit[:-1] if unit.endswith('s') else unit}"
                     f" = {n / self.server:,.0f} {unit}/s per core; pymongo CPU {self.client * 1e6 / n:,.1f} us)")
        print(line, flush=True)


def start_emulator() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "devstack.mongo", "--port", "0", "--members", "3",
                             "--noop-interval", "0", "--oplog-max-bytes", str(2 * 1024**3)],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    uri = proc.stdout.readline().strip()
    if not uri.startswith("mongodb://"):
        proc.kill()
        raise SystemExit("the emulator did not print its connection string")
    return proc, uri


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000, help="documents (and change events) to move")
    parser.add_argument("--uri", help="benchmark this deployment instead of starting an emulator")
    args = parser.parse_args(argv)
    proc = None
    uri = args.uri
    if uri is None:
        proc, uri = start_emulator()
    try:
        client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000)
        coll = client.bench.docs
        coll.drop()
        n = args.docs
        docs = [one_kb_doc(i) for i in range(n)]

        pid = proc.pid if proc is not None else None
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; {n:,} documents of "
              f"{len(bson.encode(docs[0]))} bytes", flush=True)
        start = coll.database.command("ping")["operationTime"]
        start = Timestamp(start.time, start.inc + 1)
        with Phase(pid) as phase:
            for i in range(0, n, 1000):
                coll.insert_many(docs[i:i + 1000], ordered=True)
        phase.report("insert_many (1000 per batch)", n, "docs")

        single = min(5000, n)
        other = client.bench.single
        with Phase(pid) as phase:
            for i in range(single):
                other.insert_one(docs[i])
        phase.report("insert_one", single, "docs")

        with Phase(pid) as phase, coll.watch(start_at_operation_time=start) as stream:
            got = 0
            while got < n:
                if stream.try_next() is not None:
                    got += 1
        phase.report("watch(), pre-filled oplog", n, "events")

        raw_client = pymongo.MongoClient(uri, document_class=RawBSONDocument)
        with Phase(pid) as phase, raw_client.bench.docs.watch(start_at_operation_time=start) as stream:
            got = 0
            while got < n:
                if stream.try_next() is not None:
                    got += 1
        raw_client.close()
        phase.report("watch(), RawBSONDocument client", n, "events")

        with Phase(pid) as phase:
            count = sum(1 for _ in coll.find({}))
        phase.report("snapshot find (one cursor)", count, "docs")

        bounds = list(range(0, n + 1, 10_000))
        with Phase(pid) as phase:
            count = 0
            for lo, hi in zip(bounds, bounds[1:], strict=False):
                count += sum(1 for _ in coll.find({"_id": {"$gte": lo, "$lt": hi}}).sort("_id", 1))
        phase.report("chunked snapshot (_id ranges)", count, "docs")
        client.close()
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())

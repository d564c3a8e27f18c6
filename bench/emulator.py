"""Benchmark of the MongoDB emulator as pymongo sees it: inserts/s, change events/s served to one
watch() from a pre-filled oplog, and documents/s for a snapshot find (1 KB documents).

    python bench/emulator.py [--docs 60000] [--uri mongodb://...]

Without --uri it starts the emulator in a separate process (as `python -m devstack up` does), so client and
server each get their own core. Each change-stream phase reads a collection of its own, so every phase pays
for building its events once, as a connector's single stream does.

Three clients per read path, because pymongo itself can be the limit:
- `dict`: pymongo decoding every document into dicts (what most applications do);
- `RawBSONDocument`: pymongo with document_class=RawBSONDocument (decoded lazily, when a field is read);
- `raw batches`: aggregate/getMore (or find_raw_batches) returning undecoded batches: the rate the emulator
  can serve, with almost no client work.
For each phase it prints the wall-clock rate, the emulator's CPU per item (and so its rate per core), pymongo's
CPU per item, and ratios against the targets (50,000 events/s, 20,000 docs/s) and against the plain find of the
same documents in the same run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import bson
import pymongo
from bson.raw_bson import RawBSONDocument
from bson.timestamp import Timestamp

ROOT = Path(__file__).resolve().parent.parent
WATCH_TARGET = 50_000
FIND_TARGET = 20_000


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
        self.rate = 0.0

    def __enter__(self):
        self.wall = time.perf_counter()
        self.server = cpu_seconds(self.pid)
        self.client = time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.server = cpu_seconds(self.pid) - self.server
        self.client = time.process_time() - self.client

    def report(self, label: str, n: int, unit: str, target: float | None = None) -> float:
        self.rate = n / self.wall
        one = unit[:-1] if unit.endswith("s") else unit
        line = f"{label:<44} {self.rate:>9,.0f} {unit}/s"
        if target:
            line += f"  ({self.rate / target:4.2f}x target)"
        if self.pid is not None and self.server > 0:
            line += (f"   emulator {self.server * 1e6 / n:5.1f} us/{one} = {n / self.server:>9,.0f}/s per core;"
                     f" pymongo {self.client * 1e6 / n:5.1f} us/{one}")
        print(line, flush=True)
        return self.rate


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


@contextmanager
def one_member_deployment(replset: str, *options: str) -> Iterator[tuple[str, int | None]]:
    """(uri, emulator pid) of the deployment a bench measures against: MONGODB_URI's when set (pid None), else a
    one-member emulator in a process of its own, as in production (the measured process must not share its GIL or
    its RSS), stopped when the block ends."""
    uri = os.environ.get("MONGODB_URI")
    if uri:
        yield uri, None
        return
    emulator = subprocess.Popen([sys.executable, "-m", "devstack.mongo", "--members", "1", "--port", "0",
                                 "--replset", replset, *options], stdout=subprocess.PIPE, text=True)
    try:
        yield emulator.stdout.readline().strip(), emulator.pid
    finally:
        emulator.terminate()
        emulator.wait(30)


def drain_watch(coll, start: Timestamp, n: int) -> None:
    with coll.watch(start_at_operation_time=start) as stream:
        got = 0
        while got < n:
            if stream.try_next() is not None:
                got += 1


def drain_raw_change_stream(db, coll_name: str, start: Timestamp, n: int) -> None:
    """The change stream through bare aggregate/getMore commands, batches left undecoded."""
    raw = bson.codec_options.CodecOptions(document_class=RawBSONDocument)
    reply = db.command({"aggregate": coll_name, "pipeline": [{"$changeStream": {"startAtOperationTime": start}}],
                        "cursor": {}}, codec_options=raw)
    cursor = reply["cursor"]
    got = len(cursor["firstBatch"])
    cursor_id = cursor["id"]
    while got < n:
        reply = db.command({"getMore": cursor_id, "collection": coll_name, "maxTimeMS": 1000}, codec_options=raw)
        got += len(reply["cursor"]["nextBatch"])
    db.command({"killCursors": coll_name, "cursors": [cursor_id]})


def count_raw_batches(coll) -> int:
    count = 0
    for batch in coll.find_raw_batches({}, batch_size=100_000):
        count += len(bson.decode_all(batch, bson.codec_options.CodecOptions(document_class=RawBSONDocument)))
    return count


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=60_000, help="documents (and change events) per phase")
    parser.add_argument("--uri", help="benchmark this deployment instead of starting an emulator")
    args = parser.parse_args(argv)
    proc = None
    uri = args.uri
    if uri is None:
        proc, uri = start_emulator()
    try:
        client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000)
        raw_client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000, document_class=RawBSONDocument)
        db = client.bench
        names = ("watch_dict", "watch_rawdoc", "watch_rawbatch")
        for name in (*names, "single"):
            db.drop_collection(name)
        n = args.docs
        docs = [one_kb_doc(i) for i in range(n)]
        pid = proc.pid if proc is not None else None
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; {n:,} documents of "
              f"{len(bson.encode(docs[0]))} bytes per phase", flush=True)
        start = db.command("ping")["operationTime"]
        start = Timestamp(start.time, start.inc + 1)

        print("-- writes")
        with Phase(pid) as phase:
            for i in range(0, n, 1000):
                db[names[0]].insert_many(docs[i:i + 1000], ordered=True)
        phase.report("insert_many (1000 per batch)", n, "docs")
        for name in names[1:]:
            for i in range(0, n, 1000):
                db[name].insert_many(docs[i:i + 1000], ordered=True)
        single = min(5000, n)
        with Phase(pid) as phase:
            for i in range(single):
                db.single.insert_one(docs[i])
        phase.report("insert_one", single, "docs")

        print("-- change events from a pre-filled oplog (each phase builds its events once)")
        with Phase(pid) as phase:
            drain_watch(db[names[0]], start, n)
        watch_dict = phase.report("watch(), dict client", n, "events", WATCH_TARGET)
        with Phase(pid) as phase:
            drain_watch(raw_client.bench[names[1]], start, n)
        watch_rawdoc = phase.report("watch(), RawBSONDocument client", n, "events", WATCH_TARGET)
        with Phase(pid) as phase:
            drain_raw_change_stream(raw_client.bench, names[2], start, n)
        watch_served = phase.report("change stream, raw batches (emulator-bound)", n, "events", WATCH_TARGET)

        print("-- snapshot reads of the same documents")
        with Phase(pid) as phase:
            count = sum(1 for _ in db[names[0]].find({}, batch_size=100_000))
        find_dict = phase.report("find(batch_size=100000), dict client", count, "docs", FIND_TARGET)
        with Phase(pid) as phase:
            count = sum(1 for _ in raw_client.bench[names[0]].find({}, batch_size=100_000))
        find_rawdoc = phase.report("find, RawBSONDocument client", count, "docs", FIND_TARGET)
        with Phase(pid) as phase:
            count = count_raw_batches(db[names[0]])
        phase.report("find_raw_batches (emulator-bound)", count, "docs", FIND_TARGET)
        bounds = list(range(0, n + 1, 10_000)) + ([n] if n % 10_000 else [])
        with Phase(pid) as phase:
            count = 0
            for lo, hi in zip(bounds, bounds[1:], strict=False):
                count += sum(1 for _ in db[names[0]].find({"_id": {"$gte": lo, "$lt": hi}}).sort("_id", 1))
        phase.report("chunked snapshot (_id ranges), dict client", count, "docs", FIND_TARGET)

        print("-- ratios (same run)")
        print(f"watch() dict / find dict of the same documents:            {watch_dict / find_dict:4.2f}")
        print(f"watch() RawBSONDocument / find RawBSONDocument:            {watch_rawdoc / find_rawdoc:4.2f}")
        print(f"events served (raw batches) / watch() dict:                {watch_served / watch_dict:4.2f}")
        client.close()
        raw_client.close()
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())

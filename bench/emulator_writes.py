"""Writes/s of the MongoDB emulator with change streams open: the write mix of bench/verify_under_load.py (upserts,
updates, deletes of random keys) plus small transactions, from writer processes of their own, unpaced.

    python -m bench.emulator_writes [--streams 1] [--seconds 20] [--processes 2] [--threads 8]
                                    [--transactions 0.1] [--full-oplog ENTRIES] [--before REV] [--rounds 1]
                                    [--profile DIR]

Each run starts an emulator as `python -m devstack up` does (three members, a data directory, so checkpoints run),
fills a collection `hot` of `--keys` documents, opens `--streams` change streams on it (each read a batch at a time
by a thread of this process, as the connector's reader does) and lets the writers write as fast as they can for
`--seconds`. It prints the writes/s, the emulator's CPU per write, and the change events each stream read (every
write must reach every stream). With `--before REV` the same run is made with the emulator of that git revision
(its `devstack` package exported to a temporary directory), alternating `--rounds` times, and the ratio printed.
`--profile DIR` records a py-spy profile of the emulator during each run (py-spy must be on PATH).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bson  # noqa: E402
import pymongo  # noqa: E402
from bson.int64 import Int64  # noqa: E402
from bson.raw_bson import RawBSONDocument  # noqa: E402

from bench.write_load import DOCUMENT_OPS, ProcessWorkload  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RAW = bson.codec_options.CodecOptions(document_class=RawBSONDocument)


def mixed_writer(uri: str, database: str, transactions: float):
    """bench.write_load.mongo_writer's writes, and with probability `transactions` instead a transaction of three
    updates (two keys `$inc`ed, one upserted)."""
    from pymongo import MongoClient

    def open_writer():
        client = MongoClient(uri)
        hot = client[database]["hot"]
        session = client.start_session()
        rng = random.Random()
        writes = {
            "insert": lambda key: hot.update_one({"_id": key}, {"$inc": {"v": 1}}, upsert=True),
            "update": lambda key: hot.update_one({"_id": key}, {"$inc": {"v": 1}, "$set": {"note": str(key)}}),
            "delete": lambda key: hot.delete_one({"_id": key}),
        }

        def transaction(key: int, to: int) -> None:
            with session.start_transaction():
                hot.update_one({"_id": key}, {"$inc": {"v": 1}}, session=session)
                hot.update_one({"_id": to}, {"$inc": {"v": 1}}, session=session)
                hot.update_one({"_id": -1 - key}, {"$set": {"note": "t"}}, upsert=True, session=session)

        def write(op: str, key: int, to: int) -> bool:
            if transactions and rng.random() < transactions:
                try:
                    transaction(key, to)
                except pymongo.errors.PyMongoError as error:
                    if error.has_error_label("TransientTransactionError"):
                        return False  # a write conflict with another thread's transaction
                    raise
                return True
            writes[op](key)
            return True

        return write

    return open_writer


def cpu_times(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds a process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


@contextmanager
def emulator(root: Path):
    """(uri, pid) of a three-member emulator with a data directory, run from the `devstack` package under `root`."""
    data = tempfile.mkdtemp(prefix="emuwrites-")
    proc = subprocess.Popen([sys.executable, "-m", "devstack.mongo", "--members", "3", "--port", "0",
                             "--replset", "bench", "--data-dir", data], cwd=root, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(root)})
    try:
        uri = proc.stdout.readline().strip()
        if not uri.startswith("mongodb://"):
            raise SystemExit(f"the emulator under {root} did not print its connection string")
        yield uri, proc.pid
    finally:
        proc.terminate()
        proc.wait(60)
        shutil.rmtree(data, ignore_errors=True)


class StreamReader(threading.Thread):
    """One change stream on `hot`, read with aggregate/getMore and its batches left undecoded."""

    def __init__(self, uri: str, database: str, start):
        super().__init__(daemon=True)
        self.client = pymongo.MongoClient(uri)
        self.db = self.client[database]
        self.start_at = start
        self.events = 0
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            reply = self.db.command({"aggregate": "hot", "pipeline": [
                {"$changeStream": {"startAtOperationTime": self.start_at}}], "cursor": {}}, codec_options=RAW)
            cursor = reply["cursor"]
            self.events += len(cursor["firstBatch"])
            cursor_id = cursor["id"]
            while not self.stop.is_set():
                reply = self.db.command({"getMore": Int64(cursor_id), "collection": "hot", "maxTimeMS": 500},
                                        codec_options=RAW)
                self.events += len(reply["cursor"]["nextBatch"])
            self.db.command({"killCursors": "hot", "cursors": [Int64(cursor_id)]})
        except BaseException as error:  # noqa: BLE001 - reported by the run
            self.error = error
        finally:
            self.client.close()


def caught_up(readers: list[StreamReader], timeout: float = 120) -> None:
    """Wait until every stream has read the same number of events, unchanged for a second (the writes are over)."""
    deadline = time.monotonic() + timeout
    seen = None
    while time.monotonic() < deadline and not any(r.error for r in readers):
        counts = {r.events for r in readers}
        if len(counts) == 1 and counts == seen:
            return
        seen = counts
        time.sleep(1)


def one_run(label: str, root: Path, args) -> float:
    with emulator(root) as (uri, pid):
        client = pymongo.MongoClient(uri)
        hot = client.bench.hot
        for start in range(0, args.keys, 5000):
            hot.insert_many([{"_id": n, "v": 0, "note": "n"} for n in range(start, min(args.keys, start + 5000))])
        if args.full_oplog:
            client.admin.command("emulatorSetOplogLimits", maxEntries=args.full_oplog)
            for start in range(0, args.full_oplog, 10_000):
                client.bench.filler.insert_many([{"_id": n} for n in range(start, start + 10_000)])
        began = client.bench.command("ping")["operationTime"]
        readers = [StreamReader(uri, "bench", began) for _ in range(args.streams)]
        for reader in readers:
            reader.start()
        profiler = None
        with ProcessWorkload(mixed_writer, (uri, "bench", args.transactions), args.keys, per_second=1_000_000,
                             processes=args.processes, threads=args.threads, ops=DOCUMENT_OPS) as load:
            if not load.wait_writing():
                raise SystemExit("the writer processes did not start writing (their errors are above)")
            time.sleep(1)  # every thread connected and writing
            writers = [process.pid for process in load.processes]
            writes, cpu, wall = load.writes, cpu_times(pid), time.monotonic()
            writer_cpu = sum(sum(cpu_times(p)) for p in writers)
            if args.profile:
                profiler = subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--duration",
                                             str(int(args.seconds)), "--format", "raw", "--nonblocking",
                                             "--output", str(Path(args.profile) / f"{label}.txt")],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(args.seconds)
            user, system = cpu_times(pid)
            writer_cpu = sum(sum(cpu_times(p)) for p in writers) - writer_cpu
            writes, wall = load.writes - writes, time.monotonic() - wall
            user, system = user - cpu[0], system - cpu[1]
        caught_up(readers)
        for reader in readers:
            reader.stop.set()
        for reader in readers:
            reader.join(10)
        if profiler is not None:
            profiler.wait(60)
        client.close()
    rate = writes / wall
    errors = [r.error for r in readers if r.error]
    events = ", ".join(f"{r.events:,}" for r in readers)
    cpu = (user + system) * 1e6 / writes
    print(f"{label:<8} {rate:>7,.0f} writes/s ({writes:,} in {wall:.1f}s); emulator CPU {cpu:4.0f} µs a write "
          f"({system * 1e6 / writes:.0f} of it in the kernel; {(user + system) / wall:4.0%} of a core); change events "
          f"read per stream: {events}; the writers' CPU {writer_cpu * 1e6 / writes:.0f} µs a write; load average "
          f"{os.getloadavg()[0]:.1f}"
          + (f"; stream error: {errors[0]!r}" if errors else ""), flush=True)
    return rate


def export(rev: str) -> Path:
    """The `devstack` package of git revision `rev`, written to a temporary directory."""
    target = Path(tempfile.mkdtemp(prefix="emuwrites-before-"))
    archive = subprocess.run(["git", "archive", rev, "devstack"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=1, help="change streams open on the collection")
    parser.add_argument("--seconds", type=float, default=20, help="measured time per run")
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--processes", type=int, default=2, help="writer processes")
    parser.add_argument("--threads", type=int, default=8, help="writer threads per process, each its connection")
    parser.add_argument("--transactions", type=float, default=0.1,
                        help="share of the writes that are a transaction of three updates instead")
    parser.add_argument("--full-oplog", type=int, default=0, metavar="ENTRIES",
                        help="cap the oplog at this many entries and fill it before measuring (as a long-running "
                             "emulator's is: every write then trims the oldest entry)")
    parser.add_argument("--before", help="git revision whose emulator to compare with")
    parser.add_argument("--rounds", type=int, default=1, help="with --before: alternating runs of each")
    parser.add_argument("--profile", help="directory for py-spy profiles of the emulator (one per run)")
    args = parser.parse_args(argv)
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    print(f"{os.cpu_count()} CPUs; {args.streams} change stream(s); writers {args.processes}x{args.threads}, "
          f"{args.transactions:.0%} transactions; {args.seconds:.0f}s per run"
          + (f"; oplog full at {args.full_oplog:,} entries" if args.full_oplog else ""), flush=True)
    before = export(args.before) if args.before else None
    try:
        ours, theirs = [], []
        for round_ in range(args.rounds if before else 1):
            if before is not None:
                theirs.append(one_run(f"before{round_ + 1}" if args.rounds > 1 else "before", before, args))
            ours.append(one_run(f"ours{round_ + 1}" if args.rounds > 1 and before else "ours", ROOT, args))
        if before is not None:
            print(f"ours / before: {sum(ours) / sum(theirs):.2f} (mean of {len(ours)} run(s) each)")
    finally:
        if before is not None:
            shutil.rmtree(before, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A small, steady write workload for the demo: inserts, updates, replaces, deletes and transactions.

`python -m devstack.workload --uri URI --rate 20` runs until interrupted; `--count N` stops after N writes.
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import time
from datetime import UTC, datetime
from decimal import Decimal

import pymongo
from bson import Decimal128, ObjectId
from pymongo.errors import PyMongoError

from devstack import settings

PRODUCTS = ["keyboard", "mouse", "monitor", "laptop", "dock", "headset", "webcam", "cable"]


def _new_order(rng: random.Random) -> dict:
    return {
        "_id": ObjectId(),
        "customer": f"customer-{rng.randint(1, 200)}",
        "items": [{"sku": rng.choice(PRODUCTS), "qty": rng.randint(1, 5)} for _ in range(rng.randint(1, 3))],
        "total": Decimal128(Decimal(rng.randint(100, 100_000)) / 100),
        "status": "new",
        "created": datetime.now(UTC),
    }


def one_write(db, rng: random.Random) -> str:
    """Performs one randomly chosen write; returns its kind."""
    orders = db["orders"]
    roll = rng.random()
    if roll < 0.45 or orders.estimated_document_count() < 20:
        orders.insert_one(_new_order(rng))
        return "insert"
    victim = next(orders.aggregate([{"$sample": {"size": 1}}]), None)
    if victim is None:
        return "none"
    if roll < 0.80:
        orders.update_one({"_id": victim["_id"]}, {"$set": {"status": rng.choice(["paid", "shipped"])},
                                                   "$inc": {"revision": 1}})
        return "update"
    if roll < 0.88:
        orders.replace_one({"_id": victim["_id"]}, {**_new_order(rng), "_id": victim["_id"], "status": "replaced"})
        return "replace"
    if roll < 0.95:
        orders.delete_one({"_id": victim["_id"]})
        return "delete"
    with db.client.start_session() as session, session.start_transaction():
        db["products"].update_one({"_id": rng.choice(PRODUCTS)}, {"$inc": {"stock": -1}}, upsert=True,
                                  session=session)
        orders.update_one({"_id": victim["_id"]}, {"$set": {"status": "reserved"}}, session=session)
    return "transaction"


def run(uri: str, database: str, rate: float, count: int | None, seed: int | None = None) -> int:
    rng = random.Random(seed)
    client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10_000)
    db = client[database]
    stopping = False

    def _stop(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, _stop)
    done = 0
    interval = 1.0 / rate if rate > 0 else 0.0
    while not stopping and (count is None or done < count):
        started = time.monotonic()
        try:
            one_write(db, rng)
            done += 1
        except PyMongoError as error:  # a step-down in the demo: keep going
            print(f"write failed, retrying: {error}", file=sys.stderr, flush=True)
            time.sleep(0.5)
        time.sleep(max(0.0, interval - (time.monotonic() - started)))
    client.close()
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack.workload", description=__doc__)
    parser.add_argument("--uri", default=settings.mongodb_uri())
    parser.add_argument("--database", default="inventory")
    parser.add_argument("--rate", type=float, default=10.0, help="writes per second")
    parser.add_argument("--count", type=int, default=None)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    try:
        done = run(args.uri, args.database, args.rate, args.count, args.seed)
    except KeyboardInterrupt:
        return 0
    print(f"{done} writes", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

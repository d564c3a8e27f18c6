"""The control plane runs a stored connector through real Celery workers and beat: events flow into Kafka, a
pause stops the pipeline, and after `kill -9` of the worker running it another worker takes over once its lease
expired, with nothing lost or duplicated for read_committed consumers. (How fast is a benchmark's business.)

Everything runs as deployed: separate processes sharing a SQLite file, Redis (database 14, apart from a running
demo) and Kafka; the MongoDB replica set is the in-process emulator (or MONGODB_URI).
"""

from __future__ import annotations

import json
import signal
import threading
import time

import pymongo
import pytest
import redis

from tests.integration.kafka_reading import read_topic
from tests.integration.pipeline_harness import topic_exists
from tests.platform_processes import Platform
from tests.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REDIS_DB = 14


@pytest.fixture
def platform(stack, tmp_path):
    processes = Platform(stack, tmp_path, REDIS_DB)
    processes.migrate()
    yield processes.env, processes.start_worker, processes.start_beat, processes.django, processes.processes
    processes.stop()


def _leases(env) -> dict[str, str]:
    client = redis.Redis.from_url(env["REDIS_URL"])
    found = {}
    for key in client.scan_iter(match="cdc:lease:*"):
        found[key.decode()] = client.get(key).decode().split("|")[0] if client.get(key) else None
    return found


def _wait(predicate, timeout: float, what: str):
    return wait_for(predicate, timeout, what, interval=0.1)


def test_supervised_connector_pause_and_takeover_after_kill(platform, mongo_rs, unique_name, stack):
    env, start_worker, start_beat, django, processes = platform
    name = "cs" + unique_name.replace("-", "")[-12:]
    django(
        "from web.connectors.models import Connector; "
        f"Connector.objects.create(name={name!r}, topic_prefix={name!r}, connection_string={mongo_rs.uri!r}, "
        f"properties={{'database.include.list': {name!r}, 'snapshot.mode': 'never', 'poll.interval.ms': 100, "
        f"'offset.storage.topic': '{name}.offsets'}})"
    )
    start_worker("wa")
    start_worker("wb")
    start_beat()
    lease = _wait(lambda: _leases(env), 60, "a worker to take the pipeline")
    holder = next(iter(lease.values()))
    database = pymongo.MongoClient(mongo_rs.uri)[name]
    coll = database.docs
    # snapshot.mode never: only writes after the change stream opened are captured. A probe write seen on its topic
    # proves it is open (the lease is taken before the stream opens, by a time that depends on the machine).
    probes = iter(range(10**6))
    _wait(lambda: database.probe.insert_one({"_id": next(probes)}) and topic_exists(stack.kafka_bootstrap,
                                                                                    f"{name}.{name}.probe"),
          60, "the change stream to open")

    def write(start, stop):
        for i in range(start, stop):
            coll.insert_one({"_id": i})
            time.sleep(0.01)

    write(0, 100)
    topic = f"{name}.{name}.docs"
    _wait(lambda: topic_exists(stack.kafka_bootstrap, topic) and len(read_topic(stack.kafka_bootstrap, topic)) >= 100,
          30, "the first events")

    # kill -9 the worker that holds the lease while writes continue
    victim = "wa" if holder.startswith("wa-") else "wb"
    writer = threading.Thread(target=write, args=(100, 300), daemon=True)
    writer.start()
    time.sleep(0.5)
    processes[victim].send_signal(signal.SIGKILL)
    processes[victim].wait()
    survivor_prefix = "wb-" if victim == "wa" else "wa-"
    # the dead worker's lease (10 s) expires and the supervisor hands the pipeline to the survivor
    _wait(lambda: any(w and w.startswith(survivor_prefix) for w in _leases(env).values()), 30,
          "the surviving worker to take over")
    writer.join()
    records = _wait(lambda: (lambda r: r if len(r) >= 300 else None)(read_topic(stack.kafka_bootstrap, topic)), 60,
                    "every event after the takeover")
    ids = [json.loads(json.loads(r.value)["after"])["_id"] for r in records]
    assert ids == list(range(300)), "lost or duplicated events across the takeover"

    # pause reaches the running pipeline (through the service layer, as the API does) and it lets go of its lease
    django("from web.connectors.models import Connector; from web.connectors.services import request_state; "
           f"request_state(Connector.objects.get(name={name!r}), 'paused', user=None, source='cli')")
    _wait(lambda: not _leases(env), 30, "the pipeline to stop after pause")
    state = django(
        "from web.connectors.models import ReplicaSetState as S; "
        f"print(S.objects.get(connector__name={name!r}).phase)"
    )
    assert state.strip().splitlines()[-1] == "stopped"

"""Elections and faults: step-down, killed members, frozen members, dropped connections, delays, fail points.

These tests use a replica set of their own (`fresh_rs`) since they break it on purpose.
"""

from __future__ import annotations

import threading
import time

import pymongo
import pytest
from pymongo.errors import AutoReconnect, ConnectionFailure, NotPrimaryError, OperationFailure


@pytest.fixture
def client(fresh_rs):
    c = pymongo.MongoClient(fresh_rs.uri, serverSelectionTimeoutMS=10000)
    yield c
    c.close()


def test_step_down_elects_another_member_with_higher_term(fresh_rs, client):
    client.admin.command("ping")
    old_primary, old_term = fresh_rs.primary_index(), fresh_rs.term
    old_election = client.admin.command("hello")["electionId"]
    new_primary = fresh_rs.step_down()
    assert new_primary != old_primary and fresh_rs.term == old_term + 1
    client.t.c.insert_one({"after": "stepdown"})
    assert client.primary == ("127.0.0.1", fresh_rs.ports[new_primary])
    assert client.admin.command("hello")["electionId"] > old_election


def test_step_down_over_the_wire(fresh_rs, client):
    old = fresh_rs.primary_index()
    try:
        client.admin.command("replSetStepDown", 10)
    except ConnectionFailure:
        pass
    new = fresh_rs.wait_for_primary(not_index=old)
    assert new != old
    client.t.c.insert_one({"x": 1})
    status = client.admin.command("replSetGetStatus")
    assert [m["stateStr"] for m in status["members"]].count("PRIMARY") == 1


def test_cursors_on_old_primary_fail_with_resumable_error(fresh_rs, client):
    coll = client.t.c
    coll.insert_many([{"_id": i} for i in range(20)])
    cursor = coll.find(batch_size=5)
    next(cursor)
    stream = coll.watch(max_await_time_ms=50)
    stream.try_next()
    fresh_rs.step_down()
    with pytest.raises((OperationFailure, AutoReconnect)) as info:
        list(cursor)
    assert getattr(info.value, "code", 11602) == 11602
    # the change stream resumes transparently on the new primary
    coll.insert_one({"_id": "after"})
    deadline = time.monotonic() + 10
    ev = None
    while ev is None and time.monotonic() < deadline:
        ev = stream.try_next()
    assert ev["documentKey"] == {"_id": "after"}
    stream.close()


def test_raw_get_more_on_stepped_down_primary_has_resumable_label(fresh_rs):
    primary = fresh_rs.primary_index()
    direct = pymongo.MongoClient(fresh_rs.member_uri(primary))
    try:
        reply = direct.t.command("aggregate", "c", pipeline=[{"$changeStream": {}}], cursor={})
        fresh_rs.step_down()
        with pytest.raises(NotPrimaryError) as info:   # pymongo's class for state-change errors
            direct.t.command("getMore", reply["cursor"]["id"], collection="c", maxTimeMS=10)
        assert info.value.details["code"] == 11602
        assert "ResumableChangeStreamError" in info.value.details["errorLabels"]
    finally:
        direct.close()


def test_failover_in_the_middle_of_a_watch_loses_and_repeats_nothing(fresh_rs, client):
    coll = client.t.stream
    coll.insert_one({"_id": -1})
    seen: list = []
    n = 400

    with coll.watch(max_await_time_ms=100) as stream:
        def reader():
            deadline = time.monotonic() + 30
            while len(seen) < n and time.monotonic() < deadline:
                ev = stream.try_next()
                if ev is not None:
                    seen.append(ev["documentKey"]["_id"])
        t = threading.Thread(target=reader)
        t.start()
        for i in range(n):
            coll.insert_one({"_id": i})
            if i == 120:
                fresh_rs.step_down(seconds=5)
            if i == 260:
                fresh_rs.kill_member(fresh_rs.primary_index())
        t.join(40)
    assert seen == list(range(n))


def test_killed_primary_is_replaced_and_restarted_member_rejoins(fresh_rs, client):
    client.t.c.insert_one({"x": 1})
    old = fresh_rs.primary_index()
    fresh_rs.kill_member(old)
    new = fresh_rs.wait_for_primary(not_index=old)
    client.t.c.insert_one({"x": 2})
    assert fresh_rs.status()["members"][old]["state"] == "DOWN"
    fresh_rs.restart_member(old)
    assert fresh_rs.status()["members"][old]["state"] == "SECONDARY"
    assert fresh_rs.primary_index() == new
    direct = pymongo.MongoClient(fresh_rs.member_uri(old))
    try:
        assert direct.t.c.count_documents({}) == 2
    finally:
        direct.close()


def test_no_primary_without_majority(fresh_rs, client):
    a, b = [i for i in range(3) if i != fresh_rs.primary_index()]
    fresh_rs.kill_member(a)
    fresh_rs.kill_member(b)
    time.sleep(0.2)
    assert fresh_rs.primary_index() is None
    fresh_rs.restart_member(a)
    assert fresh_rs.wait_for_primary() is not None


def test_frozen_member_is_not_elected(fresh_rs):
    primary = fresh_rs.primary_index()
    others = [i for i in range(3) if i != primary]
    fresh_rs.freeze(others[0], 30)
    assert fresh_rs.step_down() == others[1]


def test_drop_connections_is_survivable(fresh_rs, client):
    client.t.c.insert_one({"x": 1})
    fresh_rs.drop_connections()
    assert client.t.c.count_documents({}) == 1   # retryable read after a network error


def test_delayed_replies(fresh_rs, client):
    client.admin.command("ping")
    fresh_rs.set_delay(300, commands=["find"])
    t0 = time.monotonic()
    client.t.c.find_one()
    assert time.monotonic() - t0 >= 0.3
    fresh_rs.set_delay(0)


def test_fail_command_fail_point(client):
    client.admin.command("configureFailPoint", "failCommand", mode={"times": 1},
                         data={"failCommands": ["insert"], "errorCode": 2, "errorLabels": []})
    with pytest.raises(OperationFailure) as info:
        client.t.c.insert_one({"x": 1})
    assert info.value.code == 2
    client.t.c.insert_one({"x": 2})     # fires only once
    client.admin.command("configureFailPoint", "failCommand", mode={"times": 1},
                         data={"failCommands": ["insert"], "closeConnection": True})
    client.t.c.insert_one({"x": 3})     # the retryable write retries after the dropped connection
    assert client.t.c.count_documents({}) == 2


def test_fail_command_retryable_error_is_retried(client):
    client.admin.command("configureFailPoint", "failCommand", mode={"times": 1},
                         data={"failCommands": ["insert"], "errorCode": 10107})
    client.t.c.insert_one({"x": 1})
    assert client.t.c.count_documents({}) == 1


def test_emulator_admin_commands_over_the_wire(fresh_rs, client):
    status = client.admin.command("emulatorStatus")
    assert status["replset"] == fresh_rs.name and len(status["members"]) == 3
    victim = next(i for i in range(3) if i != fresh_rs.primary_index())
    client.admin.command("emulatorKillMember", member=victim)
    time.sleep(0.1)
    assert fresh_rs.status()["members"][victim]["alive"] is False
    client.admin.command("emulatorRestartMember", member=victim)
    assert fresh_rs.status()["members"][victim]["alive"] is True
    client.admin.command("emulatorSetDelay", ms=0)
    target = next(i for i in range(3) if i != fresh_rs.primary_index())
    client.admin.command("emulatorElect", member=target)
    assert fresh_rs.primary_index() == target
    client.admin.command("emulatorSetOplogLimits", maxEntries=5)
    assert client.admin.command("emulatorStatus")["oplog"]["entries"] <= 5

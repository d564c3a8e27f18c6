"""Handshake and topology: what pymongo's discovery sees."""

from __future__ import annotations

import bson
import pymongo
import pytest
from bson.int64 import Int64
from bson.objectid import ObjectId
from pymongo.errors import NotPrimaryError, OperationFailure

from tests.waiting import wait_for


def test_pymongo_sees_primary_and_two_secondaries(client, rs):
    client.admin.command("ping")
    assert client.primary == ("127.0.0.1", rs.ports[0]) or client.primary is not None
    # the ping proves only that one member was discovered: pymongo monitors each member on its own thread
    wait_for(lambda: len(client.secondaries) == 2, 30, "pymongo to discover both secondaries")
    assert set(client.nodes) == {("127.0.0.1", p) for p in rs.ports}


def test_hello_fields_like_a_replica_set_member(client, rs):
    reply = client.admin.command("hello")
    for key in ("topologyVersion", "hosts", "setName", "setVersion", "isWritablePrimary", "secondary", "primary", "me",
                "electionId", "lastWrite", "maxBsonObjectSize", "maxMessageSizeBytes", "maxWriteBatchSize",
                "localTime", "logicalSessionTimeoutMinutes", "connectionId", "minWireVersion", "maxWireVersion",
                "readOnly", "ok", "$clusterTime", "operationTime"):
        assert key in reply, key
    assert reply["setName"] == rs.name
    assert reply["hosts"] == rs.hosts
    assert reply["isWritablePrimary"] is True and reply["secondary"] is False
    assert reply["maxWireVersion"] == 21
    assert str(reply["electionId"]).startswith("7fffffff")
    assert isinstance(reply["topologyVersion"]["counter"], Int64)
    assert isinstance(reply["topologyVersion"]["processId"], ObjectId)
    assert set(reply["lastWrite"]) == {"opTime", "lastWriteDate", "majorityOpTime", "majorityWriteDate"}


def test_legacy_is_master_and_secondary_reply(rs):
    secondary = next(i for i in range(3) if i != rs.primary_index())
    c = pymongo.MongoClient(rs.member_uri(secondary))
    try:
        reply = c.admin.command("isMaster")
        assert reply["ismaster"] is False and reply["secondary"] is True
        assert reply["me"] == rs.hosts[secondary]
        assert reply["primary"] == rs.hosts[rs.primary_index()]
        assert "electionId" not in reply
    finally:
        c.close()


def test_writes_on_secondary_are_refused_with_10107(rs):
    secondary = next(i for i in range(3) if i != rs.primary_index())
    c = pymongo.MongoClient(rs.member_uri(secondary), retryWrites=False)
    try:
        with pytest.raises(NotPrimaryError) as info:
            c.test.x.insert_one({"a": 1})
        assert info.value.details["code"] == 10107
        # a direct connection reads with primaryPreferred (driver rule), so reads work here
        assert c.test.x.find_one() is None
    finally:
        c.close()


def test_secondary_reads_with_secondary_ok(client, coll):
    coll.insert_one({"_id": 1, "v": "x"})
    sec = coll.with_options(read_preference=pymongo.ReadPreference.SECONDARY)
    assert sec.find_one({"_id": 1}) == {"_id": 1, "v": "x"}


def test_unknown_command_is_59(client):
    with pytest.raises(OperationFailure) as info:
        client.admin.command("noSuchThing")
    assert info.value.code == 59
    assert info.value.details["codeName"] == "CommandNotFound"


def test_build_info_reports_7_0(client):
    info = client.admin.command("buildInfo")
    assert info["version"].startswith("7.0.")
    assert info["versionArray"][:2] == [7, 0]


def test_cluster_time_and_operation_time_on_replies(client, coll):
    reply = client.test.command("ping")
    assert set(reply["$clusterTime"]) == {"clusterTime", "signature"}
    assert reply["$clusterTime"]["signature"]["keyId"] == 0
    assert isinstance(reply["operationTime"], bson.Timestamp)


def test_write_reply_carries_optime_and_election_id(coll):
    reply = coll.database.command("insert", coll.name, documents=[{"a": 1}])
    assert reply["n"] == 1
    assert reply["opTime"]["t"] >= 1 and isinstance(reply["opTime"]["ts"], bson.Timestamp)
    assert str(reply["electionId"]).startswith("7fffffff")


def test_repl_set_get_status(client, rs):
    status = client.admin.command("replSetGetStatus")
    assert status["set"] == rs.name
    states = sorted(m["stateStr"] for m in status["members"])
    assert states == ["PRIMARY", "SECONDARY", "SECONDARY"]
    assert sum(1 for m in status["members"] if m.get("self")) == 1


def test_server_status(client):
    status = client.admin.command("serverStatus")
    assert status["process"] == "mongod"
    assert status["repl"]["setName"]

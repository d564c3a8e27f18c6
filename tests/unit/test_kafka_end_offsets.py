"""connectors.kafka.reading.end_offsets: asked again while partition leadership settles, on a fresh client when
the caller gives one; any other error, or the deadline, ends it."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException

from connectors.kafka import reading


class End(int):
    """An answer that is an end offset (any other answer is an error code)."""


class ScriptedAdmin:
    """Answers list_offsets with the next of `answers`: an End, or a KafkaError code it fails with."""

    def __init__(self, answers: list, calls: list):
        self.answers = answers
        self.calls = calls

    def list_offsets(self, request, isolation_level, request_timeout):
        self.calls.append((self, isolation_level))
        answer = self.answers.pop(0)
        futures = {}
        for tp in request:
            future: Future = Future()
            if isinstance(answer, End):
                future.set_result(type("Listed", (), {"offset": answer}))
            else:
                future.set_exception(KafkaException(KafkaError(answer)))
            futures[tp] = future
        return futures


@pytest.fixture(autouse=True)
def no_pause(monkeypatch):
    monkeypatch.setattr(reading, "SETTLING_PAUSE_SECONDS", 0)


def test_settling_answers_are_asked_again_on_a_fresh_client():
    calls: list = []
    answers = [KafkaError._NOENT, KafkaError.FENCED_LEADER_EPOCH, KafkaError.NOT_LEADER_FOR_PARTITION, End(42)]
    first = ScriptedAdmin(answers, calls)
    fresh = []

    def fresh_admin():
        fresh.append(ScriptedAdmin(answers, calls))
        return fresh[-1]

    assert reading.end_offsets(first, "t", [0, 1], 10, fresh_admin=fresh_admin) == {0: 42, 1: 42}
    assert [admin for admin, _ in calls] == [first, *fresh] and len(fresh) == 3


def test_stable_only_asks_for_the_last_stable_offset():
    calls: list = []
    reading.end_offsets(ScriptedAdmin([End(7)], calls), "t", [0], 10, stable_only=True)
    assert str(calls[0][1]) == str(reading.IsolationLevel.READ_COMMITTED)


def test_other_errors_and_the_deadline_end_it():
    with pytest.raises(KafkaException) as raised:
        reading.end_offsets(ScriptedAdmin([KafkaError.TOPIC_AUTHORIZATION_FAILED, End(1)], []), "t", [0], 10)
    assert raised.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(KafkaException):
        reading.end_offsets(ScriptedAdmin([KafkaError._NOENT, End(1)], []), "t", [0], 0)


def test_no_partitions_asks_nothing():
    assert reading.end_offsets(ScriptedAdmin([], []), "t", [], 10) == {}

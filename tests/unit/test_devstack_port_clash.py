"""`devstack up` refuses settings whose services would listen on the same port (the emulator's replica set takes
DEVSTACK_MONGO_PORT and the ports after it, one per member) before it starts anything, naming both settings."""

from __future__ import annotations

import pytest

from devstack import settings, stack
from devstack.process import StackError


@pytest.fixture
def ports(monkeypatch):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    monkeypatch.delenv("MARIADB_DSN", raising=False)
    for name, port in {"KAFKA_PORT": 61000, "KAFKA_CONTROLLER_PORT": 61001, "REDIS_PORT": 61002,
                       "MONGO_PORT": 61003, "MONGO_MEMBERS": 3, "POSTGRES_PORT": 61006,
                       "MARIADB_PORT": 61007}.items():
        monkeypatch.setattr(settings, name, port)
    return monkeypatch


def test_ports_apart_do_not_clash(ports):
    assert stack.port_clash(["redis", "kafka", "mongo", "postgres", "mariadb"]) is None


def test_a_replica_set_member_on_the_postgres_port_is_named(ports):
    ports.setattr(settings, "POSTGRES_PORT", 61004)
    assert stack.port_clash(["mongo", "postgres"]) == (
        "DEVSTACK_POSTGRES_PORT=61004 and DEVSTACK_MONGO_PORT=61003 (ports 61003-61005) both take port 61004; set "
        "them further apart")
    assert stack.port_clash(["mongo", "mariadb"]) is None


def test_a_deployment_of_its_own_takes_no_port(ports):
    ports.setattr(settings, "MARIADB_PORT", 61000)
    assert "DEVSTACK_MARIADB_PORT=61000" in stack.port_clash(["kafka", "mariadb"])
    ports.setenv("MARIADB_DSN", "mysql://root:x@db.example:3306/")
    assert stack.port_clash(["kafka", "mariadb"]) is None


def test_up_refuses_before_starting_anything(ports):
    ports.setattr(settings, "REDIS_PORT", 61005)
    started = []
    for service in stack.services():
        ports.setattr(service.module, "up", lambda name=service.name: started.append(name) or "started")
        if service.long_running:
            ports.setattr(service.module.process, "is_running", lambda: False)
    with pytest.raises(StackError) as refused:
        stack.up(["redis", "mongo"], echo=lambda line: None)
    assert "DEVSTACK_REDIS_PORT=61005" in str(refused.value) and "DEVSTACK_MONGO_PORT=61003" in str(refused.value)
    assert started == []


def test_a_running_service_counts_too(ports):
    ports.setattr(settings, "POSTGRES_PORT", 61005)
    for service in stack.services():
        ports.setattr(service.module, "up", lambda: "started")
        if service.long_running:
            ports.setattr(service.module.process, "is_running", lambda name=service.name: name == "mongo")
    with pytest.raises(StackError, match="DEVSTACK_POSTGRES_PORT=61005"):
        stack.up(["postgres"], echo=lambda line: None)

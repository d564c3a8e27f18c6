"""The services of the local stack, in start order, and the operations over all of them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import ModuleType

from devstack import (
    kafka,
    mariadb,
    mongo_service,
    mongo_sharded_service,
    postgres,
    redis,
    settings,
    spark,
    spark_cluster,
)
from devstack.process import StackError


@dataclass(frozen=True)
class Service:
    name: str
    module: ModuleType
    endpoint: str
    long_running: bool = True
    by_default: bool = True  # started by a bare `up`; the others only when named (`up mariadb`)


def services() -> list[Service]:
    return [
        Service("redis", redis, redis.endpoint()),
        Service("kafka", kafka, settings.kafka_bootstrap()),
        Service("mongo", mongo_service, settings.mongodb_uri()),
        Service("mongo-sharded", mongo_sharded_service, mongo_sharded_service.uri(), by_default=False),
        Service("postgres", postgres, postgres.endpoint()),
        Service("mariadb", mariadb, mariadb.endpoint(), by_default=False),
        Service("spark-jars", spark, "spark-sql-kafka jars", long_running=False),
        Service("spark", spark_cluster, spark_cluster.master_url(), by_default=False),
    ]


def select(names: list[str] | None) -> list[Service]:
    known = {s.name: s for s in services()}
    if not names:
        return list(known.values())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown service(s) {unknown}; choose from {sorted(known)}")
    return [known[n] for n in names]


def listening_ports(name: str) -> dict[str, range]:
    """The ports service `name` listens on, by the setting that places them ({} for one that listens on none or
    is a deployment of its own: MONGODB_URI, MARIADB_DSN)."""
    one = lambda port: range(port, port + 1)  # noqa: E731
    if name == "redis":
        return {"DEVSTACK_REDIS_PORT": one(settings.REDIS_PORT)}
    if name == "kafka":
        return {"DEVSTACK_KAFKA_PORT": one(settings.KAFKA_PORT),
                "DEVSTACK_KAFKA_CONTROLLER_PORT": one(settings.KAFKA_CONTROLLER_PORT)}
    if name == "mongo" and not os.environ.get("MONGODB_URI"):
        return {"DEVSTACK_MONGO_PORT": range(settings.MONGO_PORT, settings.MONGO_PORT + settings.MONGO_MEMBERS)}
    if name == "mongo-sharded":
        ports = mongo_sharded_service.ports()
        return {"DEVSTACK_MONGO_SHARDED_PORT": range(ports[0], ports[-1] + 1)}
    if name == "postgres":
        return {"DEVSTACK_POSTGRES_PORT": one(settings.POSTGRES_PORT)}
    if name == "mariadb" and not os.environ.get("MARIADB_DSN"):
        return {"DEVSTACK_MARIADB_PORT": one(settings.MARIADB_PORT)}
    return {}


def port_clash(names: list[str]) -> str | None:
    """A sentence naming two settings whose services would listen on the same port, None if there are none."""
    taken: dict[int, tuple[str, range]] = {}
    for name in names:
        for setting, ports in listening_ports(name).items():
            for port in ports:
                if port in taken:
                    other, other_ports = taken[port]
                    return (f"{_placed(setting, ports)} and {_placed(other, other_ports)} both take port {port}; "
                            "set them further apart")
                taken[port] = (setting, ports)
    return None


def _placed(setting: str, ports: range) -> str:
    if len(ports) == 1:
        return f"{setting}={ports[0]}"
    return f"{setting}={ports[0]} (ports {ports[0]}-{ports[-1]})"


def up(names: list[str] | None = None, echo=print) -> list[str]:
    """Start the selected services; returns the names this call started (not those already running)."""
    chosen = [service for service in select(names) if names or service.by_default]
    running = [service.name for service in services() if service not in chosen and service.long_running
               and service.module.process.is_running()]
    clash = port_clash([service.name for service in chosen] + running)
    if clash:
        raise StackError(clash)
    started = []
    for service in chosen:
        was_running = service.long_running and service.module.process.is_running()
        echo(f"{service.name:<11} {service.module.up()}")
        if service.long_running and not was_running and service.module.process.is_running():
            started.append(service.name)
    return started


def down(names: list[str] | None = None, echo=print) -> None:
    for service in reversed(select(names)):
        if service.long_running:
            echo(f"{service.name:<11} {'stopped' if service.module.down() else 'not running'}")


@dataclass(frozen=True)
class Endpoints:
    kafka_bootstrap: str
    redis_url: str
    mongodb_uri: str


def endpoints() -> Endpoints:
    return Endpoints(settings.kafka_bootstrap(), settings.redis_url(), settings.mongodb_uri())

"""The services of the local stack, in start order, and the operations over all of them."""

from __future__ import annotations

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


def up(names: list[str] | None = None, echo=print) -> list[str]:
    """Start the selected services; returns the names this call started (not those already running)."""
    started = []
    for service in select(names):
        if not names and not service.by_default:
            continue
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

"""A Spark job's Kafka that asks for SASL: the platform's own questions to it (the topics a job reads, the end offsets
behind a Delta table's lag) authenticate with the job's Java-client options, `sasl.jaas.config` included, on a
private broker whose only way in for clients is a SASL_PLAINTEXT listener with PLAIN (the PLAINTEXT one serves the
test's own set-up). A wrong password and a login module librdkafka cannot use each come back as a sentence."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from devstack.private_kafka import PrivateKafka, free_ports
from sparkjobs.kafka_client import end_offsets_of
from sparkjobs.topics import list_topics

pytestmark = [pytest.mark.integration]

PORTS = range(45800, 45840)  # this suite's own; the shared stack and other suites use others
PASSWORD = "s3cret-analyst"


def jaas(password: str, module: str = "org.apache.kafka.common.security.plain.PlainLoginModule") -> str:
    return f'{module} required username="analyst" password="{password}";'


@pytest.fixture(scope="module")
def sasl_kafka(tmp_path_factory):
    kafka = PrivateKafka(tmp_path_factory.mktemp("sasl-kafka"), PORTS)
    (port,) = free_ports(1, range(kafka.port + 2, PORTS.stop))
    kafka.env["DEVSTACK_KAFKA_SASL_LISTENER"] = f"{port}:analyst:{PASSWORD}"
    kafka.start()
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_topics([NewTopic("sasl.orders", 2, 1)])["sasl.orders"].result(60)
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for n in range(5):
        producer.produce("sasl.orders", value=b"{}", partition=n % 2)
    assert producer.flush(30) == 0
    try:
        yield f"127.0.0.1:{port}"
    finally:
        kafka.stop()


def options(password: str, **extra: str) -> dict[str, str]:
    return {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": jaas(password), **extra}


def test_the_jobs_jaas_credentials_reach_the_topics_and_their_end_offsets(sasl_kafka):
    assert "sasl.orders" in list_topics(sasl_kafka, 30, options(PASSWORD))
    ends, problem = end_offsets_of(sasl_kafka, ["sasl.orders"], options(PASSWORD), 30)
    assert problem is None and ends == {"sasl.orders": {0: 3, 1: 2}}


def test_a_wrong_password_is_reported_not_taken_for_an_empty_topic(sasl_kafka):
    ends, problem = end_offsets_of(sasl_kafka, ["sasl.orders"], options("wrong"), 10)
    assert ends == {} and "Authentication failed" in problem, problem


def test_a_login_module_the_platform_cannot_use_is_named(sasl_kafka):
    kerberos = options(PASSWORD, **{"kafka.sasl.jaas.config": jaas(
        PASSWORD, "com.sun.security.auth.module.Krb5LoginModule")})
    ends, problem = end_offsets_of(sasl_kafka, ["sasl.orders"], kerberos, 10)
    assert ends == {} and "Krb5LoginModule" in problem and "PLAIN and SCRAM" in problem
    assert list_topics(sasl_kafka, 10, kerberos) is None  # Spark's own Java client is left to judge it

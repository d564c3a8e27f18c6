"""The translation of a Spark job's Java-client Kafka options into librdkafka's (the SASL round trip itself is in
tests/integration/test_kafka_sasl.py)."""

from __future__ import annotations

import pytest

from sparkjobs.kafka_client import UnsupportedKafkaOption, client_config, jaas_credentials

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


@pytest.mark.parametrize("text, expected", [
    (f'{PLAIN} required username="alice" password="pw";', ("alice", "pw")),
    (f'{SCRAM} required\n  username="bob"\n  password="a \\"quoted\\" ; pass";', ("bob", 'a "quoted" ; pass')),
    (f"{PLAIN} required username=carol password=bare-pw", ("carol", "bare-pw")),
])
def test_plain_and_scram_login_lines_give_their_user_and_password(text, expected):
    assert jaas_credentials(text) == expected


@pytest.mark.parametrize("text, named", [
    ("com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;", "Krb5LoginModule"),
    (f'{PLAIN} required username="alice";', "no username and password"),
    (f'{PLAIN} maybe username="a" password="b";', "not a JAAS login-module line"),
    (f'{PLAIN} required username="unterminated;', "not key="),
])
def test_other_lines_are_refused_by_name(text, named):
    with pytest.raises(UnsupportedKafkaOption, match=named):
        jaas_credentials(text)


def test_only_connection_options_are_carried_over():
    config = client_config("k:9093", {
        "kafka.security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": f'{SCRAM} required username="u" password="p";',
        "kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.location": "/etc/ca.pem",
        "kafka.ssl.endpoint.identification.algorithm": "", "kafka.fetch.max.bytes": "1000",
        "maxOffsetsPerTrigger": "5"})
    assert config == {"bootstrap.servers": "k:9093", "security.protocol": "SASL_SSL",
                      "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u", "sasl.password": "p",
                      "ssl.ca.location": "/etc/ca.pem", "ssl.endpoint.identification.algorithm": "none"}


def test_a_java_key_store_is_refused():
    with pytest.raises(UnsupportedKafkaOption, match="PEM"):
        client_config("k:9093", {"kafka.ssl.truststore.location": "/etc/trust.jks"})

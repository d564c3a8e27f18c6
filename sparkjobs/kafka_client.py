"""A Spark job's Kafka options (the Java client's, as Spark's Kafka source takes them) turned into the configuration of
a librdkafka client (confluent-kafka), for what the platform asks of the job's Kafka itself: topic lists and end
offsets. Only connection and security options are carried over; the job's consumer tuning is Spark's business.

The Java client authenticates with `sasl.jaas.config`, a JAAS login-module line that librdkafka cannot read. The
PLAIN and SCRAM login modules carry a user name and a password, which become `sasl.username` / `sasl.password`;
any other module (Kerberos, OAuth callbacks) and Java key stores are refused by name, so the caller can say why
it cannot reach the cluster instead of failing to authenticate.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

LOG = logging.getLogger(__name__)

CREDENTIAL_MODULES = {
    "org.apache.kafka.common.security.plain.PlainLoginModule",
    "org.apache.kafka.common.security.scram.ScramLoginModule",
}
JAAS_FLAGS = {"required", "requisite", "sufficient", "optional"}
# Java client option -> librdkafka option, where both mean the same thing
SAME_MEANING = {
    "security.protocol": "security.protocol",
    "sasl.mechanism": "sasl.mechanism",
    "ssl.key.password": "ssl.key.password",
    "ssl.keystore.password": "ssl.keystore.password",
}
JAAS_LINE = re.compile(r"\s*(?P<module>[\w.$]+)\s+(?P<flag>\w+)(?P<options>.*?);?\s*$", re.DOTALL)
JAAS_OPTION = re.compile(r'\s*(?P<key>[\w.\-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;"]+))')


class UnsupportedKafkaOption(ValueError):
    """An option of the job's Kafka connection that the platform's own client cannot use."""


def jaas_credentials(text: str) -> tuple[str, str]:
    """(username, password) of a PLAIN or SCRAM `sasl.jaas.config`; UnsupportedKafkaOption for anything else."""
    line = JAAS_LINE.match(text)
    if line is None or line["flag"] not in JAAS_FLAGS:
        raise UnsupportedKafkaOption("sasl.jaas.config is not a JAAS login-module line "
                                     "(<LoginModule class> required username=\"…\" password=\"…\";)")
    if line["module"] not in CREDENTIAL_MODULES:
        raise UnsupportedKafkaOption(f"sasl.jaas.config uses {line['module']}; the platform's Kafka client takes "
                                     "only the PLAIN and SCRAM login modules (a user name and a password)")
    options: dict[str, str] = {}
    rest = line["options"]
    while rest.strip():
        option = JAAS_OPTION.match(rest)
        if option is None:
            raise UnsupportedKafkaOption("sasl.jaas.config has an option that is not key=\"value\"")
        quoted = option["quoted"]
        options[option["key"]] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else option["bare"]
        rest = rest[option.end():]
    if "username" not in options or "password" not in options:
        raise UnsupportedKafkaOption("sasl.jaas.config names no username and password")
    return options["username"], options["password"]


def client_config(bootstrap: str, kafka_options: Mapping[str, str] | None = None) -> dict[str, str]:
    """librdkafka settings reaching `bootstrap` as the job does; UnsupportedKafkaOption names what it cannot use."""
    config = {"bootstrap.servers": bootstrap}
    options = {str(key).removeprefix("kafka."): str(value) for key, value in (kafka_options or {}).items()}
    for key, value in options.items():
        if key in SAME_MEANING:
            config[SAME_MEANING[key]] = value
        elif key == "sasl.jaas.config":
            config["sasl.username"], config["sasl.password"] = jaas_credentials(value)
        elif key == "ssl.endpoint.identification.algorithm":
            config[key] = value or "none"  # the Java client's empty value turns host name checking off
        elif key == "ssl.truststore.location":
            if options.get("ssl.truststore.type", "").upper() != "PEM":
                raise UnsupportedKafkaOption("ssl.truststore.location is a Java key store; the platform's Kafka "
                                             "client reads a PEM file (set ssl.truststore.type=PEM)")
            config["ssl.ca.location"] = value
        elif key == "ssl.keystore.location":
            if options.get("ssl.keystore.type", "").upper() != "PKCS12":
                raise UnsupportedKafkaOption("ssl.keystore.location is a Java key store; the platform's Kafka "
                                             "client reads a PKCS#12 file (set ssl.keystore.type=PKCS12)")
            config[key] = value
    return config


def end_offsets_of(bootstrap: str, topics: list[str], kafka_options: Mapping[str, str] | None,
                   timeout: float) -> tuple[dict[str, dict[int, int]], str | None]:
    """topic -> partition -> end offset of the topics that exist, asked with the job's own connection options, and
    why some or all are missing (None when Kafka answered for every topic)."""
    if not topics:
        return {}, None
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    from connectors.kafka.reading import end_offsets

    try:
        config = client_config(bootstrap, kafka_options)
    except UnsupportedKafkaOption as error:
        return {}, f"the job's Kafka options cannot be used to ask for the topics' end offsets: {error}"
    refused: list[str] = []  # why the client could not get in (a failed SASL login shows only here)

    def on_error(error) -> None:
        if error.code() in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED):
            refused.append(error.str())

    admin = AdminClient({**config, "socket.timeout.ms": int(timeout * 1000), "error_cb": on_error,
                         "logger": LOG})
    ends: dict[str, dict[int, int]] = {}
    try:
        metadata = admin.list_topics(timeout=timeout)
        for topic in topics:
            described = metadata.topics.get(topic)
            if described is None or described.error is not None:
                continue
            ends[topic] = end_offsets(admin, topic, sorted(described.partitions), timeout)
    except KafkaException as error:
        admin.poll(0)  # serves the error callback
        reason = refused[-1] if refused else error.args[0].str() if error.args else str(error)
        return ends, f"Kafka did not give the topics' end offsets ({reason})"
    return ends, None

"""The real Debezium connector on a Kafka Connect standalone worker (JsonConverter), beside ours.

The connector and Kafka Connect come from Maven Central (maven/debezium-pom.xml), fetched once into the devstack's
jar cache like the Kafka jars. One JVM runs the worker; its log goes to a file in the run's folder. Every topic it
writes is renamed by a RegexRouter to `<ROUTED_PREFIX><topic>`, so Debezium and ours can use the same
`topic.prefix` (hence the same `source.name` and schema names) on one Kafka.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from connectors.events.version import DEBEZIUM_VERSION
from devstack import settings
from devstack.maven import fetch_jars

HERE = Path(__file__).resolve().parent
KAFKA_CONNECT_VERSION = "4.1.1"  # the devstack broker's version (devstack/maven/kafka-pom.xml)
ROUTED_PREFIX = "dbz."
MINIMUM_JDK = 21  # Debezium 3.x's own; JDK 17 writes some doubles with more digits and older Unicode escapes


class DebeziumUnavailable(RuntimeError):
    """Debezium cannot be run here (no JDK, no Maven, the jars cannot be fetched)."""


def _java_version(java: Path) -> int:
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=60).stderr
    except (OSError, subprocess.TimeoutExpired):
        return 0
    found = re.search(r'version "(\d+)', out)
    return int(found.group(1)) if found else 0


def find_java(minimum: int = MINIMUM_JDK) -> Path:
    """A `java` of at least `minimum`: $JAVA_HOME's, the one on PATH, or the newest under /usr/lib/jvm."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
    if shutil.which("java"):
        candidates.append(Path(shutil.which("java")).resolve())
    jvm = Path("/usr/lib/jvm")
    if jvm.is_dir():
        candidates.extend(sorted((path / "bin" / "java" for path in jvm.iterdir()), reverse=True))
    for java in candidates:
        if java.exists() and _java_version(java) >= minimum:
            return java
    raise DebeziumUnavailable(f"Debezium {DEBEZIUM_VERSION} needs a Java {minimum} or newer, and none was found "
                              "(JAVA_HOME, PATH, /usr/lib/jvm)")


def jars(connector_artifact: str, version: str = DEBEZIUM_VERSION) -> list[Path]:
    """The worker's and the connector's jars, fetched on first use."""
    pom = ((HERE / "maven" / "debezium-pom.xml").read_text().replace("@CONNECTOR@", connector_artifact)
           .replace("@DEBEZIUM@", version).replace("@KAFKA@", KAFKA_CONNECT_VERSION))
    dest = settings.STATE_DIR / "jars" / f"{connector_artifact}-{version}"
    try:
        return fetch_jars(pom, dest, f"Debezium {version} {connector_artifact}")
    except Exception as error:  # noqa: BLE001 - StackError and OSError alike: say what is missing
        raise DebeziumUnavailable(str(error)) from error


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _properties(values: Mapping[str, object]) -> str:
    return "".join(f"{key}={value}\n" for key, value in values.items())


def worker_properties(bootstrap: str, folder: Path, schemas_enable: bool) -> dict[str, object]:
    schemas = "true" if schemas_enable else "false"
    return {
        "bootstrap.servers": bootstrap,
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": schemas,
        "value.converter.schemas.enable": schemas,
        "offset.storage.file.filename": folder / "offsets.dat",
        "offset.flush.interval.ms": 1000,
        "listeners": f"http://127.0.0.1:{free_port()}",
        "plugin.discovery": "service_load",  # the jars' ServiceLoader manifests: no class path scan (seconds)
    }


def routing_properties() -> dict[str, object]:
    """Every topic renamed to `dbz.<topic>`, created with one partition (the devstack broker creates none)."""
    return {
        "transforms": "compat_route",
        "transforms.compat_route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.compat_route.regex": "(.*)",
        "transforms.compat_route.replacement": f"{ROUTED_PREFIX}$1",
        "topic.creation.default.replication.factor": 1,
        "topic.creation.default.partitions": 1,
    }


LOG4J = """status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{ISO8601}} %p %c{{1}} %m%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
"""


class DebeziumWorker:
    """A Connect standalone worker running one Debezium connector; `stop()` ends it."""

    def __init__(self, connector_artifact: str, connector: Mapping[str, object], bootstrap: str, folder: Path,
                 schemas_enable: bool, version: str = DEBEZIUM_VERSION):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.log = folder / "connect.log"
        classpath = os.pathsep.join(map(str, jars(connector_artifact, version)))
        java = find_java()
        (folder / "worker.properties").write_text(_properties(worker_properties(bootstrap, folder, schemas_enable)))
        (folder / "connector.properties").write_text(_properties({**connector, **routing_properties()}))
        (folder / "log4j2.properties").write_text(LOG4J.format(log=self.log))
        self.java_version = _java_version(java)
        self._process = subprocess.Popen(
            [str(java), "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
             f"-Dlog4j2.configurationFile={folder / 'log4j2.properties'}", "-cp", classpath,
             "org.apache.kafka.connect.cli.ConnectStandalone",
             str(folder / "worker.properties"), str(folder / "connector.properties")],
            stdout=(folder / "stdout.log").open("wb"), stderr=subprocess.STDOUT)

    def check(self) -> None:
        """Raises when the worker has stopped or its connector task has failed, with the log's last errors."""
        failed = self._process.poll() is not None
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        if failed or "Task threw an uncaught and unrecoverable exception" in text:
            errors = [line for line in text.splitlines() if " ERROR " in line][-5:]
            raise RuntimeError(f"Debezium's worker failed (log: {self.log}):\n" + "\n".join(errors))

    def stop(self, timeout: float = 60) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout)


def wait_for(condition, what: str, timeout: float, checks=()) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        for check in checks:
            check()
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting {timeout:.0f} s for {what}")
        time.sleep(0.5)

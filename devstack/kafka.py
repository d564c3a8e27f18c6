"""Single-node Apache Kafka in KRaft mode (broker + controller in one JVM), from Maven jars."""

from __future__ import annotations

import os
import resource
import subprocess
import uuid
from pathlib import Path

from devstack import settings
from devstack.maven import fetch_jars, require_tool
from devstack.process import ManagedProcess, StackError, port_in_use, wait_until

POM = Path(__file__).parent / "maven" / "kafka-pom.xml"
HOME = settings.STATE_DIR / "kafka"
JARS = settings.STATE_DIR / "jars" / "kafka"
process = ManagedProcess("kafka")

LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = WARN
logger.apache.name = org.apache.kafka
logger.apache.level = WARN
"""


def server_properties() -> str:
    port, controller = settings.KAFKA_PORT, settings.KAFKA_CONTROLLER_PORT
    listeners, advertised, protocols = "", "", ""
    if settings.KAFKA_PROXIED_LISTENER:
        listen, _, shown = settings.KAFKA_PROXIED_LISTENER.partition(":")
        listeners, advertised = f",PROXIED://127.0.0.1:{int(listen)}", f",PROXIED://127.0.0.1:{int(shown)}"
        protocols = ",PROXIED:PLAINTEXT"
    return f"""\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}{listeners}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}{advertised}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT{protocols}
log.dirs={HOME / "data"}
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
transaction.max.timeout.ms=900000
message.max.bytes=1048588
log.retention.hours=168
"""


def _classpath() -> str:
    fetch_jars(POM.read_text(), JARS, "Kafka")
    return f"{JARS}/*"


def _java_argv(main_class: str, *args: str, heap: str = "1g", options: tuple[str, ...] = ()) -> list[str]:
    java = require_tool("java", "Install a JDK 17 or newer (Debian: apt-get install openjdk-17-jdk-headless).")
    return [
        java, f"-Xmx{heap}", "-XX:+UseG1GC", *options, "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={HOME / 'log4j2.properties'}",
        "-cp", _classpath(), main_class, *args,
    ]


# The dev broker gathers the topics of every test run (each connector's offsets topic has 25 partitions): at ~18,000
# partitions its old generation filled 88% of a 1 GB heap, young collections came every ~6 s and took ~100 ms each,
# and streaming latency rose with them. With 2 GB (same partitions, same load) p50/p99 were 0.55-0.8x / 0.6-0.9x.
BROKER_HEAP = "2g"


def _broker_argv(config: Path) -> list[str]:
    # The collector's pauses, to tell a broker pause from a slow client (bench.streaming reports them). Kafka's own
    # start scripts' settings (a fixed heap, MaxGCPauseMillis=20) and ZGC made no measurable difference to them here.
    gc_log = f"-Xlog:gc:file={HOME / 'gc.log'}:time,uptime:filecount=2,filesize=10M"
    return _java_argv("kafka.Kafka", str(config), heap=BROKER_HEAP, options=(gc_log,))


def _format_storage_once(config: Path) -> None:
    if (HOME / "data" / "meta.properties").exists():
        return
    cluster_id = str(uuid.uuid4().hex[:22])
    result = subprocess.run(
        _java_argv("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config), heap="256m"),
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise StackError(f"formatting Kafka storage failed:\n{(result.stdout + result.stderr)[-3000:]}")


def can_list_topics(timeout: float = 2.0) -> bool:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{settings.KAFKA_PORT}", "log_level": 0})
    try:
        admin.list_topics(timeout=timeout)
        return True
    except Exception:
        return False


def _partition_dirs() -> int:
    data = HOME / "data"
    return sum(1 for _ in data.iterdir()) if data.is_dir() else 0


def _check_open_file_limit(partitions: int) -> None:
    """The broker holds a file open for every partition's log segment: past the open-file limit it dies while
    loading them, silently (its logging goes nowhere). Say so before starting it."""
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if limit != resource.RLIM_INFINITY and partitions + 1000 > limit:
        raise StackError(
            f"Kafka's data directory {HOME / 'data'} holds {partitions:,} partition directories and this shell's "
            f"open-file limit is {limit:,}: the broker would die while loading them. Raise the limit (ulimit -n), "
            f"or start from empty data (stop Kafka, remove {HOME / 'data'}; every topic is lost)."
        )


def _answering(pid: int):
    """can_list_topics, failing at once when the broker this process started has exited (a child that exited is
    a zombie until reaped, and looks alive to ManagedProcess)."""

    def check() -> bool:
        try:
            exited, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child: ManagedProcess watches it
            exited = 0
        if exited:
            raise StackError(f"Kafka exited while starting; last log lines:\n{process.log_tail()}")
        return can_list_topics()

    return check


def start_timeout() -> float:
    """Seconds to wait for the broker to answer after starting it: it loads every partition's log first. The dev
    broker gathered ~20,000 partitions (test runs' topics) and took over 90 s to start on a loaded machine, so every
    test session that started it failed at the former fixed 90 s."""
    return 90 + _partition_dirs() * 0.02


def up() -> str:
    if process.is_running():
        wait_until(can_list_topics, start_timeout(), "Kafka to accept AdminClient requests", process)
        return "already running"
    for port in (settings.KAFKA_PORT, settings.KAFKA_CONTROLLER_PORT):
        if port_in_use(port):
            raise StackError(
                f"port {port} is taken by another program, so Kafka cannot start. Stop that program or choose "
                "other ports with DEVSTACK_KAFKA_PORT / DEVSTACK_KAFKA_CONTROLLER_PORT."
            )
    HOME.mkdir(parents=True, exist_ok=True)
    config = HOME / "server.properties"
    config.write_text(server_properties())
    (HOME / "log4j2.properties").write_text(LOG4J2.format(log=HOME / "server.log"))
    _format_storage_once(config)
    _check_open_file_limit(_partition_dirs())
    pid = process.start(_broker_argv(config))
    wait_until(_answering(pid), start_timeout(), "Kafka to accept AdminClient requests", process)
    return f"started on 127.0.0.1:{settings.KAFKA_PORT}"


def down() -> bool:
    return process.stop(timeout=30)

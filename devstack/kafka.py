"""Apache Kafka in KRaft mode from Maven jars: one node (broker + controller in one JVM), or a cluster of N such
combined nodes with `DEVSTACK_KAFKA_BROKERS=N` (`python -m devstack up kafka --brokers 3`).

Ports: node 1 listens on DEVSTACK_KAFKA_PORT (clients) and DEVSTACK_KAFKA_CONTROLLER_PORT (the KRaft quorum); node
n > 1 on the two ports after the previous node's, or on DEVSTACK_KAFKA_NODE_PORTS ("p2:c2,p3:c3": client:controller
per further node). A cluster keeps its data apart from the single node's (kafka-cluster/node-N), since a node's
storage is formatted for one quorum. Every node is a controller, so a 3-node cluster keeps its quorum with one node
down. With 3 or more nodes, Kafka's internal topics (consumer offsets, transaction state) get replication factor 3 and
min.insync.replicas 2; the platform's own topics get theirs when it creates them (connectors.kafka.topics).
"""

from __future__ import annotations

import os
import resource
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from devstack import settings
from devstack.maven import fetch_jars, require_tool
from devstack.process import ManagedProcess, StackError, port_in_use

POM = Path(__file__).parent / "maven" / "kafka-pom.xml"
HOME = settings.STATE_DIR / "kafka"
JARS = settings.STATE_DIR / "jars" / "kafka"
CLUSTER_HOME = settings.STATE_DIR / "kafka-cluster"
process = ManagedProcess("kafka")  # node 1, in either form

LOG4J2 = """\
status = warn
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = {log}
appender.file.filePattern = {log}.%i
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 20MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 2
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = WARN
logger.apache.name = org.apache.kafka
logger.apache.level = WARN
logger.logs.name = kafka.log.LogManager
logger.logs.level = INFO
logger.broker.name = kafka.server.BrokerServer
logger.broker.level = INFO
logger.lifecycle.name = kafka.server.BrokerLifecycleManager
logger.lifecycle.level = INFO
logger.server.name = kafka.server.KafkaRaftServer
logger.server.level = INFO
"""
# INFO for the loggers that tell how a start is going: the logs loaded ("Completed load of Log ... (n/N completed
# in DIR)", each partition's recovery after a kill -9), the broker's start phases and "Kafka Server started".


def broker_count() -> int:
    """DEVSTACK_KAFKA_BROKERS (default 1), read when asked so that `up --brokers N` can set it."""
    raw = os.environ.get("DEVSTACK_KAFKA_BROKERS", "1")
    if not raw.isdigit() or int(raw) < 1:
        raise StackError(f"DEVSTACK_KAFKA_BROKERS={raw!r} is not a number of brokers; set it to 1 or to 3.")
    return int(raw)


@dataclass(frozen=True)
class Node:
    id: int
    port: int
    controller_port: int
    home: Path
    process: ManagedProcess


def _further_ports(count: int) -> list[tuple[int, int]]:
    raw = os.environ.get("DEVSTACK_KAFKA_NODE_PORTS", "")
    if not raw:
        base = settings.KAFKA_CONTROLLER_PORT
        return [(base + 2 * n - 1, base + 2 * n) for n in range(1, count + 1)]
    try:
        pairs = [tuple(int(port) for port in pair.split(":")) for pair in raw.split(",")]
    except ValueError:
        pairs = []
    if len(pairs) < count or any(len(pair) != 2 for pair in pairs):
        raise StackError(f"DEVSTACK_KAFKA_NODE_PORTS={raw!r} must name {count} client:controller port pairs, "
                         "comma-separated, one per node after the first.")
    return pairs[:count]


def nodes(count: int | None = None) -> list[Node]:
    count = broker_count() if count is None else count
    if count == 1:
        return [Node(1, settings.KAFKA_PORT, settings.KAFKA_CONTROLLER_PORT, HOME, process)]
    ports = [(settings.KAFKA_PORT, settings.KAFKA_CONTROLLER_PORT), *_further_ports(count - 1)]
    return [Node(n, port, controller, CLUSTER_HOME / f"node-{n}",
                 process if n == 1 else ManagedProcess(f"kafka-{n}"))
            for n, (port, controller) in enumerate(ports, start=1)]


def bootstrap(count: int | None = None) -> str:
    return ",".join(f"127.0.0.1:{node.port}" for node in nodes(count))


REGISTRATION_TIMEOUT_MS = 300_000  # a loaded machine can take minutes to start the JVMs of a cluster's quorum


def server_properties(node: Node | None = None, members: list[Node] | None = None) -> str:
    members = members or nodes()
    node = node or members[0]
    replicas = min(3, len(members))
    in_sync = 2 if replicas >= 3 else 1
    voters = ",".join(f"{m.id}@127.0.0.1:{m.controller_port}" for m in members)
    listeners, advertised, protocols = "", "", ""
    if settings.KAFKA_PROXIED_LISTENER and node.id == 1:
        listen, _, shown = settings.KAFKA_PROXIED_LISTENER.partition(":")
        listeners, advertised = f",PROXIED://127.0.0.1:{int(listen)}", f",PROXIED://127.0.0.1:{int(shown)}"
        protocols = ",PROXIED:PLAINTEXT"
    sasl = ""
    if settings.KAFKA_SASL_LISTENER and node.id == 1:
        port, user, password = settings.KAFKA_SASL_LISTENER.split(":", 2)
        listeners += f",SASL://127.0.0.1:{int(port)}"
        advertised += f",SASL://127.0.0.1:{int(port)}"
        protocols += ",SASL:SASL_PLAINTEXT"
        sasl = ("listener.name.sasl.sasl.enabled.mechanisms=PLAIN\n"
                "listener.name.sasl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
                f'required username="{user}" password="{password}" user_{user}="{password}";\n')
    internal = settings.KAFKA_INTERNAL_PARTITIONS
    internal_topics = (f"offsets.topic.num.partitions={internal}\ntransaction.state.log.num.partitions={internal}\n"
                       if internal else "")
    return f"""\
process.roles=broker,controller
node.id={node.id}
controller.quorum.voters={voters}
listeners=PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}{listeners}
advertised.listeners=PLAINTEXT://127.0.0.1:{node.port}{advertised}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT{protocols}
log.dirs={node.home / "data"}
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor={replicas}
transaction.state.log.replication.factor={replicas}
transaction.state.log.min.isr={in_sync}
share.coordinator.state.topic.replication.factor={replicas}
share.coordinator.state.topic.min.isr={in_sync}
group.initial.rebalance.delay.ms=0
transaction.max.timeout.ms=900000
message.max.bytes=1048588
log.retention.hours=168
initial.broker.registration.timeout.ms={REGISTRATION_TIMEOUT_MS}
{sasl}{internal_topics}"""


def _classpath() -> str:
    fetch_jars(POM.read_text(), JARS, "Kafka")
    return f"{JARS}/*"


def _java_argv(main_class: str, *args: str, heap: str = "1g", options: tuple[str, ...] = (),
               home: Path = HOME) -> list[str]:
    java = require_tool("java", "Install a JDK 17 or newer (Debian: apt-get install openjdk-17-jdk-headless).")
    return [
        java, f"-Xmx{heap}", "-XX:+UseG1GC", *options, "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={home / 'log4j2.properties'}",
        "-cp", _classpath(), main_class, *args,
    ]


# The dev broker gathers the topics of every test run (each connector's offsets topic has 25 partitions): at ~18,000
# partitions its old generation filled 88% of a 1 GB heap, young collections came every ~6 s and took ~100 ms each,
# and streaming latency rose with them. With 2 GB (same partitions, same load) p50/p99 were 0.55-0.8x / 0.6-0.9x.
BROKER_HEAP = "2g"
CLUSTER_NODE_HEAP = "768m"  # three JVMs on one machine; a cluster serves tests and fault runs, not the dev load


def _broker_argv(config: Path, home: Path = HOME, heap: str = BROKER_HEAP) -> list[str]:
    # The collector's pauses, to tell a broker pause from a slow client (bench.streaming reports them). Kafka's own
    # start scripts' settings (a fixed heap, MaxGCPauseMillis=20) and ZGC made no measurable difference to them here.
    gc_log = f"-Xlog:gc:file={home / 'gc.log'}:time,uptime:filecount=2,filesize=10M"
    return _java_argv("kafka.Kafka", str(config), heap=heap, options=(gc_log,), home=home)


def _cluster_id(home: Path) -> str:
    """One id for every node of a cluster (kept beside the nodes' directories), a new one for a single node."""
    if home == HOME:
        return uuid.uuid4().hex[:22]
    path = CLUSTER_HOME / "cluster.id"
    if not path.exists():
        CLUSTER_HOME.mkdir(parents=True, exist_ok=True)
        path.write_text(uuid.uuid4().hex[:22])
    return path.read_text().strip()


def _format_storage_once(config: Path, home: Path = HOME) -> None:
    if (home / "data" / "meta.properties").exists():
        return
    cluster_id = _cluster_id(home)
    result = subprocess.run(
        _java_argv("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config), heap="256m",
                   home=home),
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise StackError(f"formatting Kafka storage failed:\n{(result.stdout + result.stderr)[-3000:]}")


def live_brokers(timeout: float = 2.0, servers: str | None = None) -> int:
    """How many brokers the cluster's metadata lists (0 when none answers)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": servers or bootstrap(), "log_level": 0})
    try:
        return len(admin.list_topics(timeout=timeout).brokers)
    except Exception:
        return 0


def can_list_topics(timeout: float = 2.0) -> bool:
    return live_brokers(timeout, f"127.0.0.1:{settings.KAFKA_PORT}") > 0


def _partition_dirs(home: Path = HOME) -> int:
    data = home / "data"
    return sum(1 for _ in data.iterdir()) if data.is_dir() else 0


def _check_open_file_limit(partitions: int, home: Path = HOME) -> None:
    """The broker holds a file open for every partition's log segment: past the open-file limit it dies while
    loading them, silently (its logging goes nowhere). Say so before starting it."""
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if limit != resource.RLIM_INFINITY and partitions + 1000 > limit:
        raise StackError(
            f"Kafka's data directory {home / 'data'} holds {partitions:,} partition directories and this shell's "
            f"open-file limit is {limit:,}: the broker would die while loading them. Raise the limit (ulimit -n), "
            f"or start from empty data (stop Kafka, remove {home / 'data'}; every topic is lost)."
        )


def _answering(pid: int, node: Node, wanted: int):
    """The cluster lists `wanted` brokers, failing at once when the broker this process started has exited (a
    child that exited is a zombie until reaped, and looks alive to ManagedProcess)."""

    def check() -> bool:
        try:
            exited, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child: ManagedProcess watches it
            exited = 0
        if exited:
            raise StackError(f"Kafka node {node.id} exited while starting; last log lines:\n"
                             f"{node.process.log_tail()}")
        return live_brokers(servers=f"127.0.0.1:{node.port}") >= wanted

    return check


def start_timeout(home: Path = HOME) -> float:
    """Seconds a starting broker may go without writing a line to its log (the JVM's start, before its first line,
    is the longest such stretch) before it is taken for stuck; while it logs what it does (its start phases, every
    partition's log loaded, see LOG4J2) the wait goes on, up to start_limit()."""
    return 90 + _partition_dirs(home) * 0.02


def start_limit(home: Path = HOME) -> float:
    """Seconds a start may take at most, however steadily the broker logs: a kill -9'd broker recovers each of its
    partitions' logs first, about 35 ms each on an idle 2-core machine and ten times that under a load of 30."""
    return 600 + _partition_dirs(home) * 0.5


def _log_size(node: Node) -> int:
    try:
        return (node.home / "server.log").stat().st_size
    except OSError:
        return 0


def _last_log_line(node: Node) -> str:
    try:
        with (node.home / "server.log").open("rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - 4096))
            lines = log.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def wait_started(node: Node, answering, what: str, together: int = 1) -> None:
    """Until `answering()`, while the broker keeps logging what it does: it fails once the broker has logged nothing
    for start_timeout() seconds, or after start_limit() seconds in all, naming the last thing it logged. Both are
    `together` times longer when that many nodes' JVMs start at once."""
    started = time.monotonic()
    quiet, limit = start_timeout(node.home) * together, start_limit(node.home) * together
    size, progressed = _log_size(node), started
    while not answering():
        now = time.monotonic()
        if node.process.exited_early():
            raise StackError(f"{node.process.name} exited while starting; last log lines:\n"
                             f"{node.process.log_tail()}")
        grown = _log_size(node)
        if grown != size:
            size, progressed = grown, now
        if now - progressed > quiet or now - started > limit:
            why = (f"it logged nothing for {now - progressed:.0f}s" if now - progressed > quiet
                   else f"it was still starting after {limit:.0f}s")
            raise StackError(f"timed out waiting for {what}: {why}; its last log line: "
                             f"{_last_log_line(node) or '(none)'}\n{node.process.log_tail()}")
        time.sleep(0.2)


def _runs_from(node: Node) -> bool:
    """The node's recorded process was started with this node's configuration (not the other form's)."""
    pid = node.process.pid()
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return str(node.home / "server.properties") in command


def prepare_node(node: Node, members: list[Node]) -> Path:
    """Writes the node's configuration and formats its storage once; returns the configuration's path."""
    for port in (node.port, node.controller_port):
        if port_in_use(port):
            raise StackError(
                f"port {port} is taken by another program, so Kafka cannot start. Stop that program or choose "
                "other ports with DEVSTACK_KAFKA_PORT / DEVSTACK_KAFKA_CONTROLLER_PORT (and DEVSTACK_KAFKA_NODE_PORTS "
                "for a cluster)."
            )
    node.home.mkdir(parents=True, exist_ok=True)
    config = node.home / "server.properties"
    config.write_text(server_properties(node, members))
    (node.home / "log4j2.properties").write_text(LOG4J2.format(log=node.home / "server.log"))
    _format_storage_once(config, node.home)
    _check_open_file_limit(_partition_dirs(node.home), node.home)
    return config


def start_node(node: Node, config: Path, members: list[Node]) -> int:
    """Starts one prepared node (also a cluster node killed earlier); returns its pid without waiting for it."""
    heap = BROKER_HEAP if len(members) == 1 else CLUSTER_NODE_HEAP
    return node.process.start(_broker_argv(config, node.home, heap))


def up() -> str:
    members = nodes()
    wanted = len(members)
    if process.is_running() and not _runs_from(members[0]):
        other = "a single Kafka node" if wanted > 1 else "a Kafka cluster"
        raise StackError(f"{other} is running on these ports: stop it (python -m devstack down kafka) first.")
    running = [node for node in members if node.process.is_running()]
    if len(running) == wanted:
        wait_started(members[0], lambda: live_brokers() >= wanted, "Kafka to accept AdminClient requests", wanted)
        return "already running"
    # every node is prepared (storage formatting runs a JVM each) before any starts: a broker that cannot reach a
    # quorum of controllers within initial.broker.registration.timeout.ms exits
    configs = [(node, prepare_node(node, members)) for node in members if node not in running]
    started = [(node, start_node(node, config, members)) for node, config in configs]
    for node, pid in started:
        # the nodes start together, each answering once a quorum of them runs
        wait_started(node, _answering(pid, node, wanted), f"Kafka node {node.id} to accept AdminClient requests",
                     len(started))
    if wanted == 1:
        return f"started on 127.0.0.1:{settings.KAFKA_PORT}"
    return f"started a {wanted}-broker cluster on {bootstrap()}"


def down() -> bool:
    """Stops every node this stack started: the single node or a cluster's, whatever DEVSTACK_KAFKA_BROKERS says."""
    run = settings.STATE_DIR / "run"
    names = sorted(p.stem for p in run.glob("kafka-*.pid")) if run.is_dir() else []
    stopped = process.stop(timeout=30)
    for name in names:
        stopped = ManagedProcess(name).stop(timeout=30) or stopped
    return stopped

"""A real Apache Kafka broker on loopback: one KRaft node (broker + controller) run from the pinned jars.

``make install`` resolves the server jars with Maven (``jvm/kafka/pom.xml``) into
``<state_dir>/jvm/kafka`` and records the outcome in ``install.json`` (``scripts/install_kafka_broker.py``).
This module finds them, formats the storage directory once (``kafka.tools.StorageTool format``), and runs
``java -cp <jars> kafka.Kafka server.properties`` with the lifecycle every local broker shares
(``edge/broker/process.py``): a free port unless one is asked for, ready once it answers a metadata
request, stopped with SIGTERM (a controlled shutdown) then SIGKILL. Unlike Tansu, its data is on disk
under ``data_dir``: topics, committed offsets and transactions survive a restart on the same directory.

Settings are tuned for one node: every replication factor and min ISR is 1, internal topics have few
partitions and group joins are not delayed, so it starts in seconds and a consumer group forms at once.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

from edge.broker.binary import BrokerBinaryNotFoundError
from edge.broker.process import LOOPBACK, BrokerInfo, BrokerProcess, BrokerStartError, free_port

#: A directory holding ``libs/*.jar`` and ``install.json`` (overrides the state dir's ``jvm/kafka``).
KAFKA_DIST_ENV = "STREAMHOUSE_KAFKA_DIST"
DIST_SUBDIR = Path("jvm") / "kafka"
DEFAULT_HEAP = "512m"
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


class KafkaDistributionError(BrokerBinaryNotFoundError):
    """The Apache Kafka jars (or a Java runtime to run them) are not available; the message says why."""


@dataclass(frozen=True)
class KafkaDistribution:
    home: Path
    version: str

    @property
    def libs(self) -> Path:
        return self.home / "libs"

    @property
    def classpath(self) -> str:
        return str(self.libs / "*")

    def storage_tool_class(self) -> str:
        """``kafka.tools.StorageTool`` (Scala, in core, up to 4.x) or its Java successor."""
        for jar in self.libs.glob("kafka_2.13-*.jar"):
            with contextlib.suppress(OSError, zipfile.BadZipFile), zipfile.ZipFile(jar) as zf:
                if "kafka/tools/StorageTool.class" in zf.namelist():
                    return "kafka.tools.StorageTool"
        return "org.apache.kafka.tools.StorageTool"


def _distribution_candidates(state_dir: Path | None) -> list[Path]:
    override = os.environ.get(KAFKA_DIST_ENV)
    if override:
        return [Path(override)]
    dirs = [state_dir / DIST_SUBDIR] if state_dir is not None else []
    if os.environ.get("STREAMHOUSE_STATE_DIR"):
        dirs.append(Path(os.environ["STREAMHOUSE_STATE_DIR"]) / DIST_SUBDIR)
    dirs += [Path.cwd() / ".state" / DIST_SUBDIR, _PROJECT_ROOT / ".state" / DIST_SUBDIR]
    unique: list[Path] = []
    for d in dirs:
        if d.resolve() not in [u.resolve() for u in unique]:
            unique.append(d)
    return unique


def resolve_kafka_distribution(state_dir: Path | None = None) -> KafkaDistribution:
    """The installed Apache Kafka jars, or a ``KafkaDistributionError`` saying why there are none."""
    reasons: list[str] = []
    candidates = _distribution_candidates(state_dir)
    for home in candidates:
        try:
            record = json.loads((home / "install.json").read_text())
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            reasons.append(f"{home / 'install.json'} is unreadable ({exc})")
            continue
        if record.get("status") == "ok" and any((home / "libs").glob("kafka_2.13-*.jar")):
            return KafkaDistribution(home, str(record.get("version", "?")))
        reasons.append(str(record.get("reason") or f"{home} holds no Apache Kafka jars"))
    if reasons:
        raise KafkaDistributionError(
            f"the Apache Kafka broker is unavailable: {reasons[0]}; rerun `make install` once that is fixed"
        )
    where = " or ".join(str(c) for c in candidates)
    raise KafkaDistributionError(
        f"the Apache Kafka broker is not installed (looked in {where}); `make install` resolves it with "
        f"Maven (jvm/kafka/pom.xml), or point {KAFKA_DIST_ENV} at a directory with libs/*.jar"
    )


def kafka_unavailable_reason(state_dir: Path | None = None) -> str | None:
    """Why the Apache Kafka broker cannot start here (no jars, no Java), or None if it can."""
    try:
        resolve_kafka_distribution(state_dir)
        resolve_java()
    except KafkaDistributionError as exc:
        return str(exc)
    return None


def resolve_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(Path(java_home) / "bin" / "java", os.X_OK):
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if not java:
        raise KafkaDistributionError("the Apache Kafka broker needs Java 17+: no `java` on PATH or JAVA_HOME")
    return java


def new_cluster_id() -> str:
    """A Kafka ``Uuid`` string (URL-safe base64 of 16 random bytes), as ``kafka-storage random-uuid``.

    Like Kafka's own ``Uuid.randomUuid()`` it never starts with ``-`` (the tool would take it for an option).
    """
    while True:
        value = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not value.startswith("-"):
            return value


def server_properties(host: str, port: int, controller_port: int, log_dirs: Path) -> dict[str, str]:
    """One KRaft node (broker + controller, static quorum of itself) tuned for local use."""
    return {
        "process.roles": "broker,controller",
        "node.id": "1",
        # A static voter set: the controller port may change between restarts of the same data dir.
        "controller.quorum.voters": f"1@{host}:{controller_port}",
        "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(log_dirs),
        "num.partitions": "1",
        "default.replication.factor": "1",
        "min.insync.replicas": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "4",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "4",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # Accept any record timestamp, as Kafka before 4.0 and Tansu do: Kafka 4 rejects records more than
        # an hour ahead of the broker's clock, and local runs replay event times far from it.
        "log.message.timestamp.after.max.ms": str(2**63 - 1),
        # No time-based deletion unless a topic asks for it (Tansu applies none either): a test or demo
        # topic holding old event times must not lose them at the broker's next retention check.
        "log.retention.ms": "-1",
        # Abort transactions of crashed producers soon after their timeout (default: checked every 10 s).
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        # Compacted topics get cleaned promptly once a segment rolls (default back-off 15 s).
        "log.cleaner.backoff.ms": "1000",
        "num.network.threads": "2",
        "num.io.threads": "4",
        "num.recovery.threads.per.data.dir": "1",
        "log.flush.offset.checkpoint.interval.ms": "5000",
    }


LOG4J2_PROPERTIES = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = STDOUT
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = info
"""


def _write_properties(path: Path, props: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


class ApacheKafkaBroker(BrokerProcess):
    """One Apache Kafka (KRaft) process on loopback; usable as a context manager.

    ``data_dir`` holds its configuration and logs; reuse it to restart with the same topics and data.
    Without one a temporary directory is used and removed on ``stop()``. ``detached=True`` puts the
    broker in its own session so it outlives the starting process (``streamhouse broker start``).
    """

    kind = "kafka"
    title = "the Apache Kafka broker"
    ready_poll_s = 0.1
    #: Kafka's controlled shutdown flushes and closes the logs; give it longer than Tansu.
    stop_timeout_s = 30.0
    failure_log_lines = 25
    port_in_use_marker = "address already in use"

    def __init__(
        self,
        *,
        port: int | None = None,
        host: str = LOOPBACK,
        data_dir: Path | None = None,
        log_dir: Path | None = None,
        state_dir: Path | None = None,
        startup_timeout_s: float = 120.0,
        detached: bool = False,
        heap: str = DEFAULT_HEAP,
        extra_properties: dict[str, str] | None = None,
    ) -> None:
        super().__init__(
            port=port, host=host, log_dir=log_dir, startup_timeout_s=startup_timeout_s, detached=detached
        )
        self.data_dir = data_dir
        self.state_dir = state_dir
        self.heap = heap
        self.extra_properties = dict(extra_properties or {})
        self._temp_data: Path | None = None
        #: The KRaft cluster id its storage is formatted with (None: a new random one); every node of a
        #: cluster shares one.
        self.cluster_id: str | None = None
        self._launched_at = 0.0
        #: Seconds the last ``start()`` took: storage format, then JVM launch to ready.
        self.format_seconds = 0.0
        self.ready_seconds = 0.0

    def start(self) -> BrokerInfo:
        if self._process is not None:
            return self.info
        log_path = self.launch()
        self._wait_ready(log_path)
        self.ready_seconds = time.monotonic() - self._launched_at
        return self.info

    def _ports(self) -> tuple[int, int]:
        """(client port, controller port): the requested or a free client port, a free controller port."""
        port = self._choose_port()
        controller_port = free_port(self.host)
        while controller_port == port:
            controller_port = free_port(self.host)
        return port, controller_port

    def _properties(self, port: int, controller_port: int, kafka_logs: Path) -> dict[str, str]:
        """The node's ``server.properties``; a cluster node (``edge/broker/cluster.py``) overrides it."""
        return server_properties(self.host, port, controller_port, kafka_logs)

    def launch(self) -> Path:
        """Format the storage if new and start the JVM without waiting for it; the log file's path.

        ``start()`` is ``launch()`` then the readiness wait. A multi-node cluster launches every node
        first and waits afterwards: a KRaft node answers nothing until a majority of its quorum is up.
        """
        dist = resolve_kafka_distribution(self.state_dir)
        java = resolve_java()
        port, controller_port = self._ports()
        if self.data_dir is None:
            self._temp_data = Path(tempfile.mkdtemp(prefix="streamhouse-kafka-"))
        data_dir = self.data_dir or self._temp_data
        assert data_dir is not None
        data_dir.mkdir(parents=True, exist_ok=True)
        log_dir = self.log_dir or data_dir
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / f"kafka-{port}.log"
        config = data_dir / "config" / "server.properties"
        log4j = data_dir / "config" / "log4j2.properties"
        kafka_logs = data_dir / "kafka-logs"
        props = self._properties(port, controller_port, kafka_logs)
        props.update(self.extra_properties)
        _write_properties(config, props)
        log4j.write_text(LOG4J2_PROPERTIES)
        base = [
            java,
            f"-Xmx{self.heap}",
            "-Xms64m",
            "-XX:+UseSerialGC",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            f"-Dkafka.logs.dir={data_dir / 'logs'}",
            "-cp",
            dist.classpath,
        ]
        started = time.monotonic()
        if not (kafka_logs / "meta.properties").exists():
            self._format(base, dist, config, log_path)
        self.format_seconds = time.monotonic() - started
        self._launched_at = time.monotonic()
        pid = self._launch([*base, "kafka.Kafka", str(config)], log_path)
        self._info = BrokerInfo(
            pid=pid,
            host=self.host,
            port=port,
            started_at=time.time(),
            log_path=str(log_path),
            binary=f"{java} -cp {dist.classpath} kafka.Kafka (Apache Kafka {dist.version})",
            kind=self.kind,
            data_dir=str(data_dir),
        )
        return log_path

    def _format(self, base: list[str], dist: KafkaDistribution, config: Path, log_path: Path) -> None:
        cluster_id = f"--cluster-id={self.cluster_id or new_cluster_id()}"
        cmd = [*base, dist.storage_tool_class(), "format", cluster_id, "-c", str(config)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired as exc:
            raise BrokerStartError("formatting the Apache Kafka storage took over 120 s") from exc
        with open(log_path, "a") as log:
            log.write(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
            raise BrokerStartError(
                f"formatting the Apache Kafka storage failed (exit {proc.returncode}):\n{tail}"
            )

    def _port_in_use_message(self, port: int) -> str:
        return (
            f"the Apache Kafka broker could not bind port {port} (or its controller "
            "port): it is in use; pick another port"
        )

    def _discard(self) -> None:
        """Remove the temporary data directory (a broker started without ``data_dir``)."""
        temp, self._temp_data = self._temp_data, None
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)

"""Start, stop and inspect the embedded Tansu broker on loopback.

The broker is a child process we own: it listens and advertises ``127.0.0.1:<port>`` (a free port unless
one is asked for), keeps data in memory only, and is considered ready once it accepts connections and
answers a metadata request. A broker started for the CLI is recorded in ``<state_dir>/broker/broker.json``
so ``streamhouse broker status|stop`` can find it from another process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from dataclasses import asdict
from pathlib import Path

from edge.broker.binary import resolve_tansu_binary
from edge.broker.cluster import KafkaCluster
from edge.broker.kafka import ApacheKafkaBroker
from edge.broker.process import (
    LOOPBACK,
    BrokerAlreadyRunningError,
    BrokerError,
    BrokerInfo,
    BrokerNotRunningError,
    BrokerPortInUseError,
    BrokerProcess,
    BrokerStartError,
    accepts_connections,
    free_port,
    pid_alive,
    port_is_free,
    terminate,
)

# Re-exported: the CLI, the broker selection and the tests import these names from here.
__all__ = [
    "LOOPBACK",
    "BrokerAlreadyRunningError",
    "BrokerError",
    "BrokerInfo",
    "BrokerNotRunningError",
    "BrokerPortInUseError",
    "BrokerStartError",
    "EmbeddedBroker",
    "broker_status",
    "ensure_recorded_broker",
    "free_port",
    "node_status",
    "port_is_free",
    "read_record",
    "start_recorded_broker",
    "stop_recorded_broker",
]

RECORD_FILE = "broker.json"


class EmbeddedBroker(BrokerProcess):
    """One Tansu broker process on loopback; usable as a context manager.

    ``detached=True`` puts the broker in its own session so it outlives the starting process (used by
    ``streamhouse broker start``); otherwise it is a plain child that dies with us.
    """

    kind = "tansu"
    title = "the embedded broker"

    def __init__(
        self,
        *,
        port: int | None = None,
        host: str = LOOPBACK,
        log_dir: Path | None = None,
        startup_timeout_s: float = 30.0,
        detached: bool = False,
    ) -> None:
        super().__init__(
            port=port, host=host, log_dir=log_dir, startup_timeout_s=startup_timeout_s, detached=detached
        )

    def start(self) -> BrokerInfo:
        if self._process is not None:
            return self.info
        binary = resolve_tansu_binary()
        port = self._choose_port()
        log_dir = self.log_dir or Path(os.environ.get("TMPDIR", "/tmp"))
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / f"tansu-{port}.log"
        url = f"tcp://{self.host}:{port}"
        cmd = [
            str(binary),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]
        env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")}
        pid = self._launch(cmd, log_path, env)
        self._info = BrokerInfo(
            pid=pid,
            host=self.host,
            port=port,
            started_at=time.time(),
            log_path=str(log_path),
            binary=str(binary),
        )
        self._wait_ready(log_path)
        return self._info


# --- the recorded broker used by the CLI -------------------------------------------------------------


def _record_path(state_dir: Path) -> Path:
    return state_dir / "broker" / RECORD_FILE


def read_record(state_dir: Path) -> BrokerInfo | None:
    path = _record_path(state_dir)
    try:
        data = json.loads(path.read_text())
        data["nodes"] = tuple(data.get("nodes") or ())
        return BrokerInfo(**data)
    except FileNotFoundError:
        return None
    except (ValueError, TypeError) as exc:
        raise BrokerError(f"the broker record {path} is unreadable ({exc}); delete it and retry") from exc


def broker_status(state_dir: Path) -> tuple[BrokerInfo | None, bool]:
    """The recorded broker and whether it is alive and accepting connections (a cluster: any node is,
    so a cluster with a node down is still the one to use, and to stop before starting another)."""
    info = read_record(state_dir)
    if info is None:
        return None, False
    return info, any(alive for _node, alive in node_status(info))


def node_status(info: BrokerInfo) -> list[tuple[dict[str, object], bool]]:
    """Each node of the recorded broker (the one of a single broker) and whether it is up."""
    nodes = info.nodes or ({"node_id": 1, "pid": info.pid, "port": info.port, "log_path": info.log_path},)
    return [
        (node, pid_alive(int(str(node["pid"]))) and accepts_connections(info.host, int(str(node["port"]))))
        for node in nodes
    ]


def start_recorded_broker(
    state_dir: Path, port: int | None = None, kind: str = "tansu", brokers: int = 1
) -> BrokerInfo:
    """Start a detached broker of ``kind`` and record it. Apache Kafka keeps its data (and, when free,
    its last port) under ``<state_dir>/broker/kafka-data`` across stop/start; a cluster of ``brokers``
    Apache Kafka nodes keeps its under ``<state_dir>/broker/kafka-cluster-<brokers>``."""
    if brokers != 1 and kind != "kafka":
        raise BrokerError(f"--brokers {brokers} needs Apache Kafka (--kind kafka); Tansu runs one node")
    info, alive = broker_status(state_dir)
    if info is not None and alive:
        raise BrokerAlreadyRunningError(info)
    broker_dir = state_dir / "broker"
    if kind == "kafka" and brokers != 1:
        cluster = KafkaCluster(
            brokers,
            first_port=port,
            data_dir=broker_dir / f"kafka-cluster-{brokers}",
            detached=True,
            state_dir=state_dir,
        )
        infos = cluster.start()
        nodes = tuple(
            {
                "node_id": node.node_id,
                "pid": node_info.pid,
                "port": node_info.port,
                "log_path": node_info.log_path,
                "data_dir": node_info.data_dir,
            }
            for node, node_info in zip(cluster.nodes, infos, strict=True)
        )
        first = infos[0]
        info = BrokerInfo(
            pid=first.pid,
            host=first.host,
            port=first.port,
            started_at=first.started_at,
            log_path=first.log_path,
            binary=first.binary,
            kind="kafka",
            data_dir=str(cluster.data_dir),
            nodes=nodes,
        )
    elif kind == "kafka":
        data_dir = broker_dir / "kafka-data"
        last_port = data_dir / "last-port"
        if port is None and last_port.is_file():
            with contextlib.suppress(ValueError):
                previous = int(last_port.read_text().strip())
                port = previous if port_is_free(LOOPBACK, previous) else None
        info = ApacheKafkaBroker(
            port=port, data_dir=data_dir, log_dir=broker_dir, state_dir=state_dir, detached=True
        ).start()
        last_port.write_text(str(info.port))
    elif kind == "tansu":
        info = EmbeddedBroker(port=port, log_dir=broker_dir, detached=True).start()
    else:
        raise BrokerError(f"unknown broker kind {kind!r}; expected tansu or kafka")
    path = _record_path(state_dir)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(info), indent=2))
    tmp.replace(path)
    return info


def ensure_recorded_broker(state_dir: Path, kind: str = "tansu") -> tuple[BrokerInfo, bool]:
    """Reuse the recorded broker if it is alive (and of ``kind``), else start one; (info, started_now)."""
    info, alive = broker_status(state_dir)
    if info is not None and alive:
        if info.kind != kind:
            raise BrokerError(
                f"the recorded broker at {info.bootstrap_servers} is {info.kind}, not {kind}; stop it "
                f"(`streamhouse broker stop`) or set STREAMHOUSE_BROKER_KIND={info.kind}"
            )
        return info, False
    return start_recorded_broker(state_dir, kind=kind), True


def stop_recorded_broker(state_dir: Path, timeout_s: float | None = None) -> BrokerInfo:
    info = read_record(state_dir)
    if info is None:
        raise BrokerNotRunningError(f"no local broker is recorded under {state_dir}; nothing to stop")
    # Apache Kafka shuts down in a controlled way (it flushes its logs); give it longer. A cluster's
    # nodes all get SIGTERM first, so none waits for another to take over its partitions.
    default = ApacheKafkaBroker if info.kind == "kafka" else EmbeddedBroker
    live = [pid for pid in info.pids if pid_alive(pid)]
    for pid in live:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    for pid in live:
        terminate(pid, timeout_s if timeout_s is not None else default.stop_timeout_s)
    _record_path(state_dir).unlink(missing_ok=True)
    return info

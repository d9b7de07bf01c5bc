"""A local multi-node Apache Kafka cluster on loopback: N KRaft nodes, each broker and controller.

Replication only means something with several brokers: a changelog with replication factor 3 and
``min.insync.replicas=2`` keeps taking writes while one broker is down, and a leader's crash moves its
partitions to a follower instead of stopping them. :class:`KafkaCluster` runs that locally from the same
jars as the single broker (``edge/broker/kafka.py``): N JVMs, each with its own client port, controller
port and data directory, all formatted with one cluster id and voting in one static quorum
(``controller.quorum.voters``), so any minority of nodes can be stopped or killed and the rest go on.

Combined nodes rather than a dedicated controller plus N brokers: one JVM (≈300 MB) fewer, and no
single process whose loss stops the cluster. Every node is started before any is waited for, since a
KRaft node answers nothing until a majority of the quorum is up. Each node keeps its ports across
``restart_node`` (the quorum's voter list names them), which is what a bounce test needs.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

from edge.broker.kafka import DEFAULT_HEAP, ApacheKafkaBroker, new_cluster_id, server_properties
from edge.broker.process import (
    LOOPBACK,
    BrokerError,
    BrokerInfo,
    BrokerPortInUseError,
    BrokerStartError,
    answers_metadata,
    free_port,
    port_is_free,
    terminate,
)

#: At most this many nodes (a local cluster is for replication and failover trials, not capacity).
MAX_BROKERS = 9


def cluster_min_insync_replicas(brokers: int) -> int:
    """2 from three nodes on (one node may be down and acks=all writes still succeed); else 1."""
    return 2 if brokers >= 3 else 1


def cluster_properties(
    host: str,
    node_id: int,
    port: int,
    controller_port: int,
    voters: str,
    log_dirs: Path,
    brokers: int,
) -> dict[str, str]:
    """One combined node of an N-node cluster: the single node's local tuning with N-way replication.

    Every topic the cluster creates by default, and the offsets and transaction logs, get replication
    factor N and ``min.insync.replicas`` 2 (from 3 nodes). A dead broker is fenced after 6 s without a
    heartbeat (Kafka: 9 s) so its partitions' leadership moves within seconds on this loopback cluster.
    """
    rf = str(brokers)
    min_isr = str(cluster_min_insync_replicas(brokers))
    props = server_properties(host, port, controller_port, log_dirs)
    props.update(
        {
            "node.id": str(node_id),
            "controller.quorum.voters": voters,
            "default.replication.factor": rf,
            "min.insync.replicas": min_isr,
            "offsets.topic.replication.factor": rf,
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": min_isr,
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": min_isr,
            "broker.heartbeat.interval.ms": "1000",
            "broker.session.timeout.ms": "6000",
        }
    )
    return props


class KafkaClusterNode(ApacheKafkaBroker):
    """One node of a :class:`KafkaCluster`: fixed node id, ports and voter list, the shared cluster id."""

    title = "an Apache Kafka cluster node"

    def __init__(
        self,
        *,
        node_id: int,
        port: int,
        controller_port: int,
        voters: str,
        brokers: int,
        cluster_id: str,
        host: str,
        data_dir: Path,
        log_dir: Path,
        state_dir: Path | None,
        startup_timeout_s: float,
        detached: bool,
        heap: str,
        extra_properties: dict[str, str] | None,
    ) -> None:
        super().__init__(
            port=port,
            host=host,
            data_dir=data_dir,
            log_dir=log_dir,
            state_dir=state_dir,
            startup_timeout_s=startup_timeout_s,
            detached=detached,
            heap=heap,
            extra_properties=extra_properties,
        )
        self.node_id = node_id
        self.controller_port = controller_port
        self.voters = voters
        self.brokers = brokers
        self.cluster_id = cluster_id
        self.title = f"Apache Kafka cluster node {node_id}"

    def _ports(self) -> tuple[int, int]:
        assert self.requested_port is not None
        for port in (self.requested_port, self.controller_port):
            if not port_is_free(self.host, port):
                raise BrokerPortInUseError(
                    f"port {port} on {self.host} (node {self.node_id}) is already in use; pick another "
                    "first port with --port N or omit --port to use free ones"
                )
        return self.requested_port, self.controller_port

    def _properties(self, port: int, controller_port: int, kafka_logs: Path) -> dict[str, str]:
        return cluster_properties(
            self.host, self.node_id, port, controller_port, self.voters, kafka_logs, self.brokers
        )

    def wait_ready(self) -> None:
        """Block until this launched node answers metadata; stop it and raise why it did not."""
        self._wait_ready(Path(self.info.log_path))

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None


@dataclass(frozen=True)
class ClusterLayout:
    """Where a cluster lives and which ports its nodes use (kept in ``cluster.json`` for restarts)."""

    cluster_id: str
    ports: tuple[int, ...]
    controller_ports: tuple[int, ...]


def _free_ports(host: str, count: int, taken: set[int]) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        port = free_port(host)
        if port not in taken and port not in ports:
            ports.append(port)
    return ports


class KafkaCluster:
    """N Apache Kafka KRaft nodes on loopback sharing one cluster id; usable as a context manager.

    ``data_dir`` holds ``node-<id>/`` per node (its configuration, log segments and log) and
    ``cluster.json`` (the cluster id and ports); start it again on the same directory to get the same
    topics back. Without one, a temporary directory is used and removed on ``stop()``. ``first_port``
    gives the nodes consecutive client ports from it; else each gets a free one (the ports of a previous
    run on the same directory when they are free).
    """

    def __init__(
        self,
        brokers: int = 3,
        *,
        host: str = LOOPBACK,
        first_port: int | None = None,
        data_dir: Path | None = None,
        state_dir: Path | None = None,
        startup_timeout_s: float = 180.0,
        detached: bool = False,
        heap: str = DEFAULT_HEAP,
        extra_properties: dict[str, str] | None = None,
    ) -> None:
        if isinstance(brokers, bool) or not isinstance(brokers, int) or not 1 <= brokers <= MAX_BROKERS:
            raise BrokerError(f"a local cluster has 1 to {MAX_BROKERS} brokers, got {brokers!r}")
        if first_port is not None and not 1 <= first_port <= 65535 - brokers + 1:
            raise BrokerStartError(
                f"first port {first_port} leaves no room for {brokers} consecutive ports (1-65535)"
            )
        self.brokers = brokers
        self.host = host
        self.first_port = first_port
        self.data_dir = data_dir
        self.state_dir = state_dir
        self.startup_timeout_s = startup_timeout_s
        self.detached = detached
        self.heap = heap
        self.extra_properties = dict(extra_properties or {})
        self.nodes: list[KafkaClusterNode] = []
        self._temp_data: Path | None = None
        #: Seconds the last ``start()`` took from the first launch until every broker was registered.
        self.start_seconds = 0.0

    # --- layout -----------------------------------------------------------------------------------

    def _layout(self, root: Path) -> ClusterLayout:
        """The cluster id and ports: a previous run's on this directory (ports when still free)."""
        record = root / "cluster.json"
        previous: ClusterLayout | None = None
        if record.is_file():
            try:
                raw = json.loads(record.read_text())
                previous = ClusterLayout(
                    raw["cluster_id"], tuple(raw["ports"]), tuple(raw["controller_ports"])
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise BrokerStartError(
                    f"{record} is unreadable ({exc}); delete {root} to start over"
                ) from exc
            if len(previous.ports) != self.brokers:
                raise BrokerStartError(
                    f"{root} holds a {len(previous.ports)}-node cluster, not {self.brokers}; start it with "
                    f"--brokers {len(previous.ports)} or delete {root} to start over"
                )
        cluster_id = previous.cluster_id if previous else new_cluster_id()
        if self.first_port is not None:
            ports = [self.first_port + i for i in range(self.brokers)]
            for port in ports:
                if not port_is_free(self.host, port):
                    raise BrokerPortInUseError(
                        f"port {port} on {self.host} is already in use; the {self.brokers} nodes need "
                        f"ports {ports[0]}-{ports[-1]}: pick another first port with --port N"
                    )
        elif previous and all(port_is_free(self.host, p) for p in previous.ports):
            ports = list(previous.ports)
        else:
            ports = _free_ports(self.host, self.brokers, set())
        if (
            previous
            and all(port_is_free(self.host, p) for p in previous.controller_ports)
            and not set(previous.controller_ports) & set(ports)
        ):
            controller_ports = list(previous.controller_ports)
        else:
            controller_ports = _free_ports(self.host, self.brokers, set(ports))
        layout = ClusterLayout(cluster_id, tuple(ports), tuple(controller_ports))
        root.mkdir(parents=True, exist_ok=True)
        record.write_text(
            json.dumps(
                {"cluster_id": cluster_id, "ports": ports, "controller_ports": controller_ports}, indent=2
            )
        )
        return layout

    # --- lifecycle --------------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{self.host}:{node.requested_port}" for node in self.nodes)

    @property
    def infos(self) -> list[BrokerInfo]:
        return [node.info for node in self.nodes]

    def node(self, node_id: int) -> KafkaClusterNode:
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        raise BrokerError(f"no node {node_id} in this cluster (nodes 1-{self.brokers})")

    def start(self) -> list[BrokerInfo]:
        """Launch every node, then wait until each answers and the cluster lists all N brokers."""
        if self.nodes and all(node.running for node in self.nodes):
            return self.infos
        if self.data_dir is None and self._temp_data is None:
            self._temp_data = Path(tempfile.mkdtemp(prefix="streamhouse-kafka-cluster-"))
        root = self.data_dir or self._temp_data
        assert root is not None
        layout = self._layout(root)
        voters = ",".join(f"{i + 1}@{self.host}:{cport}" for i, cport in enumerate(layout.controller_ports))
        self.nodes = [
            KafkaClusterNode(
                node_id=i + 1,
                port=layout.ports[i],
                controller_port=layout.controller_ports[i],
                voters=voters,
                brokers=self.brokers,
                cluster_id=layout.cluster_id,
                host=self.host,
                data_dir=root / f"node-{i + 1}",
                log_dir=root,
                state_dir=self.state_dir,
                startup_timeout_s=self.startup_timeout_s,
                detached=self.detached,
                heap=self.heap,
                extra_properties=self.extra_properties,
            )
            for i in range(self.brokers)
        ]
        started = time.monotonic()
        try:
            # Launched side by side: each first formats its storage with a JVM of its own (5-10 s on a
            # busy machine), which one after another added up to most of a cold start.
            with ThreadPoolExecutor(max_workers=self.brokers, thread_name_prefix="kafka-node") as pool:
                list(pool.map(lambda node: node.launch(), self.nodes))
            for node in self.nodes:
                node.wait_ready()
            self._wait_registered(started + self.startup_timeout_s)
        except BaseException:
            self._stop_nodes(None)
            raise
        self.start_seconds = time.monotonic() - started
        return self.infos

    def _wait_registered(self, deadline: float) -> None:
        """Until the metadata lists every node as a broker: before that, RF N topics cannot be created."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
        while True:
            try:
                brokers = admin.list_topics(timeout=5).brokers
            except Exception:
                brokers = {}
            if len(brokers) >= self.brokers:
                return
            if time.monotonic() > deadline:
                raise BrokerStartError(
                    f"only {len(brokers)} of {self.brokers} brokers registered within "
                    f"{self.startup_timeout_s:.0f}s; see the node logs under {self.nodes[0].log_dir}"
                )
            time.sleep(0.2)

    def stop_node(self, node_id: int, timeout_s: float | None = None) -> None:
        """Stop one node in a controlled way (its partitions' leadership moves first); data kept."""
        self.node(node_id).stop(timeout_s)

    def kill_node(self, node_id: int) -> None:
        """SIGKILL one node, as a crash would; ``restart_node`` brings it back on the same ports."""
        self.node(node_id).kill()

    def restart_node(self, node_id: int) -> BrokerInfo:
        """Start a stopped or killed node again on its ports and data; return once it answers."""
        node = self.node(node_id)
        if node.running:
            return node.info
        node.launch()
        node.wait_ready()
        return node.info

    def _stop_nodes(self, timeout_s: float | None) -> None:
        # SIGTERM all at once: stopping them one by one would make each move its leaderships to the
        # next one about to stop.
        processes = [(node, node._process) for node in self.nodes]
        for node, process in processes:
            node._process = None
            if process is not None and process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGTERM)
        for _node, process in processes:
            if process is not None:
                terminate(
                    process.pid,
                    ApacheKafkaBroker.stop_timeout_s if timeout_s is None else timeout_s,
                    process,
                )

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop every node (SIGTERM, SIGKILL after ``timeout_s``); remove a temporary data directory."""
        self._stop_nodes(timeout_s)
        temp, self._temp_data = self._temp_data, None
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)

    def answers(self, timeout_s: float = 2.0) -> bool:
        return answers_metadata(self.bootstrap_servers, timeout_s)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

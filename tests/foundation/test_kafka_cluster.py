"""A local 3-node Apache Kafka cluster (``edge/broker/cluster.py``, ``streamhouse broker start --brokers 3``).

What replication buys, proven end to end: topics and an edge app's internal topics get replication
factor 3 without asking (``replication.factor=-1``, the broker default, as Kafka Streams since 3.0), and
with one broker stopped the app still consumes, counts and produces (``min.insync.replicas=2``). The CLI
test checks that ``status`` lists every node and ``stop`` stops them all. Each slow test starts its own
cluster (about 30-60 s on the loaded 2-core machine: three JVMs and three storage formats).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka.admin import AdminClient, ConfigResource

from edge.broker import kafka_unavailable_reason
from edge.broker.cluster import KafkaCluster
from edge.broker.process import BrokerError, pid_alive
from edge.kafka import BrokerProfile, KafkaClientConfig, TopicSpec, create_topics
from edge.runtime.config import StreamsConfig, StreamsConfigError
from orchestration.cli.main import cli
from tests.edge.runtime.harness import Instance, OutputReader, expected_counts, keyed, produce

ROOT = Path(__file__).resolve().parents[2]
UNAVAILABLE = kafka_unavailable_reason()
needs_kafka = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"Apache Kafka unavailable: {UNAVAILABLE}")


def _replicas(admin: AdminClient, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    meta = admin.list_topics(timeout=10).topics[topic]
    return {p: (m.leader, list(m.replicas), list(m.isrs)) for p, m in meta.partitions.items()}


def _topic_config(admin: AdminClient, topic: str, key: str) -> str:
    (future,) = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)]).values()
    return str(future.result(timeout=30)[key].value)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[KafkaCluster]:
    if UNAVAILABLE is not None:
        pytest.skip(f"Apache Kafka unavailable: {UNAVAILABLE}")
    c = KafkaCluster(3, data_dir=tmp_path / "cluster")
    c.start()
    try:
        yield c
    finally:
        c.stop()


def test_replication_factor_defaults_to_the_broker_default() -> None:
    base = {"application.id": "rf", "bootstrap.servers": "127.0.0.1:9092"}
    assert StreamsConfig.from_mapping(base).replication_factor == -1
    assert StreamsConfig.from_mapping({**base, "replication.factor": "3"}).replication_factor == 3
    for bad in ("0", "-2"):
        with pytest.raises(StreamsConfigError, match=r"replication.factor must be an integer >= 1 or -1"):
            StreamsConfig.from_mapping({**base, "replication.factor": bad})


def test_a_cluster_has_one_to_nine_brokers() -> None:
    for bad in (0, -1, 10):
        with pytest.raises(BrokerError, match="1 to 9 brokers"):
            KafkaCluster(bad)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--brokers", "0"], "0 is not in the range 1<=x<=9"),
        (["--brokers", "3", "--kind", "tansu"], "--brokers 3 needs Apache Kafka"),
    ],
)
def test_broker_start_refuses_a_bad_cluster(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["broker", "start", *args], env={"STREAMHOUSE_STATE_DIR": str(tmp_path)})
    assert result.exit_code == 2, result.output
    assert message in result.output


@needs_kafka
@pytest.mark.slow
@pytest.mark.broker
@pytest.mark.timeout(420)
def test_replication_factor_3_by_default_and_one_broker_down(
    cluster: KafkaCluster, tmp_path: Path, unique_name: Callable[[str], str]
) -> None:
    client = KafkaClientConfig(cluster.bootstrap_servers, BrokerProfile.REAL)
    admin = AdminClient(client.admin())
    src, out = unique_name("in"), unique_name("out")
    # RF 3 asked for, and RF -1 (the broker's default.replication.factor, 3 on this cluster)
    create_topics(client, [TopicSpec(src, 2, 3), TopicSpec(out, 2, -1)])
    for topic in (src, out):
        assert all(len(r) == 3 for _l, r, _i in _replicas(admin, topic).values()), _replicas(admin, topic)
    assert _topic_config(admin, src, "min.insync.replicas") == "2"

    app_id = unique_name("app")
    inst = Instance(
        client,
        app_id=app_id,
        state_dir=tmp_path / "state",
        in_topic=src,
        out_topic=out,
        config={"commit.interval.ms": 500},  # no replication.factor: the default (-1) applies
        log_dir=tmp_path,
    )
    reader = OutputReader(client, out, unique_name("reader"))
    try:
        inst.wait_running(180)
        before, after = keyed(2000, 20), keyed(2000, 20, 2000)
        produce(client, src, before)
        reader.wait_for(lambda r: r.latest() == expected_counts(before), 120, "counts before")
        internal = [t for t in admin.list_topics(timeout=10).topics if t.startswith(f"{app_id}-")]
        changelogs = [t for t in internal if t.endswith("-changelog")]
        assert changelogs, internal
        for topic in internal:
            assert all(len(r) == 3 for _l, r, _i in _replicas(admin, topic).values()), topic

        # stop the broker leading the input's partition 0; two replicas remain, min ISR 2 holds
        leader = _replicas(admin, src)[0][0]
        cluster.stop_node(leader)
        produce(client, src, after)  # acks=all: needs 2 in-sync replicas
        truth = expected_counts(before, after)
        reader.wait_for(lambda r: r.latest() == truth, 180, f"counts with node {leader} stopped")
        assert inst.proc.poll() is None, inst.log_tail()
        assert all(leader not in isr for _l, _r, isr in _replicas(admin, src).values())

        cluster.restart_node(leader)
        deadline = time.monotonic() + 120
        while not all(len(isr) == 3 for _l, _r, isr in _replicas(admin, src).values()):
            assert time.monotonic() < deadline, _replicas(admin, src)
            time.sleep(0.5)
    finally:
        reader.close()
        inst.stop()


def _topics_cli(cluster: KafkaCluster, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "STREAMHOUSE_STATE_DIR": str(tmp_path / "cli-state"),
        "STREAMHOUSE_BOOTSTRAP_SERVERS": cluster.bootstrap_servers,
        "STREAMHOUSE_BROKER_PROFILE": "real",
        "PYTHONPATH": str(ROOT),
    }
    env.pop("STREAMHOUSE_BROKER_KIND", None)
    return subprocess.run(
        [sys.executable, "-m", "orchestration.cli.main", "topics", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _wait_health(inst: Instance, what: str, predicate: Callable[[dict], bool], timeout_s: float) -> dict:
    """Poll the instance's /health until ``predicate`` holds (the instance must stay alive meanwhile)."""
    deadline = time.monotonic() + timeout_s
    last: dict | None = None
    while True:
        assert inst.proc.poll() is None, f"instance exited while waiting for {what}:\n{inst.log_tail()}"
        last = inst.health()
        if last is not None and predicate(last):
            return last
        assert time.monotonic() < deadline, f"/health never showed {what}: {last}\n{inst.log_tail()}"
        time.sleep(0.2)


@needs_kafka
@pytest.mark.slow
@pytest.mark.broker
@pytest.mark.timeout(420)
def test_topics_create_replicates_and_health_names_partitions_without_a_leader(
    cluster: KafkaCluster, tmp_path: Path, unique_name: Callable[[str], str]
) -> None:
    """Issue 46 item 2. `streamhouse topics create` without a replication factor gets the cluster's
    (3: the broker's default.replication.factor); `--replication-factor 1` makes topics that lose
    partitions with a node. An app on those, with that node stopped, stays RUNNING but its /health says
    DEGRADED: which partitions have no leader and that sends to them are failing, then OK once the node
    is back (and the counts are exact)."""
    from edge.processor.partitioner import default_partition

    client = KafkaClientConfig(cluster.bootstrap_servers, BrokerProfile.REAL)
    admin = AdminClient(client.admin())
    durable, src, out = unique_name("durable"), unique_name("in"), unique_name("out")
    created = _topics_cli(cluster, tmp_path, "create", durable, "-p", "3")
    assert created.returncode == 0, created.stderr
    assert created.stdout == f"{durable}: created (3 partitions, replication factor 3)\n"
    assert all(len(r) == 3 for _l, r, _i in _replicas(admin, durable).values()), _replicas(admin, durable)
    # 3 input partitions, one per node; 2 output partitions, so keys of a live input partition also
    # count into an output partition whose node is down
    fragile = _topics_cli(cluster, tmp_path, "create", src, "-p", "3", "--replication-factor", "1")
    assert fragile.stdout == f"{src}: created (3 partitions, replication factor 1)\n", fragile.stderr
    fragile = _topics_cli(cluster, tmp_path, "create", out, "-p", "2", "-r", "1")
    assert fragile.stdout == f"{out}: created (2 partitions, replication factor 1)\n", fragile.stderr

    inst = Instance(
        client,
        app_id=unique_name("app"),
        state_dir=tmp_path / "state",
        in_topic=src,
        out_topic=out,
        # no commit while the node is down: what is tested is /health saying so, not the commit's
        # deadline (60 s of undelivered records, then the instance stops)
        config={"commit.interval.ms": 600_000},
        log_dir=tmp_path,
    )
    reader = OutputReader(client, out, unique_name("reader"))
    try:
        inst.wait_running(180)
        healthy = inst.health()
        assert healthy is not None and healthy["status"] == "OK" and healthy["reasons"] == [], healthy
        before = keyed(300, 30)
        produce(client, src, before)
        reader.wait_for(lambda r: r.latest() == expected_counts(before), 120, "counts before")

        # stop the node leading out[0]: with three partitions on three nodes it leads one of src too
        victim = _replicas(admin, out)[0][0]
        src_leaders = {p: leader for p, (leader, _r, _i) in _replicas(admin, src).items()}
        cluster.stop_node(victim)
        lost_src = [p for p, leader in src_leaders.items() if leader == victim]
        assert len(lost_src) == 1, src_leaders
        # more records for the keys of the input partitions still led (partitioned as the producer
        # does); the counts of those whose output partition is out[0] wait for its leader
        live_keys = [f"k{i}" for i in range(30) if default_partition(f"k{i}".encode(), 3) != lost_src[0]]
        assert any(default_partition(k.encode(), 2) == 0 for k in live_keys), live_keys
        after = [(live_keys[i % len(live_keys)], i) for i in range(300, 600)]
        produce(client, src, after)

        degraded = _wait_health(
            inst,
            "DEGRADED with out[0] without a leader and sends failing",
            lambda h: (
                h["status"] == "DEGRADED"
                and any(f"{out}[0]" in r and "without a leader" in r for r in h["reasons"])
                and any(r.startswith("sends failing") and out in r for r in h["reasons"])
            ),
            120,
        )
        assert any(f"{src}{lost_src}" in r for r in degraded["reasons"]), degraded

        cluster.restart_node(victim)
        _wait_health(inst, "OK again", lambda h: h["status"] == "OK" and h["reasons"] == [], 180)
        reader.wait_for(lambda r: r.latest() == expected_counts(before, after), 180, "counts after")
        assert inst.health()["state"] == "RUNNING"
    finally:
        reader.close()
        inst.stop()


@needs_kafka
@pytest.mark.slow
@pytest.mark.broker
@pytest.mark.timeout(420)
def test_cli_starts_lists_and_stops_every_node(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "STREAMHOUSE_STATE_DIR": str(tmp_path / "state"),
        "PYTHONPATH": str(ROOT),
    }
    for key in ("STREAMHOUSE_BOOTSTRAP_SERVERS", "STREAMHOUSE_BROKER_KIND"):
        env.pop(key, None)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "orchestration.cli.main", "broker", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    started = run("start", "--brokers", "3")
    pids = [int(p) for p in re.findall(r"\(pid (\d+)\)", started.stdout)]
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert "cluster of 3 nodes" in started.stdout and len(pids) == 3, started.stdout
        assert "replication factor 3, min.insync.replicas 2" in started.stdout
        status = run("status")
        assert status.returncode == 0, status.stdout
        assert "3 of 3 nodes up" in status.stdout
        assert len(re.findall(r"node \d: 127\.0\.0\.1:\d+ up", status.stdout)) == 3, status.stdout
        single = run("start")  # a single broker asked for while the cluster runs: refused, says which runs
        assert single.returncode == 2, single.stdout + single.stderr
        assert "an Apache Kafka cluster of 3 nodes is already running" in single.stderr, single.stderr
        assert "not a single Apache Kafka broker as asked" in single.stderr
        assert "`streamhouse broker stop`" in single.stderr and "Traceback" not in single.stderr

        os.kill(pids[2], signal.SIGKILL)  # one node gone: degraded, still exit 0
        deadline = time.monotonic() + 10
        while pid_alive(pids[2]) and time.monotonic() < deadline:
            time.sleep(0.1)
        status = run("status")
        assert status.returncode == 0 and "degraded" in status.stdout and "DOWN" in status.stdout

        stopped = run("stop")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        assert "stopped the Apache Kafka cluster of 3 nodes" in stopped.stdout
        assert not any(pid_alive(p) for p in pids)
        assert run("status").returncode == 1
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

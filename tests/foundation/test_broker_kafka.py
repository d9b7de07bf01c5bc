"""The Apache Kafka broker's lifecycle (``broker_kind: kafka``), against the jars `make install` resolved.

Each test that runs a broker starts its own (they check restarts and the CLI); everything else here
needs no JVM. Where Maven could not resolve the jars, the broker tests skip with the recorded reason.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient

from edge.broker import (
    ApacheKafkaBroker,
    BrokerKind,
    BrokerPortInUseError,
    KafkaDistributionError,
    kafka_unavailable_reason,
    local_broker,
    profile_for,
    resolve_kafka_distribution,
)
from edge.broker.embedded import EmbeddedBroker, broker_status
from edge.kafka import BrokerProfile, KafkaClientConfig, TopicSpec, create_topics
from orchestration.settings import SettingsError, load_settings

ROOT = Path(__file__).resolve().parents[2]
UNAVAILABLE = kafka_unavailable_reason()
needs_kafka = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"Apache Kafka unavailable: {UNAVAILABLE}")


def _produce(client: KafkaClientConfig, topic: str, values: list[str]) -> None:
    producer = Producer(client.producer())
    for i, v in enumerate(values):
        producer.produce(topic, key=f"k{i % 7}".encode(), value=v.encode())
    assert producer.flush(30) == 0


def _consume_to_eof(client: KafkaClientConfig, topic: str, partitions: int, group: str) -> list[str]:
    consumer = Consumer(
        client.consumer(group, **{"auto.offset.reset": "earliest", "enable.partition.eof": True})
    )
    consumer.subscribe([topic])
    values: list[str] = []
    at_eof: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while len(at_eof) < partitions and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                at_eof.add(msg.partition())
                continue
            values.append(msg.value().decode())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert len(at_eof) == partitions, "did not reach the end of every partition in time"
    return values


@needs_kafka
@pytest.mark.broker
@pytest.mark.timeout(240)
def test_start_produce_consume_in_a_group_restart_with_data_kept_stop(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = ApacheKafkaBroker(data_dir=data, log_dir=tmp_path)
    info = broker.start()
    try:
        assert info.kind == "kafka" and info.data_dir == str(data)
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(BrokerKind.KAFKA))
        assert client.profile is BrokerProfile.REAL
        create_topics(client, [TopicSpec("orders", 3)])
        first = [f"v{i}" for i in range(300)]
        _produce(client, "orders", first)
        assert sorted(_consume_to_eof(client, "orders", 3, "g1")) == sorted(first)
    finally:
        broker.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(info.pid, 0)

    # same data dir: the topic, its records and the group's committed offsets survive the restart
    again = ApacheKafkaBroker(data_dir=data, log_dir=tmp_path)
    again.start()
    try:
        client = KafkaClientConfig(again.bootstrap_servers, BrokerProfile.REAL)
        topics = AdminClient(client.admin()).list_topics(timeout=10).topics
        assert len(topics["orders"].partitions) == 3
        second = [f"w{i}" for i in range(30)]
        _produce(client, "orders", second)
        assert sorted(_consume_to_eof(client, "orders", 3, "g1")) == sorted(second)  # resumes
        assert len(_consume_to_eof(client, "orders", 3, "g2")) == 330  # a new group sees everything
    finally:
        again.stop()
    assert not again._process


def test_local_broker_factory_follows_the_kind(monkeypatch) -> None:
    assert isinstance(local_broker(BrokerKind.KAFKA), ApacheKafkaBroker)
    assert isinstance(local_broker(BrokerKind.TANSU), EmbeddedBroker)
    monkeypatch.setenv("STREAMHOUSE_BROKER_KIND", "kafka")
    assert isinstance(local_broker(), ApacheKafkaBroker)
    monkeypatch.delenv("STREAMHOUSE_BROKER_KIND")
    assert isinstance(local_broker(), EmbeddedBroker)


def _cli(
    state: Path, *args: str, kind: str | None = None, stdin: str | None = None, dist: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(state.parent),
        "STREAMHOUSE_STATE_DIR": str(state),
        # the jars make install resolved (this test's state dir has none), or a directory without them
        "STREAMHOUSE_KAFKA_DIST": str(dist or resolve_kafka_distribution().home),
    }
    if os.environ.get("JAVA_HOME"):
        env["JAVA_HOME"] = os.environ["JAVA_HOME"]
    if kind:
        env["STREAMHOUSE_BROKER_KIND"] = kind
    return subprocess.run(
        [sys.executable, "-m", "orchestration.cli.main", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=180,
    )


@needs_kafka
@pytest.mark.broker
@pytest.mark.timeout(300)
def test_cli_default_broker_is_kafka_and_stop_start_keeps_topics_and_records(tmp_path: Path) -> None:
    """`streamhouse broker stop` then `start` (what the README's walkthrough does between two demos)
    must find the topics and their records again: the default broker keeps them under the state dir."""
    state = tmp_path / "state"
    started = _cli(state, "broker", "start")
    assert started.returncode == 0, started.stderr
    assert "Apache Kafka broker running at 127.0.0.1:" in started.stdout
    assert "warning" not in started.stderr, started.stderr
    try:
        info, alive = broker_status(state)
        assert alive and info is not None and info.kind == "kafka"
        assert info.data_dir == str(state / "broker" / "kafka-data")
        status = _cli(state, "broker", "status")
        assert status.returncode == 0 and f"running at {info.bootstrap_servers} (kafka" in status.stdout
        again = _cli(state, "broker", "start", "--kind", "kafka")
        assert again.returncode == 0 and "already running" in again.stdout
        created = _cli(state, "topics", "create", "kept", "-p", "2")
        assert created.returncode == 0, created.stderr
        produced = _cli(state, "topics", "produce", "kept", "--key-separator", ":", stdin="a:1\nb:2\nc:3\n")
        assert produced.returncode == 0, produced.stderr
        # a tansu-kind client must not silently talk to the recorded Kafka with Tansu's settings
        mismatch = _cli(state, "topics", "list", kind="tansu")
        assert mismatch.returncode == 2 and "STREAMHOUSE_BROKER_KIND=kafka" in mismatch.stderr
    finally:
        stopped = _cli(state, "broker", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped the Apache Kafka broker" in stopped.stdout and "data stays" in stopped.stdout
    assert _cli(state, "broker", "status").returncode == 1

    # the data dir (and, being free, the port) are reused: the topic and its records are back
    restarted = _cli(state, "broker", "start")
    assert restarted.returncode == 0, restarted.stderr
    try:
        info2, alive = broker_status(state)
        assert alive and info2 is not None and info2.kind == "kafka" and info2.port == info.port
        listed = _cli(state, "topics", "list")
        assert listed.returncode == 0 and "kept\t2" in listed.stdout, listed.stdout + listed.stderr
        tailed = _cli(state, "topics", "tail", "kept", "--timeout", "5")
        assert sorted(tailed.stdout.splitlines()) == ["a\t1", "b\t2", "c\t3"], tailed.stderr
    finally:
        assert _cli(state, "broker", "stop").returncode == 0


def test_cli_without_kafka_falls_back_to_tansu_and_says_topics_live_in_memory(tmp_path: Path) -> None:
    state = tmp_path / "state"
    started = _cli(state, "broker", "start", dist=tmp_path / "no-kafka")
    assert started.returncode == 0, started.stderr
    try:
        assert "embedded broker running at 127.0.0.1:" in started.stdout
        [warning] = started.stderr.splitlines()
        assert warning.startswith("warning: ") and "topics live in memory only" in warning
    finally:
        stopped = _cli(state, "broker", "stop", dist=tmp_path / "no-kafka")
    assert stopped.returncode == 0 and "topics were in memory only" in stopped.stdout, stopped.stdout


@needs_kafka
def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(BrokerPortInUseError, match=f"port {port} .* already in use"):
            ApacheKafkaBroker(port=port, data_dir=tmp_path).start()


def test_missing_or_failed_install_is_a_clear_error(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("STREAMHOUSE_KAFKA_DIST", str(tmp_path / "nope"))
    with pytest.raises(KafkaDistributionError, match=r"not installed .*make install"):
        resolve_kafka_distribution()
    failed = tmp_path / "failed"
    failed.mkdir()
    (failed / "install.json").write_text(json.dumps({"status": "unavailable", "reason": "mvn said no"}))
    monkeypatch.setenv("STREAMHOUSE_KAFKA_DIST", str(failed))
    assert "mvn said no" in (kafka_unavailable_reason() or "")
    with pytest.raises(KafkaDistributionError, match="mvn said no"):
        ApacheKafkaBroker(data_dir=tmp_path).start()


def test_install_without_maven_records_why_and_does_not_fail_the_install(tmp_path: Path) -> None:
    script = ROOT / "scripts" / "install_kafka_broker.py"
    env = {**os.environ, "MVN": str(tmp_path / "no-mvn")}
    dest = tmp_path / "kafka"
    run = subprocess.run(
        [sys.executable, str(script), "--dest", str(dest)], capture_output=True, text=True, env=env
    )
    assert run.returncode == 0 and "warning: Apache Kafka broker unavailable" in run.stderr
    record = json.loads((dest / "install.json").read_text())
    assert record["status"] == "unavailable" and "no-mvn" in record["reason"]
    strict = subprocess.run(
        [sys.executable, str(script), "--dest", str(dest), "--require"], capture_output=True, env=env
    )
    assert strict.returncode == 1


@needs_kafka
def test_the_default_broker_is_apache_kafka_where_installed_else_tansu_with_a_warning(
    monkeypatch, tmp_path: Path
) -> None:
    """The broker the CLI, the demo and the UI share keeps its topics (Tansu's live in memory only)."""
    env = {"STREAMHOUSE_STATE_DIR": str(tmp_path / "state")}
    monkeypatch.setenv("STREAMHOUSE_KAFKA_DIST", str(resolve_kafka_distribution().home))
    installed = load_settings(env)
    assert installed.broker_kind is BrokerKind.KAFKA and installed.broker_profile is BrokerProfile.REAL
    assert installed.broker_fallback_warning() is None
    monkeypatch.setenv("STREAMHOUSE_KAFKA_DIST", str(tmp_path / "no-kafka"))
    missing = load_settings(env)
    assert missing.broker_kind is BrokerKind.TANSU and missing.broker_profile is BrokerProfile.EMBEDDED
    warning = missing.broker_fallback_warning() or ""
    assert warning.startswith("warning: ") and "\n" not in warning
    assert "not installed" in warning and "topics live in memory only" in warning
    # an explicit kind is never second-guessed, nor warned about
    explicit = load_settings({**env, "STREAMHOUSE_BROKER_KIND": "tansu"})
    assert explicit.broker_kind is BrokerKind.TANSU and explicit.broker_fallback_warning() is None


def test_broker_kind_picks_the_client_profile() -> None:
    assert load_settings({"STREAMHOUSE_BROKER_KIND": "tansu"}).broker_profile is BrokerProfile.EMBEDDED
    kafka = load_settings({"STREAMHOUSE_BROKER_KIND": "kafka"})
    assert kafka.broker_kind is BrokerKind.KAFKA and kafka.broker_profile is BrokerProfile.REAL
    # an explicit profile always wins
    explicit = {"STREAMHOUSE_BROKER_KIND": "kafka", "STREAMHOUSE_BROKER_PROFILE": "embedded"}
    assert load_settings(explicit).broker_profile is BrokerProfile.EMBEDDED
    with pytest.raises(SettingsError, match="broker_kind"):
        load_settings({"STREAMHOUSE_BROKER_KIND": "zookeeper"})
    # real without servers is still an error for Tansu, but not for a local Apache Kafka
    with pytest.raises(SettingsError, match="needs bootstrap_servers"):
        load_settings({"STREAMHOUSE_BROKER_PROFILE": "real", "STREAMHOUSE_BROKER_KIND": "tansu"})
    assert load_settings({"STREAMHOUSE_BROKER_PROFILE": "real", "STREAMHOUSE_BROKER_KIND": "kafka"})


def test_no_recorded_broker_names_the_kind(tmp_path: Path) -> None:
    settings = load_settings({"STREAMHOUSE_BROKER_KIND": "kafka", "STREAMHOUSE_STATE_DIR": str(tmp_path)})
    with pytest.raises(SettingsError, match="streamhouse broker start --kind kafka"):
        settings.kafka_client()

"""The embedded broker's lifecycle, against the real Tansu binary."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from edge.broker import BrokerPortInUseError, EmbeddedBroker
from edge.broker.binary import BrokerBinaryNotFoundError, resolve_tansu_binary
from edge.broker.embedded import broker_status
from edge.kafka import BrokerProfile, KafkaClientConfig, TopicSpec, create_topics
from edge.kafka.admin import TopicAdminError

pytestmark = pytest.mark.broker


def _produce(client: KafkaClientConfig, topic: str, n: int) -> None:
    producer = Producer(client.producer())
    for i in range(n):
        producer.produce(topic, key=f"k{i % 7}".encode(), value=f"v{i}".encode())
    assert producer.flush(10) == 0


def _consume_to_eof(client: KafkaClientConfig, topic: str, partitions: int, group: str) -> list[bytes]:
    consumer = Consumer(
        client.consumer(group, **{"auto.offset.reset": "earliest", "enable.partition.eof": True})
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    at_eof: set[int] = set()
    deadline = time.monotonic() + 30
    try:
        while len(at_eof) < partitions and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                at_eof.add(msg.partition())
                continue
            values.append(msg.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert len(at_eof) == partitions, "did not reach the end of every partition in time"
    return values


def test_produce_and_consume_in_a_group(kafka_broker: KafkaClientConfig, make_topic) -> None:
    topic = make_topic("events", partitions=3)
    _produce(kafka_broker, topic, 300)
    values = _consume_to_eof(kafka_broker, topic, 3, group=topic + "-g")
    assert sorted(values) == sorted(f"v{i}".encode() for i in range(300))


def test_embedded_profile_sets_the_measured_client_settings() -> None:
    conf = KafkaClientConfig("127.0.0.1:1", BrokerProfile.EMBEDDED).consumer("g")
    assert conf["session.timeout.ms"] == 2000
    assert conf["heartbeat.interval.ms"] == 300
    assert conf["fetch.wait.max.ms"] == 10
    assert conf["partition.assignment.strategy"] == "range"
    assert conf["allow.auto.create.topics"] is False
    real = KafkaClientConfig("k:9092", BrokerProfile.REAL, {"security.protocol": "SASL_SSL"}).consumer("g")
    assert "session.timeout.ms" not in real and real["security.protocol"] == "SASL_SSL"


def test_topics_get_explicit_retention(kafka_broker: KafkaClientConfig) -> None:
    assert kafka_broker.topic_config()["retention.ms"]
    assert kafka_broker.topic_config()["retention.bytes"]


def test_existing_topic_with_too_few_partitions_is_an_error(kafka_broker, make_topic) -> None:
    topic = make_topic("narrow", partitions=1)
    with pytest.raises(TopicAdminError, match="exists with 1 partitions but 4"):
        create_topics(kafka_broker, [TopicSpec(topic, 4)])


def test_two_brokers_at_once_are_independent(tmp_path: Path) -> None:
    with EmbeddedBroker(log_dir=tmp_path) as a, EmbeddedBroker(log_dir=tmp_path) as b:
        assert a.bootstrap_servers != b.bootstrap_servers
        ca = KafkaClientConfig(a.bootstrap_servers)
        cb = KafkaClientConfig(b.bootstrap_servers)
        create_topics(ca, [TopicSpec("only-on-a")])
        create_topics(cb, [TopicSpec("only-on-b")])
        _produce(ca, "only-on-a", 5)
        assert len(_consume_to_eof(ca, "only-on-a", 1, "g")) == 5
        from confluent_kafka.admin import AdminClient

        topics_b = AdminClient(cb.admin()).list_topics(timeout=5).topics
        assert "only-on-b" in topics_b and "only-on-a" not in topics_b
        pid = a.info.pid
    # stopped cleanly: the process is gone and the port is free again
    with pytest.raises(ProcessLookupError):
        import os

        os.kill(pid, 0)


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(BrokerPortInUseError, match=f"port {port} .* already in use"):
            EmbeddedBroker(port=port, log_dir=tmp_path).start()


def test_missing_binary_override_is_a_clear_error(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("STREAMHOUSE_TANSU_BIN", str(tmp_path / "nope"))
    with pytest.raises(BrokerBinaryNotFoundError, match="STREAMHOUSE_TANSU_BIN"):
        resolve_tansu_binary()


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "STREAMHOUSE_STATE_DIR": str(tmp_path / "state"),
        "HOME": str(tmp_path),
        "STREAMHOUSE_BROKER_KIND": "tansu",  # the default is Apache Kafka where make install resolved it
    }
    return subprocess.run(
        [sys.executable, "-m", "orchestration.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        timeout=60,
    )


def test_cli_start_status_stop(tmp_path: Path) -> None:
    started = _cli(tmp_path, "broker", "start")
    assert started.returncode == 0, started.stderr
    assert "embedded broker running at 127.0.0.1:" in started.stdout
    try:
        info, alive = broker_status(tmp_path / "state")
        assert alive and info is not None
        status = _cli(tmp_path, "broker", "status")
        assert status.returncode == 0 and f"running at {info.bootstrap_servers}" in status.stdout
        again = _cli(tmp_path, "broker", "start")
        assert again.returncode == 0 and "already running" in again.stdout
        # another kind or size of broker asked for: say which one runs and how to stop it, start nothing
        for args, asked in (
            (("--brokers", "3"), "not an Apache Kafka cluster of 3 nodes as asked"),
            (("--kind", "kafka"), "not a single Apache Kafka broker as asked"),
        ):
            other = _cli(tmp_path, "broker", "start", *args)
            assert other.returncode == 2, other.stdout + other.stderr
            assert other.stderr.startswith(
                f"error: the embedded Tansu broker is already running at {info.bootstrap_servers}"
            ), other.stderr
            assert asked in other.stderr and "`streamhouse broker stop`" in other.stderr, other.stderr
            assert "Traceback" not in other.stderr and other.stdout == ""
            assert broker_status(tmp_path / "state") == (info, True)
    finally:
        stopped = _cli(tmp_path, "broker", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped" in stopped.stdout
    assert _cli(tmp_path, "broker", "status").returncode == 1
    missing = _cli(tmp_path, "broker", "stop")
    assert missing.returncode == 2 and "nothing to stop" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_cli_bad_setting_names_the_key(tmp_path: Path) -> None:
    env_run = subprocess.run(
        [sys.executable, "-m", "orchestration.cli.main", "broker", "status"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "STREAMHOUSE_STAT_DIR": "x", "HOME": str(tmp_path)},
        timeout=60,
    )
    assert env_run.returncode == 2
    assert "unknown setting STREAMHOUSE_STAT_DIR" in env_run.stderr
    assert "Traceback" not in env_run.stderr


def test_cli_help_on_every_command(tmp_path: Path) -> None:
    for args in (
        ["--help"],
        ["broker", "--help"],
        ["broker", "start", "--help"],
        ["broker", "stop", "--help"],
        ["broker", "status", "--help"],
    ):
        result = _cli(tmp_path, *args)
        assert result.returncode == 0 and "Usage:" in result.stdout, args

"""Every command that writes to Kafka checks every delivery and fails, saying why, when one fails.

``streamhouse topics produce no-such-topic`` used to wait 30 s, print "sent 1 records" and exit 0 with the
record gone. Now a missing topic is named at once and a record the client or the broker refused fails the
command with exit 1 and one ``error:`` line naming topic, partition and error; ``streamhouse generate``, the
``generate_sample_events`` job and the demo's producing step (``sample_data.produce``) likewise.

The embedded broker (Tansu) enforces no ``max.message.bytes``: the tests of a broker's rejection run on an
Apache Kafka broker of their own (the session's, in the Kafka pass), skipped where its jars are missing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from assets import sample_data
from edge.broker import ApacheKafkaBroker, BrokerKind, EmbeddedBroker, kafka_unavailable_reason, profile_for
from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from edge.kafka.delivery import DeliveryError, DeliveryTracker, MissingTopicError
from orchestration.cli.main import main
from orchestration.definitions import build_definitions
from orchestration.jobs import GENERATE_JOB
from orchestration.settings import load_settings

pytestmark = pytest.mark.broker
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def apache_kafka(
    broker_kind: BrokerKind, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaClientConfig]:
    """A broker that enforces a topic's ``max.message.bytes``: the session's if it is Kafka, else one here."""
    if broker_kind is BrokerKind.KAFKA:
        yield request.getfixturevalue("kafka_broker")
        return
    if reason := kafka_unavailable_reason():
        pytest.skip(f"Apache Kafka unavailable: {reason}")
    base = tmp_path_factory.mktemp("kafka-delivery")
    broker = ApacheKafkaBroker(data_dir=base / "data", log_dir=base)
    broker.start()
    try:
        yield KafkaClientConfig(broker.bootstrap_servers, profile_for(BrokerKind.KAFKA))
    finally:
        broker.stop()


def _cli(kafka: KafkaClientConfig, tmp_path: Path, *args: str, stdin: str | None = None):
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "STREAMHOUSE_STATE_DIR": str(tmp_path / "state"),
        "STREAMHOUSE_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
        "STREAMHOUSE_BROKER_PROFILE": kafka.profile.value,
    }
    return subprocess.run(
        [sys.executable, "-m", "orchestration.cli.main", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def _error_line(stderr: str) -> str:
    """The one ``error:`` line a failed command prints (librdkafka's own log lines aside), no traceback."""
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


def test_produce_to_a_missing_topic_fails_at_once_naming_it(
    kafka_broker: KafkaClientConfig, unique_name, tmp_path: Path
) -> None:
    missing = unique_name("missing")
    started = time.monotonic()
    result = _cli(kafka_broker, tmp_path, "topics", "produce", missing, stdin="hello\n")
    elapsed = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    line = _error_line(result.stderr)
    assert f"topic {missing!r} does not exist on {kafka_broker.bootstrap_servers}" in line
    assert f"streamhouse topics create {missing}" in line
    assert "sent" not in result.stderr
    assert elapsed < 10, f"took {elapsed:.1f}s"
    assert missing not in _cli(kafka_broker, tmp_path, "topics", "list").stdout


def test_a_record_the_producer_refuses_fails_the_command(
    kafka_broker: KafkaClientConfig, make_topic, tmp_path: Path
) -> None:
    """Over the producer's ``message.max.bytes`` (1 MB): refused by the client, on any broker."""
    topic = make_topic("big")
    lines = "small\n" + "x" * 2_000_000 + "\nafter\n"
    result = _cli(kafka_broker, tmp_path, "topics", "produce", topic, stdin=lines)
    assert result.returncode == 1, result.stderr
    line = _error_line(result.stderr)
    assert f"topic {topic!r}" in line and "MSG_SIZE_TOO_LARGE" in line, line
    assert "of 2 records" in line and "not delivered" in line, line
    assert "sent " not in result.stderr.replace("records sent", "")


def test_a_record_the_broker_rejects_fails_naming_topic_partition_and_error(
    apache_kafka: KafkaClientConfig, unique_name, tmp_path: Path
) -> None:
    topic = unique_name("small")
    created = _cli(apache_kafka, tmp_path, "topics", "create", topic, "-c", "max.message.bytes=1000")
    assert created.returncode == 0, created.stderr
    result = _cli(apache_kafka, tmp_path, "topics", "produce", topic, stdin="ok\n" + "x" * 5000 + "\n")
    assert result.returncode == 1, (result.stdout, result.stderr)
    line = _error_line(result.stderr)
    assert f"topic {topic!r} partition 0" in line, line
    assert "Broker: Message size too large" in line and "of 2 records" in line, line


def test_produce_happy_path_on_kafka_says_how_many_and_they_are_there(
    apache_kafka: KafkaClientConfig, unique_name, tmp_path: Path
) -> None:
    topic = unique_name("fine")
    assert _cli(apache_kafka, tmp_path, "topics", "create", topic, "-p", "2").returncode == 0
    lines = "".join(f"k{i}:v{i}\n" for i in range(50))
    result = _cli(apache_kafka, tmp_path, "topics", "produce", topic, "--key-separator", ":", stdin=lines)
    assert result.returncode == 0 and "sent 50 records" in result.stderr, result.stderr
    tailed = _cli(apache_kafka, tmp_path, "topics", "tail", topic, "--timeout", "2")
    assert sorted(tailed.stdout.splitlines()) == sorted(f"k{i}\tv{i}" for i in range(50))


def _tiny_orders_topic(client: KafkaClientConfig, prefix: str) -> str:
    """The orders topic made beforehand with a limit no sample order fits (create_topics keeps it)."""
    name = f"{prefix}{sample_data.ORDERS}"
    create_topics(
        client,
        [TopicSpec(name, sample_data.TOPICS[sample_data.ORDERS], config={"max.message.bytes": "100"})],
    )
    return name


def test_generate_fails_when_the_broker_rejects_records(
    apache_kafka: KafkaClientConfig,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("STREAMHOUSE_BROKER_PROFILE", apache_kafka.profile.value)
    prefix = f"genfail-{uuid.uuid4().hex[:8]}."
    orders = _tiny_orders_topic(apache_kafka, prefix)
    args = ["generate", "--events", "200", "--bootstrap-servers", apache_kafka.bootstrap_servers]
    with pytest.raises(SystemExit) as done:
        main([*args, "--topic-prefix", prefix])
    assert done.value.code == 1
    captured = capsys.readouterr()
    line = _error_line(captured.err)
    assert f"topic {orders!r} partition " in line and "Broker: Message size too large" in line, line
    assert "records in" not in captured.out  # no success summary


def test_the_generate_job_fails_with_the_reason(apache_kafka: KafkaClientConfig, tmp_path: Path) -> None:
    settings = load_settings(
        {
            "STREAMHOUSE_BROKER_PROFILE": apache_kafka.profile.value,
            "STREAMHOUSE_LAKE_ROOT": str(tmp_path / "lake"),
            "STREAMHOUSE_STATE_DIR": str(tmp_path / "state"),
        }
    )
    prefix = f"genjobfail-{uuid.uuid4().hex[:8]}."
    orders = _tiny_orders_topic(apache_kafka, prefix)
    defs = build_definitions(settings, bootstrap_servers=apache_kafka.bootstrap_servers, topic_prefix=prefix)
    result = defs.resolve_job_def(GENERATE_JOB).execute_in_process(
        run_config={"ops": {"produce_sample_events": {"config": {"events": 100, "rate": 0.0}}}},
        raise_on_error=False,
    )
    assert not result.success
    failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert len(failures) == 1
    message = failures[0].step_failure_data.error.message
    assert f"topic {orders!r} partition " in message and "Message size too large" in message, message


def test_the_demos_produce_raises_on_a_rejected_record(apache_kafka: KafkaClientConfig) -> None:
    prefix = f"demofail-{uuid.uuid4().hex[:8]}."
    orders = _tiny_orders_topic(apache_kafka, prefix)
    with pytest.raises(DeliveryError, match="Message size too large") as raised:
        sample_data.produce(apache_kafka, sample_data.generate(100, seed=3), prefix=prefix)
    assert raised.value.topic == orders and raised.value.partition is not None


def test_producing_to_missing_sample_topics_fails_at_once(kafka_broker: KafkaClientConfig) -> None:
    prefix = f"nothere-{uuid.uuid4().hex[:8]}."
    data = sample_data.generate(20, seed=3)
    for produce in (sample_data.produce, sample_data.produce_paced):
        started = time.monotonic()
        with pytest.raises(MissingTopicError, match=f"topic '{prefix}"):
            produce(kafka_broker, data, prefix=prefix, create=False)
        assert time.monotonic() - started < 10


def test_records_still_in_flight_after_the_flush_timeout_fail(tmp_path: Path) -> None:
    """No report at all (a broker that stopped answering): what flush() leaves behind is lost, and said so.

    The broker is a private embedded one, paused (SIGSTOP) once the record is queued: nothing can answer
    before the flush times out, however slowly this machine runs (a live broker on loopback could
    acknowledge within the flush's own poll).
    """
    with EmbeddedBroker(log_dir=tmp_path) as broker:
        client = KafkaClientConfig(broker.info.bootstrap_servers, profile=profile_for(BrokerKind.TANSU))
        topic = "slow"
        create_topics(client, [TopicSpec(topic, partitions=1)])
        tracker = DeliveryTracker(client, flush_timeout_s=0.5, **{"linger.ms": 5000})
        tracker.require_topics([topic])
        os.kill(broker.info.pid, signal.SIGSTOP)
        try:
            tracker.produce(topic, b"v")
            with pytest.raises(
                DeliveryError, match=rf"1 of 1 records to topic '{topic}' still undelivered after 0.5s"
            ):
                tracker.finish()
        finally:
            os.kill(broker.info.pid, signal.SIGCONT)
        tracker.producer.purge()


def test_an_unreachable_broker_is_named() -> None:
    tracker = DeliveryTracker(KafkaClientConfig("127.0.0.1:1"))
    with pytest.raises(
        DeliveryError, match=r"cannot reach Kafka at 127\.0\.0\.1:1 to look up topic 'orders'"
    ):
        tracker.require_topics(["orders"], timeout_s=1)

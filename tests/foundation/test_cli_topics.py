"""`streamhouse topics create|list|produce|tail` against the real embedded broker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from edge.kafka import KafkaClientConfig

pytestmark = pytest.mark.broker
ROOT = Path(__file__).resolve().parents[2]


def _cli(kafka: KafkaClientConfig, tmp_path: Path, *args: str, stdin: str | None = None):
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "STREAMHOUSE_STATE_DIR": str(tmp_path / "state"),
        "STREAMHOUSE_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
        "STREAMHOUSE_BROKER_PROFILE": kafka.profile.value,
    }
    return subprocess.run(
        [sys.executable, "-m", "orchestration.cli.main", "topics", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )


def test_create_produce_tail_round_trip(kafka_broker: KafkaClientConfig, unique_name, tmp_path: Path) -> None:
    topic = unique_name("lines")
    created = _cli(kafka_broker, tmp_path, "create", topic, "--partitions", "3")
    # no replication factor given: the broker's default (1 on a single broker; 3 on the 3-node cluster,
    # tests/foundation/test_kafka_cluster.py)
    assert created.stdout == f"{topic}: created (3 partitions, replication factor 1)\n", created.stderr
    again = _cli(kafka_broker, tmp_path, "create", topic, "--replication-factor", "1")
    assert again.stdout == f"{topic}: exists (3 partitions, replication factor 1)\n", again.stderr
    listed = _cli(kafka_broker, tmp_path, "list")
    assert f"{topic}\t3" in listed.stdout
    lines = "".join(f"k{i}:value {i}\n" for i in range(20))
    produced = _cli(kafka_broker, tmp_path, "produce", topic, "--key-separator", ":", stdin=lines)
    assert produced.returncode == 0 and "sent 20 records" in produced.stderr
    tailed = _cli(kafka_broker, tmp_path, "tail", topic, "--timeout", "2")
    rows = sorted(line.split("\t") for line in tailed.stdout.splitlines())
    assert rows == sorted([f"k{i}", f"value {i}"] for i in range(20))


def test_tail_of_a_missing_topic_does_not_create_it(kafka_broker, unique_name, tmp_path: Path) -> None:
    missing = unique_name("missing")
    result = _cli(kafka_broker, tmp_path, "tail", missing)
    assert result.returncode == 2 and result.stderr.startswith("error: "), result.stderr
    assert "does not exist" in result.stderr
    assert "Traceback" not in result.stderr
    assert missing not in _cli(kafka_broker, tmp_path, "list").stdout


def test_bad_topic_config_is_a_usage_error(kafka_broker, tmp_path: Path) -> None:
    result = _cli(kafka_broker, tmp_path, "create", "x", "-c", "no-equals-sign")
    assert result.returncode == 2 and "expected KEY=VALUE" in result.stderr
    for bad in ("0", "-2"):
        result = _cli(kafka_broker, tmp_path, "create", "x", "--replication-factor", bad)
        assert result.returncode == 2 and f"{bad} is not a replication factor" in result.stderr
    assert "x\t" not in _cli(kafka_broker, tmp_path, "list").stdout


def test_debug_and_test_variables_and_another_directory(kafka_broker, unique_name, tmp_path: Path) -> None:
    """`STREAMHOUSE_DEBUG=1` (README) and the test suite's variable are not "unknown settings", and the
    CLI works from any working directory."""
    topic = unique_name("anywhere")
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "STREAMHOUSE_DEBUG": "1",
        "STREAMHOUSE_TEST_BOOTSTRAP_SERVERS": kafka_broker.bootstrap_servers,
        "STREAMHOUSE_BOOTSTRAP_SERVERS": kafka_broker.bootstrap_servers,
        "STREAMHOUSE_BROKER_PROFILE": kafka_broker.profile.value,
        "PYTHONPATH": str(ROOT),
    }
    created = subprocess.run(
        [sys.executable, "-m", "orchestration.cli.main", "topics", "create", topic],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert created.returncode == 0 and f"{topic}: created" in created.stdout, created.stderr


def test_tail_decodes_windowed_keys_as_kafka_prints_them(
    kafka_broker: KafkaClientConfig, unique_name, tmp_path: Path
) -> None:
    """Issue 25 item 8: `topics tail` printed windowed keys (a windowed aggregation's output) as bytes.
    Time-windowed keys are the key + 8-byte start, session-windowed ones the key + 8-byte end + 8-byte
    start (Kafka's WindowedSerdes); `--key-format windowed-<f>|session-<f>` decodes them."""
    from confluent_kafka import Producer

    from edge.serde import LongSerde, StringSerde
    from edge.serde.windowed import (
        SessionWindow,
        SessionWindowedSerde,
        TimeWindow,
        TimeWindowedSerde,
        Windowed,
    )

    timed, sessions = unique_name("windows"), unique_name("sessions")
    assert _cli(kafka_broker, tmp_path, "create", timed, sessions).returncode == 0
    producer = Producer(kafka_broker.producer())
    tw, sw, counts = TimeWindowedSerde(StringSerde()), SessionWindowedSerde(StringSerde()), LongSerde()
    producer.produce(
        timed,
        key=tw.serialize(timed, Windowed("p-1", TimeWindow(300_000, 600_000))),
        value=counts.serialize(timed, 7),
    )
    producer.produce(
        sessions,
        key=sw.serialize(sessions, Windowed("u-1", SessionWindow(1_000, 61_000))),
        value=counts.serialize(sessions, 3),
    )
    assert producer.flush(30) == 0

    common = ("--timeout", "2", "--value-format", "long")
    out = _cli(kafka_broker, tmp_path, "tail", timed, "--key-format", "windowed-string", *common)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"[p-1@300000/{(1 << 63) - 1}]\t7\n"  # no size given: Kafka's Long.MAX_VALUE end
    out = _cli(
        kafka_broker,
        tmp_path,
        "tail",
        timed,
        "--key-format",
        "windowed-string",
        "--window-size",
        "5m",
        *common,
    )
    assert out.stdout == "[p-1@300000/600000]\t7\n"
    out = _cli(kafka_broker, tmp_path, "tail", sessions, "--key-format", "session-string", *common)
    assert out.stdout == "[u-1@1000/61000]\t3\n"
    # A key that is not in the format given is printed as its bytes, not an error.
    out = _cli(kafka_broker, tmp_path, "tail", timed, "--key-format", "long", *common)
    assert out.returncode == 0 and out.stdout.startswith("b'p-1")
    bad = _cli(
        kafka_broker, tmp_path, "tail", timed, "--key-format", "windowed-string", "--window-size", "soon"
    )
    assert bad.returncode == 2 and "not a positive duration" in bad.stderr


def test_tail_recognises_windowed_keys_without_a_key_format(
    kafka_broker: KafkaClientConfig, unique_name, tmp_path: Path
) -> None:
    """Issue 46 item 8: without --key-format, `topics tail` printed windowed keys as bytes with no word
    of --key-format windowed-string. A text key + one plausible epoch-ms time is a time-windowed key, +
    two (end, start) a session-windowed one; other keys that are not text print as bytes; each case is
    told once on stderr, and an explicit --key-format string still prints exactly what it decodes."""
    from confluent_kafka import Producer

    from edge.serde import LongSerde, StringSerde
    from edge.serde.windowed import (
        SessionWindow,
        SessionWindowedSerde,
        TimeWindow,
        TimeWindowedSerde,
        Windowed,
    )

    topic = unique_name("mixed")
    assert _cli(kafka_broker, tmp_path, "create", topic).returncode == 0
    jan5 = 1_767_571_200_000  # 2026-01-05T00:00:00Z
    tw, sw = TimeWindowedSerde(StringSerde()), SessionWindowedSerde(StringSerde())
    keys = [
        b"plain",
        tw.serialize(topic, Windowed("p-1", TimeWindow(jan5, jan5 + 300_000))),
        tw.serialize(topic, Windowed("p-2", TimeWindow(jan5 + 300_000, jan5 + 600_000))),
        sw.serialize(topic, Windowed("u-1", SessionWindow(jan5, jan5 + 61_000))),
        LongSerde().serialize(topic, 42),  # not text, not windowed: its bytes
    ]
    producer = Producer(kafka_broker.producer())
    for i, key in enumerate(keys):
        producer.produce(topic, key=key, value=f"v{i}".encode())
    assert producer.flush(30) == 0

    out = _cli(kafka_broker, tmp_path, "tail", topic, "--timeout", "2", "--window-size", "5m")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "plain\tv0",
        f"[p-1@{jan5}/{jan5 + 300_000}]\tv1",
        f"[p-2@{jan5 + 300_000}/{jan5 + 600_000}]\tv2",
        f"[u-1@{jan5}/{jan5 + 61_000}]\tv3",
        "b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00*'\tv4",
    ]
    notes = out.stderr.splitlines()
    assert len(notes) == 3, out.stderr  # one per case, not one per record
    assert "time-windowed" in notes[0] and "--key-format windowed-string" in notes[0]
    assert "session-windowed" in notes[1] and "--key-format session-string" in notes[1]
    assert "printed as their bytes" in notes[2] and "--key-format long" in notes[2]

    # no --window-size: Kafka's Long.MAX_VALUE end, and the note says how to get the real one
    out = _cli(kafka_broker, tmp_path, "tail", topic, "--timeout", "2", "--max", "2")
    assert out.stdout.splitlines()[1] == f"[p-1@{jan5}/{(1 << 63) - 1}]\tv1"
    assert "unless --window-size gives the size" in out.stderr
    # asked for string: no guessing, no notes (a key that is UTF-8 with NULs prints as it decodes)
    out = _cli(kafka_broker, tmp_path, "tail", topic, "--timeout", "2", "--key-format", "string")
    assert out.returncode == 0 and out.stderr == "" and "[p-1@" not in out.stdout

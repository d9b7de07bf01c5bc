"""`streamhouse generate` and the `generate_sample_events` job: more sample events on the real broker."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from assets import sample_data
from edge.kafka import KafkaClientConfig
from orchestration.cli.main import main
from orchestration.definitions import build_definitions
from orchestration.jobs import GENERATE_JOB
from orchestration.settings import load_settings

pytestmark = pytest.mark.broker


def _read(client: KafkaClientConfig, topic: str) -> list[tuple[int, int, bytes]]:
    """(partition, timestamp ms, value) of every record, each partition in offset order."""
    consumer = Consumer(client.consumer(f"read-{uuid.uuid4().hex}", **{"enable.partition.eof": True}))
    partitions = sample_data.TOPICS[topic.rsplit(".", 1)[-1]]
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[tuple[int, int, bytes]] = []
    at_eof: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while len(at_eof) < partitions and time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.2):
                if msg.error():
                    assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                    at_eof.add(msg.partition())
                    continue
                out.append((msg.partition(), msg.timestamp()[1], msg.value()))
    finally:
        consumer.close()
    assert len(at_eof) == partitions, f"did not reach the end of {topic}"
    return out


def _malformed(value: bytes, id_field: str) -> bool:
    """Broken JSON, or a copy the generator marked bad (missing/mistyped fields, impossible values)."""
    try:
        payload = orjson.loads(value)
    except orjson.JSONDecodeError:
        return True
    return not isinstance(payload, dict) or str(payload.get(id_field, "")).startswith("bad-")


def _late(records: list[tuple[int, int, bytes]], behind_ms: int) -> int:
    """Well-formed records ``behind_ms`` or more behind the latest event time before them (per partition)."""
    latest: dict[int, int] = {}
    late = 0
    for partition, ts, value in records:
        if _malformed(value, "order_id"):
            continue  # copies of random records placed at random positions: their time says nothing
        if ts <= latest.get(partition, ts) - behind_ms:
            late += 1
        latest[partition] = max(latest.get(partition, ts), ts)
    return late


def test_generate_produces_late_and_malformed_events_at_a_rate(
    kafka_broker: KafkaClientConfig, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STREAMHOUSE_BROKER_PROFILE", kafka_broker.profile.value)
    prefix = f"gen-{uuid.uuid4().hex[:8]}."
    started = time.monotonic()
    main(
        [
            "generate",
            "--events",
            "2000",
            "--rate",
            "4000",
            "--bootstrap-servers",
            kafka_broker.bootstrap_servers,
            "--topic-prefix",
            prefix,
        ]
    )
    elapsed = time.monotonic() - started
    out = capsys.readouterr().out
    assert "late orders" in out and "malformed" in out

    orders = _read(kafka_broker, f"{prefix}orders")
    clicks = _read(kafka_broker, f"{prefix}clicks")
    valid_orders = 1000
    n_malformed_orders = int(valid_orders * sample_data.LIVE_INVALID_RATIO)
    n_dup_orders = int(valid_orders * sample_data.LIVE_DUPLICATE_RATIO)
    assert len(orders) == valid_orders + n_malformed_orders + n_dup_orders
    assert len(clicks) == 1000 + int(1000 * sample_data.LIVE_INVALID_RATIO) + int(
        1000 * sample_data.LIVE_DUPLICATE_RATIO
    )
    assert sum(_malformed(v, "order_id") for _, _, v in orders) == n_malformed_orders
    assert sum(_malformed(v, "event_id") for _, _, v in clicks) == int(1000 * sample_data.LIVE_INVALID_RATIO)
    # ~5% of the orders are 6 h behind the stream (the generator draws each one with that probability)
    late = _late(orders, behind_ms=3 * 3_600_000)
    assert 0.02 * valid_orders <= late <= 0.09 * valid_orders
    # events fall on yesterday (late ones may reach into the day before), never today
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    days = {datetime.fromtimestamp(ts / 1000, UTC).date() for _, ts, _ in orders + clicks}
    assert yesterday in days and days <= {yesterday, yesterday - timedelta(days=1)}
    # dimensions are not re-sent; the rate held: ~2,050 records at 4,000/s take at least ~0.5 s
    assert _read(kafka_broker, f"{prefix}customers") == []
    assert elapsed >= (len(orders) + len(clicks)) / 4000 * 0.9


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--events", "0"], "Invalid value for '--events'"),
        (["--rate", "0"], "Invalid value for '--rate'"),
        (["--events", "many"], "Invalid value for '--events'"),
    ],
)
def test_generate_rejects_bad_arguments(args: list[str], message: str, capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as done:
        main(["generate", *args])
    assert done.value.code == 2
    assert message in capsys.readouterr().err


def test_generate_without_a_broker_says_how_to_start_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("STREAMHOUSE_BOOTSTRAP_SERVERS", raising=False)
    monkeypatch.setenv("STREAMHOUSE_STATE_DIR", str(tmp_path))  # no broker recorded there
    with pytest.raises(SystemExit) as done:
        main(["generate", "--events", "10"])
    assert done.value.code == 2
    assert "error: no Kafka bootstrap servers: start the local broker" in capsys.readouterr().err


def test_the_dagster_job_generates_the_same_way(kafka_broker: KafkaClientConfig, tmp_path: Path) -> None:
    settings = load_settings(
        {
            "STREAMHOUSE_BROKER_PROFILE": kafka_broker.profile.value,
            "STREAMHOUSE_LAKE_ROOT": str(tmp_path / "lake"),
            "STREAMHOUSE_STATE_DIR": str(tmp_path / "state"),
        }
    )
    prefix = f"genjob-{uuid.uuid4().hex[:8]}."
    defs = build_definitions(settings, bootstrap_servers=kafka_broker.bootstrap_servers, topic_prefix=prefix)
    result = defs.resolve_job_def(GENERATE_JOB).execute_in_process(
        run_config={"ops": {"produce_sample_events": {"config": {"events": 200, "rate": 0.0}}}}
    )
    assert result.success
    produced = result.output_for_node("produce_sample_events")
    orders, clicks = _read(kafka_broker, f"{prefix}orders"), _read(kafka_broker, f"{prefix}clicks")
    assert produced == len(orders) + len(clicks) == 200 + 2 + 2 + 1 + 1
    assert sum(_malformed(v, "order_id") for _, _, v in orders) == 2


def test_recent_start_is_whole_days_ending_last_midnight() -> None:
    assert sample_data.recent_start(3, date(2026, 1, 8)) == datetime(2026, 1, 5, tzinfo=UTC)
    assert sample_data.recent_start(1).date() == datetime.now(UTC).date() - timedelta(days=1)
    with pytest.raises(ValueError, match="days must be >= 1"):
        sample_data.recent_start(0)

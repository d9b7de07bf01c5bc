"""Smoke test of the benchmark harness at tiny sizes: the raw count loop and the relay, real broker.

Quix Streams is not installed in the test environment (it lives in its own benchmark venv), so only the
anchors that run on Streamhouse's own dependencies are exercised here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.anchors import raw_loop, relay_latency
from benchmarks.common import (
    REQUIRED_FIELDS,
    generate_events,
    not_available,
    percentiles,
    prepare_input,
    write_results,
)
from edge.kafka import KafkaClientConfig


def _check_schema(obj: dict) -> None:
    for f in REQUIRED_FIELDS:
        assert f in obj, f"missing {f} in {obj}"
    assert isinstance(obj["system"], str) and obj["system"]
    assert isinstance(obj["workload"], str) and obj["workload"]
    assert isinstance(obj["events"], int)
    assert obj["status"] in ("ok", "not_available", "failed")
    if obj["status"] == "ok":
        assert isinstance(obj["events_per_s"], int) and obj["events_per_s"] > 0
    else:
        assert obj["events_per_s"] is None and obj.get("reason")


def test_events_are_deterministic_json() -> None:
    a, b = list(generate_events(100, keys=10)), list(generate_events(100, keys=10))
    assert a == b
    assert len({k for k, _ in a}) <= 10
    assert json.loads(a[0][1])["user"] == a[0][0].decode()


def test_percentiles_nearest_rank() -> None:
    p = percentiles(list(range(1, 101)), (50, 99))
    assert p == {"p50": 50, "p99": 99}


@pytest.mark.broker
@pytest.mark.slow
def test_raw_loop_and_relay_write_valid_results(
    kafka_broker: KafkaClientConfig, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    events = 2000
    topic = unique_name("input")
    info = prepare_input(kafka_broker, topic, events, keys=100)
    assert info["events"] == events

    raw = raw_loop.bench(kafka_broker, topic, events, tmp_path, unique_name("r"), timeout_s=30)
    assert raw["status"] == "ok", raw.get("reason")
    assert raw["verification"]["correct"], raw["verification"]
    assert raw["verification"]["output_records"] == events

    relay = relay_latency.bench(
        kafka_broker,
        tmp_path,
        unique_name("l"),
        rate=500.0,
        duration_s=1.0,
        warmup_s=0.5,
        configs={"baseline": relay_latency.CONFIGS["baseline"]},
        repeats=1,
    )
    assert len(relay) == 1 and relay[0]["status"] == "ok", relay[0].get("reason")
    assert relay[0]["lost"] == 0
    assert 0 < relay[0]["p50_ms"] <= relay[0]["p99_ms"]

    na = not_available("streamhouse-edge", "enrichment", 0, "no implementation")
    results = [raw, *relay, na]
    for obj in results:
        _check_schema(obj)
    path = write_results("smoke", results, tmp_path)
    assert [o["system"] for o in json.loads(path.read_text())] == [
        "raw-confluent-kafka",
        "raw-relay",
        "streamhouse-edge",
    ]

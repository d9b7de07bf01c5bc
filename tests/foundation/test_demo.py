"""`streamhouse demo` end to end on the shared broker and Spark session."""

from __future__ import annotations

from pathlib import Path

import pytest

from edge.kafka import KafkaClientConfig
from orchestration.demo import run_demo
from orchestration.settings import load_settings

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.spark]


def test_demo_round_trip(kafka_broker: KafkaClientConfig, spark, tmp_path: Path) -> None:
    settings = load_settings(
        {
            "STREAMHOUSE_BOOTSTRAP_SERVERS": kafka_broker.bootstrap_servers,
            "STREAMHOUSE_BROKER_PROFILE": kafka_broker.profile.value,
            "STREAMHOUSE_LAKE_ROOT": str(tmp_path / "lake"),
            "STREAMHOUSE_STATE_DIR": str(tmp_path / "state"),
        }
    )
    summary = run_demo(settings, events=3_000)
    steps = dict(summary.rows)
    assert steps["Consume"].startswith("3,000 orders")
    assert steps["Read back"].startswith("3,000 rows each from Spark, deltalake (Arrow) and DuckDB")
    assert list((tmp_path / "lake" / "demo").iterdir()), "the Delta table was written under lake_root"

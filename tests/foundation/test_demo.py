"""`streamhouse demo` end to end: Kafka → Dagster bronze/silver/gold and the edge app, on the shared parts."""

from __future__ import annotations

from pathlib import Path

import pytest

from edge.kafka import KafkaClientConfig
from orchestration.demo import run_demo
from orchestration.resources import ExistingSparkResource
from orchestration.settings import load_settings

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.spark]


def test_demo_end_to_end(kafka_broker: KafkaClientConfig, spark, tmp_path: Path) -> None:
    settings = load_settings(
        {
            "STREAMHOUSE_BOOTSTRAP_SERVERS": kafka_broker.bootstrap_servers,
            "STREAMHOUSE_BROKER_PROFILE": kafka_broker.profile.value,
            "STREAMHOUSE_LAKE_ROOT": str(tmp_path / "lake"),
            "STREAMHOUSE_STATE_DIR": str(tmp_path / "state"),
        }
    )
    summary = run_demo(settings, events=2_000, spark=ExistingSparkResource())
    steps = dict(summary.rows)
    assert "exactly once" in steps["Bronze"]
    assert steps["silver/orders"].startswith("version 0")
    assert "store 'revenue-by-product' holds" in steps["Edge app"]
    # the edge app's output lands in its own bronze table; the rerun found no new raw records
    assert "→ bronze/edge_revenue_by_product (0 new raw records" in steps["Bronze, edge output"]
    assert int(steps["Bronze, edge output"].split()[0].replace(",", "")) > 0
    # one demo run in a fresh lake: the live edge totals and gold agree up to the duplicate and invalid
    # records the sample data injects (silver drops them, the edge app counts duplicates)
    live = dict(part.rsplit(" ", 1) for part in steps["Revenue, live (edge store)"].split("; "))
    gold = dict(part.rsplit(" ", 1) for part in steps["Revenue, gold (every run in this lake)"].split("; "))
    for product, value in live.items():
        edge_total, gold_total = float(value.replace(",", "")), float(gold[product].replace(",", ""))
        assert gold_total == pytest.approx(edge_total, rel=0.02), product
    assert (tmp_path / "lake" / "gold" / "revenue_tumbling_5m" / "_delta_log").is_dir()
    # the edge's session windows and gold/click_sessions agree session for session in a fresh lake
    assert steps["Sessions, edge = gold"].startswith("all ")
    n_sessions = int(steps["Sessions, edge = gold"].split()[1].replace(",", ""))
    assert n_sessions > 100
    assert "final results emitted" in steps["Edge sessions"]

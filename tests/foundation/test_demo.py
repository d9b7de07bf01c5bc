"""`streamhouse demo` end to end: Kafka → Dagster bronze/silver/gold and the edge apps, on the shared parts.

The demo normally works on the project's broker, topics, lake and Dagster instance; here it gets the
session's broker with a unique topic prefix, and a temporary lake, state dir and Dagster instance.
"""

from __future__ import annotations

import uuid
from datetime import date
from pathlib import Path

import pytest
from confluent_kafka import Producer
from dagster import AssetKey, DagsterInstance

from assets.bronze.ingest import app_id, ingest_topic
from assets.delta import AppTransaction
from assets.delta.arrow_writer import write_delta_arrow
from assets.delta.reader import read_arrow
from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from orchestration.demo import DemoError, reset_demo, run_demo, stale_topics
from orchestration.resources import ExistingSparkResource
from orchestration.settings import Settings, load_settings


def _settings(kafka_broker: KafkaClientConfig, tmp_path: Path) -> Settings:
    return load_settings(
        {
            "STREAMHOUSE_BOOTSTRAP_SERVERS": kafka_broker.bootstrap_servers,
            "STREAMHOUSE_BROKER_PROFILE": kafka_broker.profile.value,
            "STREAMHOUSE_LAKE_ROOT": str(tmp_path / "lake"),
            "STREAMHOUSE_STATE_DIR": str(tmp_path / "state"),
            "STREAMHOUSE_DAGSTER_HOME": str(tmp_path / "dagster"),
        }
    )


@pytest.mark.slow
@pytest.mark.broker
@pytest.mark.spark
def test_demo_end_to_end(kafka_broker: KafkaClientConfig, spark, tmp_path: Path) -> None:
    settings = _settings(kafka_broker, tmp_path)
    prefix = f"demo-{uuid.uuid4().hex[:8]}."
    summary = run_demo(
        settings, events=2_000, spark=ExistingSparkResource(), topic_prefix=prefix, today=date(2026, 1, 8)
    )
    steps = dict(summary.rows)
    assert "exactly once" in steps["Bronze"]
    # three days of events ending the day before `today`, 2026-01-05..07; the affected days reach one day
    # further on both sides (sessions and hopping windows cross midnight, first customer profiles)
    assert steps["Silver + gold"].startswith("6 day(s) 2026-01-03..2026-01-08 ")
    assert steps["silver/orders"].startswith("version 0")
    assert f"application.id {prefix}revenue" in steps["Edge app revenue"]
    assert "store 'revenue-by-product' holds" in steps["Edge app revenue"]
    # the edge app's output lands in its own bronze table; the rerun found no new raw records
    assert "→ bronze/edge_revenue_by_product (0 new raw records" in steps["Bronze, edge output"]
    assert int(steps["Bronze, edge output"].split()[0].replace(",", "")) > 0
    # one demo run in a fresh lake: the live edge totals and gold agree up to the duplicate and invalid
    # records the sample data injects (silver drops them, the edge app counts duplicates)
    live = dict(part.rsplit(" ", 1) for part in steps["Revenue, live (edge store)"].split("; "))
    gold = dict(part.rsplit(" ", 1) for part in steps["Revenue, gold (lake)"].split("; "))
    for product, value in live.items():
        edge_total, gold_total = float(value.replace(",", "")), float(gold[product].replace(",", ""))
        assert gold_total == pytest.approx(edge_total, rel=0.02), product
    assert (tmp_path / "lake" / "gold" / "revenue_tumbling_5m" / "_delta_log").is_dir()
    # the edge's session windows and gold/click_sessions agree session for session in a fresh lake
    assert steps["Sessions, edge = gold"].startswith("all ")
    assert int(steps["Sessions, edge = gold"].split()[1].replace(",", "")) > 100
    assert "final results in" in steps["Edge app sessions"]
    assert "malformed" in steps["Bad records (on purpose)"]
    # The runs, materializations and checks are in the instance `make dagster` would open.
    instance = DagsterInstance.from_config(str(tmp_path / "dagster"))
    try:
        jobs = sorted({r.job_name for r in instance.get_runs()})
        assert jobs == ["daily_job", "ingest_job"]
        assert instance.get_latest_materialization_event(AssetKey(["gold", "revenue_tumbling_5m"]))
        assert instance.get_latest_materialization_event(AssetKey(["bronze", "orders"]))
    finally:
        instance.dispose()


@pytest.mark.broker
def test_a_lake_ahead_of_its_topics_is_detected_and_reset(kafka_broker: KafkaClientConfig, tmp_path: Path):
    """A restarted memory-only broker has new, empty topics while bronze remembers old offsets."""
    settings = _settings(kafka_broker, tmp_path)
    prefix = f"stale-{uuid.uuid4().hex[:8]}."
    orders = f"{prefix}orders"
    create_topics(kafka_broker, [TopicSpec(orders, 1)])
    producer = Producer(kafka_broker.producer())
    for i in range(3):
        producer.produce(orders, key=b"c-1", value=b'{"order_id": "o-%d"}' % i)
    assert producer.flush(30) == 0
    uri = str(settings.lake_root / "bronze" / "orders")
    assert ingest_topic(kafka_broker, orders, uri, eof_timeout_s=30, show_progress=False).records == 3
    assert stale_topics(settings, kafka_broker, prefix) == []

    # the lake says it read 1000 records of partition 0, and a clicks topic the broker never had
    one = read_arrow(uri).slice(0, 1)
    write_delta_arrow(one, uri, mode="append", app_transactions=[AppTransaction(app_id(orders, 0), 1000)])
    clicks_uri = str(settings.lake_root / "bronze" / "clicks")
    write_delta_arrow(
        one, clicks_uri, mode="append", app_transactions=[AppTransaction(app_id(f"{prefix}clicks", 0), 7)]
    )
    stale = stale_topics(settings, kafka_broker, prefix)
    assert stale == [
        f"{orders} (partition 0 ends at 3, bronze read to 1000)",
        f"{prefix}clicks (missing; bronze read 7 records)",
    ]

    # On a configured cluster the demo stops before touching anything and names the way out.
    instance = DagsterInstance.ephemeral()
    with pytest.raises(DemoError, match=r"streamhouse demo --reset"):
        run_demo(settings, events=10, topic_prefix=prefix, instance=instance)
    assert (settings.lake_root / "bronze" / "orders" / "_delta_log").is_dir()

    # The reset removes what the demo owns: the lake's tables and the edge apps' local state.
    state = settings.state_dir / "streams" / f"{prefix}revenue"
    state.mkdir(parents=True)
    removed = reset_demo(settings, instance, prefix)
    assert str(settings.lake_root / "bronze") in removed and str(state) in removed
    assert not (settings.lake_root / "bronze").exists() and not state.exists()
    assert stale_topics(settings, kafka_broker, prefix) == []

"""`streamhouse demo` end to end: Kafka → Dagster bronze/silver/gold and the edge apps, on the shared parts.

The demo normally works on the project's broker, topics, lake and Dagster instance; here it gets the
session's broker with a unique topic prefix, and a temporary lake, state dir and Dagster instance.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import asdict
from datetime import date
from pathlib import Path

import pytest
from confluent_kafka import Producer
from dagster import AssetCheckKey, AssetKey, AssetMaterialization, DagsterInstance

from assets.bronze.ingest import app_id, ingest_topic
from assets.delta import AppTransaction
from assets.delta.arrow_writer import write_delta_arrow
from assets.delta.reader import read_arrow
from edge.broker import BrokerInfo, BrokerKind
from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from orchestration.cli.main import main
from orchestration.demo import DemoError, run_demo, stale_topics
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
    # the edge apps' output lands in their own bronze tables; the rerun found no new raw records
    assert "→ bronze/edge_revenue_by_product; " in steps["Bronze, edge output"]
    assert "→ bronze/edge_revenue_5m (0 new raw records" in steps["Bronze, edge output"]
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
        # Issue 46 item 4: gold's check of the edge's 5-minute windows compared them and passed on the
        # demo's own data (the revenue-windows app ran and bronze ingested its windows before the daily
        # job): no standing "not compared" warning. (One daily run covers the days; the per-day records
        # it plans stay "planned" in Dagster's history.)
        check = AssetCheckKey(AssetKey(["gold", "revenue_tumbling_5m"]), "edge_windows_match_gold")
        history = instance.event_log_storage.get_asset_check_execution_history(check, limit=50)
        done = [r for r in history if r.status.value != "PLANNED"]
        assert len(done) == 1, [r.status for r in history]
        evaluation = done[0].event.dagster_event.event_specific_data
        assert evaluation.passed and evaluation.description == "passed: 0 unexpected rows"
        assert {"2026-01-05", "2026-01-06", "2026-01-07"} <= set(evaluation.metadata["days"].value)
        assert evaluation.metadata["element_count"].value > 100  # windows were compared
    finally:
        instance.dispose()


def _record_session_broker(settings: Settings, kafka_broker: KafkaClientConfig, kind: BrokerKind) -> None:
    """Record the session's broker as the local broker (alive: this process's pid), as `streamhouse
    broker start` would after a restart, so the demo reuses it instead of a configured cluster."""
    host, port = kafka_broker.bootstrap_servers.split(",")[0].rsplit(":", 1)
    info = BrokerInfo(os.getpid(), host, int(port), time.time(), "", "the session's broker", kind.value)
    record = settings.state_dir / "broker" / "broker.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(asdict(info)))


@pytest.mark.broker
def test_a_lake_ahead_of_its_topics_is_never_wiped_without_reset(
    kafka_broker: KafkaClientConfig, broker_kind: BrokerKind, tmp_path: Path, monkeypatch, capsys
):
    """A restarted memory-only broker has new, empty topics while bronze remembers old offsets: the demo
    used to delete every table and the history of 18 assets on its own. Now it stops (exit 2) and says
    what it found; only `--reset` starts over."""
    settings = _settings(kafka_broker, tmp_path)
    prefix = f"stale-{uuid.uuid4().hex[:8]}."
    orders = f"{prefix}orders"
    create_topics(kafka_broker, [TopicSpec(orders, 1)])
    producer = Producer(kafka_broker.producer())
    for i in range(3):
        producer.produce(orders, key=b"c-1", value=b'{"order_id": "o-%d"}' % i)
    assert producer.flush(30) == 0
    del producer  # not reconnecting to the session's broker after it stopped
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
    settings.dagster_home.mkdir(parents=True)
    instance = DagsterInstance.from_config(str(settings.dagster_home))
    bronze_orders = AssetKey(["bronze", "orders"])
    instance.report_runless_asset_event(AssetMaterialization(bronze_orders))
    state = settings.state_dir / "streams" / f"{prefix}revenue"
    state.mkdir(parents=True)
    lake = settings.lake_root

    def untouched() -> bool:
        kept = (lake / "bronze" / "orders" / "_delta_log").is_dir() and state.is_dir()
        return kept and instance.get_latest_materialization_event(bronze_orders) is not None

    # On a configured cluster and on the recorded local broker alike, the demo stops before touching
    # anything, says what it found and names the way out with what it would delete.
    for origin in ("configured", "recorded"):
        run_settings = settings
        if origin == "recorded":
            _record_session_broker(settings, kafka_broker, broker_kind)
            run_settings = settings.model_copy(update={"bootstrap_servers": None, "broker_kind": broker_kind})
        with pytest.raises(DemoError) as refused:
            run_demo(run_settings, events=10, topic_prefix=prefix, instance=instance)
        message = str(refused.value)
        assert "\n" not in message
        assert f"{orders} (partition 0 ends at 3, bronze read to 1000)" in message
        assert "`streamhouse demo --reset` starts over" in message
        assert f"bronze under {lake}" in message and "the history of 1 assets" in message
        assert str(state) in message
        assert untouched(), origin

    # The command: exit 2 and one `error:` line. The CLI's demo reads unprefixed topics, so the lake
    # also claims far more of `clicks` than any topic of the session's broker holds.
    write_delta_arrow(
        one, clicks_uri, mode="append", app_transactions=[AppTransaction(app_id("clicks", 0), 10**9)]
    )
    for name, value in {
        "STREAMHOUSE_LAKE_ROOT": lake,
        "STREAMHOUSE_STATE_DIR": settings.state_dir,
        "STREAMHOUSE_DAGSTER_HOME": settings.dagster_home,
        "STREAMHOUSE_BROKER_KIND": broker_kind.value,
    }.items():
        monkeypatch.setenv(name, str(value))
    monkeypatch.delenv("STREAMHOUSE_BOOTSTRAP_SERVERS", raising=False)
    monkeypatch.delenv("STREAMHOUSE_BROKER_PROFILE", raising=False)
    cli_state = settings.state_dir / "streams" / "revenue"  # the CLI's edge app state
    cli_state.mkdir(parents=True)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["demo", "--events", "10"])
    assert exited.value.code == 2
    [error] = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert error.startswith("error: the lake at ") and "bronze read" in error
    assert "`streamhouse demo --reset` starts over" in error
    assert untouched() and cli_state.is_dir()

    # --reset starts over: it deletes what the demo owns before producing (stopped right after here).
    def stop_here(_settings: Settings) -> None:
        raise DemoError("stopped after the reset")

    monkeypatch.setattr("orchestration.demo._quiet_spark", stop_here)
    with pytest.raises(SystemExit) as exited:
        main(["demo", "--events", "10", "--reset"])
    assert exited.value.code == 2 and "stopped after the reset" in capsys.readouterr().err
    assert not (lake / "bronze").exists() and not cli_state.exists()
    assert instance.get_latest_materialization_event(bronze_orders) is None
    assert stale_topics(settings, kafka_broker, prefix) == []
    instance.dispose()

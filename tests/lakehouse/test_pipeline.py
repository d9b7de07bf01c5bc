"""``run_main_job`` (what ``streamhouse demo`` calls) end to end, and the definitions load."""

from __future__ import annotations

import uuid

import pytest

from assets.delta import read_arrow
from assets.resources import ExistingSparkResource
from orchestration.pipeline import run_main_job
from orchestration.settings import Settings


def test_definitions_load_with_jobs_schedules_and_sensor():
    from orchestration.definitions import defs

    assert {j for j in ("ingest_job", "daily_job", "maintenance_job") if defs.resolve_job_def(j)}
    assert defs.resolve_sensor_def("kafka_lag_sensor")
    assert defs.resolve_sensor_def("daily_automation")
    assert defs.resolve_schedule_def("maintenance_nightly")
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {"bronze/orders", "silver/orders", "quarantine/orders_quarantine", "gold/orders_enriched"} <= keys


@pytest.mark.broker
@pytest.mark.spark
@pytest.mark.slow
def test_run_main_job_summary(kafka_broker, spark, tmp_lake):
    settings = Settings(
        broker_profile=kafka_broker.profile,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        lake_root=tmp_lake,
    )
    rows = run_main_job(
        settings,
        bootstrap_servers=kafka_broker.bootstrap_servers,
        events=600,
        topic_prefix=f"main{uuid.uuid4().hex[:6]}.",
        spark=ExistingSparkResource(),
    )
    steps = dict(rows)
    assert {"Produce", "Bronze", "Silver + gold", "gold/revenue_tumbling_5m"} <= steps.keys()
    assert read_arrow(str(tmp_lake / "gold" / "orders_enriched")).num_rows > 0

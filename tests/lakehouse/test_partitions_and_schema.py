"""Daily partitions: a 3-day backfill in one run, recomputing one day replaces only that day, lake
maintenance keeps the data; silver schema evolution only through an explicit rule."""

from __future__ import annotations

from datetime import timedelta

import orjson
import pyarrow as pa
import pytest
from confluent_kafka import Producer
from dagster import materialize
from deltalake import DeltaTable

from assets import sample_data
from assets.bronze.ingest import ingest_topic
from assets.delta import read_arrow, table_version
from assets.sample_data import DEFAULT_START, iso_ms
from assets.silver.assets import SILVER_ASSETS
from assets.silver.transform import SchemaRuleError
from edge.kafka import create_topics
from orchestration.jobs import DAILY_JOB, MAINTENANCE_JOB
from orchestration.pipeline import run_ingest
from orchestration.runs import range_tags

pytestmark = [pytest.mark.broker, pytest.mark.spark, pytest.mark.slow]


def _files_by_day(uri: str, col: str) -> dict[str, set[str]]:
    actions = pa.table(DeltaTable(uri).get_add_actions(flatten=True)).to_pylist()
    out: dict[str, set[str]] = {}
    for a in actions:
        out.setdefault(str(a[f"partition.{col}"]), set()).add(a["path"])
    return out


def test_three_day_backfill_then_one_day_recompute_and_maintenance(lakehouse):
    lh = lakehouse()
    data = sample_data.generate(900, days=3, customers=10, include_dimensions=True)
    sample_data.produce(lh.client, data, prefix=lh.prefix)
    run_ingest(lh.defs, lh.instance)
    days = ["2026-01-05", "2026-01-06", "2026-01-07"]
    job = lh.defs.resolve_job_def(DAILY_JOB)
    selection = [
        k
        for k in job.asset_layer.executable_asset_keys
        if k.path[-1] in ("orders", "orders_quarantine", "revenue_tumbling_5m")
    ]
    result = job.execute_in_process(
        instance=lh.instance, tags=range_tags(days[0], days[-1]), asset_selection=selection
    )
    assert result.success
    tumbling = lh.uri("gold", "revenue_tumbling_5m")
    assert table_version(tumbling) == 0  # the whole range in one atomic commit
    before = _files_by_day(tumbling, "window_date")
    assert sorted(before) == days
    per_day = {d: 0 for d in days}
    for r in read_arrow(tumbling).to_pylist():
        per_day[r["window_date"].isoformat()] += r["orders"]
    assert sum(per_day.values()) == 450 and all(per_day.values())

    # A late order for the middle day: recomputing that day replaces only its partition.
    late_ts = int((DEFAULT_START + timedelta(days=1, hours=12)).timestamp() * 1000)
    producer = Producer(lh.client.producer())
    order = {
        "order_id": "late-1",
        "customer_id": "c-0001",
        "product_id": "p-001",
        "quantity": 2,
        "unit_price": 9.5,
        "event_time": iso_ms(late_ts),
    }
    producer.produce(lh.topic("orders"), key=b"c-0001", value=orjson.dumps(order), timestamp=late_ts)
    producer.flush(10)
    ingest = run_ingest(lh.defs, lh.instance)
    assert ingest.event_dates["orders"] == ["2026-01-06"]
    result = job.execute_in_process(
        instance=lh.instance, partition_key="2026-01-06", asset_selection=selection
    )
    assert result.success
    after = _files_by_day(tumbling, "window_date")
    assert after["2026-01-05"] == before["2026-01-05"] and after["2026-01-07"] == before["2026-01-07"]
    assert after["2026-01-06"] != before["2026-01-06"]
    rows = read_arrow(tumbling, filters=[("window_date", "=", DEFAULT_START.date() + timedelta(days=1))])
    assert sum(rows.column("orders").to_pylist()) == per_day["2026-01-06"] + 1

    # Maintenance compacts, checkpoints and vacuums without changing any table's contents.
    counts = {uri: read_arrow(uri).num_rows for uri in (tumbling, lh.uri("silver", "orders"))}
    result = lh.defs.resolve_job_def(MAINTENANCE_JOB).execute_in_process(
        instance=lh.instance,
        run_config={
            "ops": {"maintenance__lake": {"config": {"retention_hours": 0, "enforce_retention": False}}}
        },
    )
    assert result.success
    meta = result.get_asset_materialization_events()[0].materialization.metadata
    assert meta["tables"].value >= 8 and meta["files_vacuumed"].value > 0
    assert {uri: read_arrow(uri).num_rows for uri in counts} == counts


def test_schema_evolution_only_by_explicit_rule(lakehouse, spark):
    lh = lakehouse()
    create_topics(lh.client, sample_data.topic_specs(lh.prefix))
    producer = Producer(lh.client.producer())
    base = int(DEFAULT_START.timestamp() * 1000)
    for i in range(20):
        order = {
            "order_id": f"o-{i}",
            "customer_id": "c-1",
            "product_id": "p-1",
            "quantity": 1,
            "unit_price": 2.0,
            "event_time": iso_ms(base + i * 1000),
        }
        if i % 2:
            order["coupon"] = f"SAVE{i}"
        producer.produce(lh.topic("orders"), value=orjson.dumps(order), timestamp=base + i * 1000)
    producer.flush(10)
    ingest_topic(lh.client, lh.topic("orders"), lh.uri("bronze", "orders"), show_progress=False)
    silver_orders = SILVER_ASSETS[0]
    silver = lh.uri("silver", "orders")

    def run(add_columns=None, raise_on_error=True):
        config = {"ops": {"silver_orders": {"config": {"add_columns": add_columns or {}}}}}
        return materialize(
            [silver_orders],
            partition_key="2026-01-05",
            resources=lh.resources,
            run_config=config,
            instance=lh.instance,
            raise_on_error=raise_on_error,
        )

    result = run()
    meta = result.asset_materializations_for_node("silver_orders")[0].metadata
    assert meta["unknown_payload_fields"].value == ["coupon"]
    assert "coupon" not in read_arrow(silver).column_names
    v_before = table_version(silver)

    result = run({"coupon": "string"})
    table = read_arrow(silver)
    assert sorted(c for c in table.column("coupon").to_pylist() if c) == sorted(
        f"SAVE{i}" for i in range(1, 20, 2)
    )
    assert "coupon" not in read_arrow(silver, version=v_before).column_names

    # A rule may only add columns; changing a contract column's type is refused with the reason.
    with pytest.raises(SchemaRuleError, match="quantity"):
        run({"quantity": "string"})
    # Dropping the rule later keeps the column (null for new rows) instead of failing.
    assert run().success
    assert "coupon" in read_arrow(silver).column_names

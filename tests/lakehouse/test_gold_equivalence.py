"""Gold equals an independent DuckDB recomputation over the same raw events, for every window kind,
after a second run that brings late events and customer profile changes; older gold versions stay
readable and equal the first run's recomputation (time travel)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dagster import AssetKey, evaluate_automation_conditions

from assets import sample_data
from assets.delta import history, read_arrow, table_version
from assets.sample_data import DEFAULT_START
from orchestration.pipeline import materializations, run_daily, run_ingest
from tests.lakehouse import reference

pytestmark = [pytest.mark.broker, pytest.mark.spark, pytest.mark.slow]


def _us(ts: datetime) -> int:
    return int(ts.replace(tzinfo=ts.tzinfo or UTC).timestamp() * 1_000_000)


def _gold(uri: str, version: int | None = None) -> list[dict]:
    return read_arrow(uri, version=version).to_pylist()


def assert_gold_matches(lh, con, versions: dict[str, int] | None = None) -> None:
    v = versions or {}
    tumbling = {
        (_us(r["window_start"]), r["product_id"]): (r["revenue"], r["orders"], r["units"])
        for r in _gold(lh.uri("gold", "revenue_tumbling_5m"), v.get("tumbling"))
    }
    expected = reference.tumbling(con)
    assert tumbling.keys() == expected.keys()
    for key, (rev, n, units) in expected.items():
        assert tumbling[key][1:] == (n, units), key
        assert tumbling[key][0] == pytest.approx(rev, abs=0.006), key

    hopping = {
        _us(r["window_start"]): (r["revenue"], r["orders"], r["customers"])
        for r in _gold(lh.uri("gold", "revenue_hopping_10m"), v.get("hopping"))
    }
    expected_h = reference.hopping(con)
    assert hopping.keys() == expected_h.keys()
    for key, (rev, n, c) in expected_h.items():
        assert hopping[key][1:] == (n, c), key
        assert hopping[key][0] == pytest.approx(rev, abs=0.006), key

    sessions = {
        (r["user_id"], _us(r["session_start"])): (_us(r["session_end"]), r["clicks"], r["pages"])
        for r in _gold(lh.uri("gold", "click_sessions"), v.get("sessions"))
    }
    assert sessions == reference.sessions(con)

    enriched = {
        r["order_id"]: (r["segment"], r["country"], r["category"], r["amount"])
        for r in _gold(lh.uri("gold", "orders_enriched"), v.get("enriched"))
    }
    expected_e = reference.enriched(con)
    assert enriched.keys() == expected_e.keys()
    for key, (seg, country, cat, amount) in expected_e.items():
        assert enriched[key][:3] == (seg, country, cat), key
        assert enriched[key][3] == pytest.approx(amount, abs=0.006), key


def test_gold_equals_duckdb_with_late_events_and_time_travel(lakehouse):
    lh = lakehouse()
    batch1 = sample_data.generate(
        1600, days=2, customers=15, invalid_ratio=0.02, duplicate_ratio=0.03, late_ratio=0.05
    )
    sample_data.produce(lh.client, batch1, prefix=lh.prefix)
    # Declarative automation's first tick sets its baseline; the next derives the days from bronze.
    tick = evaluate_automation_conditions(lh.defs, lh.instance)
    first = run_ingest(lh.defs, lh.instance)
    assert sorted(first.event_dates["orders"]) == ["2026-01-04", "2026-01-05", "2026-01-06"]
    # Declarative automation requests the same days from the bronze materializations.
    tick = evaluate_automation_conditions(lh.defs, lh.instance, cursor=tick.cursor)
    for key in (["silver", "orders"], ["gold", "revenue_tumbling_5m"]):
        assert sorted(tick.get_requested_partitions(AssetKey(key))) == first.affected_days
    runs = run_daily(lh.defs, first.affected_days, lh.instance)
    assert [r.success for r in runs] == [True]
    con1 = reference.connect([batch1])
    assert_gold_matches(lh, con1)
    names = {
        "tumbling": "revenue_tumbling_5m",
        "hopping": "revenue_hopping_10m",
        "sessions": "click_sessions",
        "enriched": "orders_enriched",
    }
    v1 = {k: table_version(lh.uri("gold", n)) for k, n in names.items()}

    # Lineage: gold records the silver version it read, in Dagster metadata and in the Delta commit.
    mats = materializations(runs[0])
    silver_orders_v = table_version(lh.uri("silver", "orders"))
    assert mats["gold/revenue_tumbling_5m"]["input_versions"] == {"silver/orders": silver_orders_v}
    bronze_orders_v = table_version(lh.uri("bronze", "orders"))
    assert mats["gold/revenue_tumbling_5m"]["upstream_versions"] == {
        f"silver/orders@{silver_orders_v}": {"bronze/orders": bronze_orders_v}
    }
    # the plot's preview is short enough for the UI to show in place; the PNG is beside the lake
    plot = mats["gold/revenue_tumbling_5m"]["plot"]
    assert plot.startswith("**Revenue per 5 min") and len(plot) < 1000 and "total" in plot
    assert Path(mats["gold/revenue_tumbling_5m"]["plot_path"]).read_bytes().startswith(b"\x89PNG")
    assert mats["gold/orders_enriched"]["input_versions"].keys() == {
        "silver/orders",
        "silver/customers",
        "silver/products",
    }
    assert "| window_start |" in mats["gold/revenue_hopping_10m"]["preview"]
    assert (
        f'"silver/orders": {silver_orders_v}'
        in history(lh.uri("gold", "revenue_tumbling_5m"))[0]["streamhouse.inputs"]
    )

    # Second run: a new day, late events for the first days, and customer profile changes.
    batch2 = sample_data.generate(
        600,
        seed=11,
        start=DEFAULT_START + timedelta(days=2),
        days=1,
        customers=15,
        late_ratio=0.3,
        late_by=timedelta(hours=30),
        id_prefix="b2-",
    )
    sample_data.produce(lh.client, batch2, prefix=lh.prefix, create=False)
    second = run_ingest(lh.defs, lh.instance)
    assert second.records["orders"] == len(batch2.records["orders"])
    assert "2026-01-05" in second.event_dates["orders"]  # late
    runs = run_daily(lh.defs, second.affected_days, lh.instance)
    assert all(r.success for r in runs)
    assert_gold_matches(lh, reference.connect([batch1, batch2]))

    # Time travel: the first run's gold versions still equal the first recomputation.
    assert_gold_matches(lh, con1, versions=v1)

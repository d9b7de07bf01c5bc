"""The lakehouse benchmark hooks at tiny sizes, so they cannot rot silently.

The end-to-end test runs the incremental hook (sample data → Kafka → bronze → silver → gold, then 1 % new
data and a from-scratch check) and the gold hook on synthetic silver tables shaped like the real ones the
incremental run just wrote; both outputs are verified by the hooks themselves and checked here. The pure
parts (linear fit, verdicts, schema divergence) are tested without Spark jobs.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from benchmarks.run_all import BenchContext
from benchmarks.systems import lakehouse_gold, lakehouse_incremental
from benchmarks.systems.lakehouse_common import ReferenceLake, linear_fit
from edge.kafka import KafkaClientConfig
from tests.benchmarks.test_harness import _check_schema


def _ctx(client: KafkaClientConfig, workdir: Path, scale: str, budget_s: float = 600.0) -> BenchContext:
    return BenchContext(
        client=client, workdir=workdir, run_id="t", events=0, keys=0, input_topic="", variant_events=0,
        input_topic_variants="", input_topic_2p="", table_topic="", table_rows=0,
        deadline=time.monotonic() + budget_s, lakehouse_scale=scale,
    )  # fmt: skip


def test_linear_fit_separates_fixed_overhead() -> None:
    fit = linear_fit([1_000_000, 5_000_000, 20_000_000], [12.0 + 3 * m for m in (1, 5, 20)])
    assert fit.intercept_s == pytest.approx(12.0)
    assert fit.slope_s_per_m == pytest.approx(3.0)
    assert fit.r2 == pytest.approx(1.0)
    assert fit.marginal_s_per_m == pytest.approx([3.0, 3.0])
    with pytest.raises(ValueError, match="distinct sizes"):
        linear_fit([1, 1], [1.0, 2.0])


def _rows(seconds: dict[int, float], correct: bool = True) -> list[dict]:
    return [{"events": n, "seconds": t, "verification": {"correct": correct}} for n, t in seconds.items()]


def test_linearity_verdict() -> None:
    linear = lakehouse_gold.linearity(_rows({1_000_000: 30, 5_000_000: 90, 20_000_000: 320}))
    assert linear["target_met"] is True, linear
    quadratic = lakehouse_gold.linearity(_rows({1_000_000: 10, 5_000_000: 250, 20_000_000: 4000}))
    assert quadratic["target_met"] is False, quadratic
    wrong = lakehouse_gold.linearity(_rows({1_000_000: 30, 5_000_000: 90, 20_000_000: 320}, correct=False))
    assert wrong["target_met"] is False
    two = lakehouse_gold.linearity(_rows({1_000_000: 30, 5_000_000: 90}))
    assert two["target_met"] is None and two["fit"]["slope_s_per_million"] == pytest.approx(15.0)


def test_incremental_summary_removes_overhead() -> None:
    cost = lakehouse_incremental.RunCost
    full = cost(110.0, {"bronze": 40.0, "silver": 30.0, "gold": 30.0}, ["d"] * 30, 1000)
    incr = cost(12.0, {"bronze": 4.0, "silver": 3.0, "gold": 3.0}, ["d"] * 3, 10)
    noop = cost(6.0, {"bronze": 2.0, "silver": 2.0, "gold": 0.0}, [], 0)
    empty = cost(4.0, {"bronze": 0.0, "silver": 1.0, "gold": 2.0}, ["e"], 0)
    s = lakehouse_incremental.summarize(full, incr, noop, empty)
    assert s["overall"]["ratio"] == pytest.approx(12 / 110, abs=1e-4)
    assert s["overall"]["overhead_s"] == pytest.approx(10.0)
    assert s["overall"]["marginal_ratio"] == pytest.approx(2 / 100, abs=1e-4)
    assert s["layers"]["gold"]["marginal_ratio"] == pytest.approx(1 / 28, abs=1e-4)


def test_incremental_invariants_catch_a_lost_order() -> None:
    sums = {
        "silver/orders": {"rows": 10.0, "quantity": 30.0},
        "silver/clicks": {"rows": 8.0},
        "gold/revenue_tumbling_5m": {"orders": 10.0, "units": 30.0},
        "gold/orders_enriched": {"rows": 10.0},
        "gold/click_sessions": {"clicks": 8.0},
    }
    assert lakehouse_incremental.invariants(sums, {"orders": 10, "clicks": 8})["correct"]
    sums["gold/orders_enriched"]["rows"] = 9.0
    bad = lakehouse_incremental.invariants(sums, {"orders": 10, "clicks": 8})
    assert not bad["correct"] and not bad["checks"]["enriched_rows"]
    assert not lakehouse_incremental.invariants(sums, {"orders": 11, "clicks": 8})["correct"]


@pytest.mark.spark
def test_synthetic_silver_fails_loudly_on_unknown_columns(spark) -> None:
    from pyspark.sql.types import StringType, StructField, StructType, TimestampType

    real = StructType([StructField("order_id", StringType()), StructField("coupon", StringType())])
    with pytest.raises(lakehouse_gold.SchemaDivergenceError, match="coupon"):
        lakehouse_gold.synthetic_table("orders", lakehouse_gold.TableShape(real, ["event_date"]), 1000, 1)
    known = StructType([StructField("order_id", StringType()), StructField("event_time", TimestampType())])
    df = lakehouse_gold.synthetic_table("orders", lakehouse_gold.TableShape(known, []), 1000, 1)
    assert df.columns == ["order_id", "event_time"]  # the real order, nothing else (no Spark job)
    assert [f.dataType for f in df.schema.fields] == [StringType(), TimestampType()]


def test_hooks_skip_with_a_reason_when_the_quick_budget_is_short(tmp_path: Path) -> None:
    ctx = _ctx(KafkaClientConfig("127.0.0.1:1"), tmp_path, "quick", budget_s=5.0)
    for hook in (lakehouse_gold, lakehouse_incremental):
        [row] = hook.bench(ctx)
        _check_schema(row)
        assert row["status"] == "not_available" and "skipped" in row["reason"], row


@pytest.mark.broker
@pytest.mark.spark
@pytest.mark.slow
def test_incremental_and_gold_hooks_tiny(kafka_broker: KafkaClientConfig, spark, tmp_path: Path) -> None:
    [inc] = lakehouse_incremental.bench(_ctx(kafka_broker, tmp_path, "tiny"))
    _check_schema(inc)
    assert inc["status"] == "ok", inc.get("reason")
    assert inc["verification"]["correct"], inc["verification"]
    assert set(inc["verification"]["checks"]) >= {"silver_orders", "tumbling_orders", "session_clicks"}
    assert inc["runs"]["incremental"]["records"] == inc["new_records"] > 0
    assert 0 < inc["runs"]["incremental"]["days"] <= 3 < inc["runs"]["full"]["days"]
    assert inc["overall"]["ratio"] > 0 and set(inc["layers"]) == {"bronze", "silver", "gold"}
    assert 0 < inc["touched_fraction"] < 1

    reference = ReferenceLake(Path(inc["lake"]), 0.0, {}, [])
    [row] = lakehouse_gold.run((4_000,), tmp_path, reference, warm_up=False, log=lambda _: None)
    _check_schema(row)
    assert row["status"] == "ok" and row["seconds"] > 0 and row["days"] == 1
    assert row["verification"]["correct"], row["verification"]
    assert row["verification"]["gold_tumbling_orders"] == row["orders"] == 2_000
    assert row["target_met"] is None  # one size: no verdict (the verdict is tested above)


def test_history_comparison_orders_by_days_and_skips_failed_runs() -> None:
    def row(days: int, incr: float, full: float, status: str = "ok") -> dict:
        overall = {"full_s": full, "incremental_s": incr, "ratio": incr / full, "marginal_ratio": 0.1}
        return {"days": days, "events": days * 1000, "overall": overall, "touched_fraction": 2 / days,
                "status": status}  # fmt: skip

    rows = [row(60, 16, 106), row(30, 15, 55), row(90, 1, 1, "failed")]
    out = lakehouse_incremental.history_comparison(rows)
    assert [r["days"] for r in out] == [30, 60]
    assert out[1]["ratio"] == pytest.approx(16 / 106)

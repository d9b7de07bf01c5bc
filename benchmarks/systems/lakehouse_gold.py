"""Gold windowed aggregation at growing sizes (1M, 5M, 20M events): does the cost grow linearly?

What is timed: one ``daily_job`` run restricted to the four gold assets (tumbling 5 min, hopping
10 min/1 min, 30-minute click sessions, as-of enriched orders) over *all* days of the lake, through the
real Dagster definitions (``orchestration.definitions.build_definitions`` with the benchmark's Spark
session), exactly as ``orchestration.pipeline.run_daily`` would run it after a backfill.

Inputs: producing 20M events through Kafka with the Python sample generator would take ~6 minutes
before anything is measured, and bronze/silver are not what this figure is about. So the *silver*
tables gold reads (``silver/orders``, ``silver/clicks``, ``silver/customers``, ``silver/products``) are
generated directly with Spark (``spark.range`` + deterministic hash expressions) and written through
``assets.delta.write_delta``. Their schema and partitioning are taken from what the real silver assets
write *today*: the hook first runs the real pipeline on a small sample (``run_reference_pipeline``) and
builds every column of that schema by name; a column it does not know, a type it cannot produce, or a
partitioning that differs fails the benchmark loudly instead of measuring the wrong tables.

Scaling choice: the event density is fixed (1M events = 3 days, as in ``benchmarks/lakehouse_bench.py``),
so a bigger lake means *more days* at the same per-day volume — how a lake grows. Customers (500),
products (12) and click users (1,000) are fixed, as dimensions do not grow with traffic.

Verdict: a least-squares fit ``t = a + b·n`` separates the fixed cost ``a`` (Dagster run, Spark job
planning, Delta commits, plots) from the per-event cost ``b``. ``target_met`` when the marginal cost per
million events of the last step (5M → 20M) is at most ``LINEARITY_TOLERANCE`` x that of the first step
(1M → 5M): a super-linear engine (sort spills, skew, quadratic windows) would break it; sub-linear growth
(fixed cost amortised) passes. It needs three sizes; smaller runs report the fit and no verdict.
Each size's ``events_per_s`` is events / wall seconds of its gold run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.common import result
from benchmarks.systems.lakehouse_common import (
    SYSTEM,
    LakehouseBenchError,
    ReferenceLake,
    lake_definitions,
    layer_seconds,
    linear_fit,
    load_avg,
    quiet,
    run_reference_pipeline,
    run_selection,
    skipped_for_budget,
    spark_session,
    step_seconds,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from benchmarks.run_all import BenchContext

WORKLOAD = "gold-windowed-aggregation"
#: Sizes per scale (``BenchContext.lakehouse_scale``): the target sizes 1M/5M/20M for the full set.
SIZES: dict[str, tuple[int, ...]] = {
    "tiny": (10_000, 20_000),
    "quick": (100_000, 300_000),
    "full": (1_000_000, 5_000_000, 20_000_000),
}
#: Seconds a scale needs at least (reference run + generation + gold runs); less left → skipped.
#: Measured at quick scale: ~60 s incl. the JVM start and the reference run (2026-11-21); margin for load.
NEEDS_S: dict[str, float] = {"tiny": 0.0, "quick": 90.0, "full": 0.0}
DAYS_PER_MILLION = 3
CUSTOMERS = 500
PRODUCTS = 12
USERS = 1_000
CLICKS_PER_BURST = 4
LINEARITY_TOLERANCE = 1.5
SEGMENTS = ["consumer", "smb", "enterprise"]
COUNTRIES = ["DE", "FR", "NL", "US", "GB"]
CATEGORIES = ["coffee", "tea", "bakery", "juice"]
PAGES = ["/", "/menu", "/product", "/cart", "/checkout", "/account"]
KAFKA_PARTITIONS = 4


class SchemaDivergenceError(LakehouseBenchError):
    """The synthetic silver tables would not look like the ones the real silver assets write."""


@dataclass(frozen=True)
class TableShape:
    schema: StructType
    partition_by: list[str]

    def signature(self) -> tuple[list[tuple[str, str]], list[str]]:
        """Names and types in order, and partition columns (nullability is not compared: the gold
        code never depends on it, and Spark marks generated columns non-nullable)."""
        return [(f.name, f.dataType.simpleString()) for f in self.schema.fields], list(self.partition_by)


def reference_shapes(lake: Path) -> dict[str, TableShape]:
    """Schema and partition columns of the silver tables the real pipeline wrote under ``lake``."""
    from deltalake import DeltaTable

    from assets.delta import table_schema

    out = {}
    for name in ("orders", "clicks", "customers", "products"):
        uri = str(lake / "silver" / name)
        if not DeltaTable.is_deltatable(uri):
            raise SchemaDivergenceError(f"reference lake {lake} has no silver/{name} table ({uri})")
        out[name] = TableShape(table_schema(uri), list(DeltaTable(uri).metadata().partition_columns))
    return out


def days_for(events: int) -> int:
    return max(1, round(events * DAYS_PER_MILLION / 1_000_000))


# ----------------------------------------------------------------------------------- synthetic silver


def _catalog(name: str, events: int, days: int, seed: int) -> tuple[DataFrame, dict[str, Column]]:
    """Rows of one synthetic silver table and an expression per column name it knows how to fill.

    Orders: evenly spaced over the days with jitter, random customer/product/quantity, prices as the
    sample generator makes them. Clicks: bursts of ``CLICKS_PER_BURST`` clicks of one user 5 s - 2 min
    apart, so sessions form and split like the sample data's. Customers: a first profile a day before
    the data and one change inside the range (validity intervals as ``customer_history`` builds them).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from assets.sample_data import DEFAULT_START

    spark = _spark()
    start_us = int(DEFAULT_START.timestamp() * 1_000_000)
    span_us = days * 86_400_000_000
    ingest_time = F.expr(f"timestamp_micros({start_us + span_us})")

    def h(salt: int, col: Column | str = "id") -> Column:
        return F.abs(F.xxhash64(F.lit(seed * 1000 + salt), F.col(col) if isinstance(col, str) else col))

    def pick(values: Sequence[str], idx: Column) -> Column:
        return F.element_at(F.array(*[F.lit(v) for v in values]), (idx % len(values) + 1).cast("int"))

    lineage = {
        "_kafka_partition": (F.col("id") % KAFKA_PARTITIONS).cast("int"),
        "_kafka_offset": (F.col("id") / KAFKA_PARTITIONS).cast("bigint"),
        "_ingest_time": ingest_time,
    }
    if name == "orders":
        n = events // 2
        step = span_us / max(1, n)
        ts = F.lit(start_us) + (F.col("id") * F.lit(step)).cast("bigint") + h(1) % max(1, int(step))
        df = spark.range(n).withColumn("_ts", ts).withColumn("_pid", h(2) % PRODUCTS)
        price = (F.lit(1.5) + F.col("_pid") * 0.75) * (F.lit(0.8) + (h(3) % 5) * 0.05)
        cols = {
            "order_id": F.concat(F.lit(f"o-{seed}-"), F.col("id").cast("string")),
            "customer_id": F.format_string("c-%04d", h(4) % CUSTOMERS),
            "product_id": F.format_string("p-%03d", F.col("_pid")),
            "quantity": (F.lit(1) + h(5) % 5).cast("int"),
            "unit_price": F.round(price, 2),
            "event_time": F.expr("timestamp_micros(_ts)"),
            "event_date": F.to_date(F.expr("timestamp_micros(_ts)")),
            **lineage,
        }
        return df, cols
    if name == "clicks":
        n = events - events // 2
        bursts = max(1, math.ceil(n / CLICKS_PER_BURST))
        step = span_us / bursts
        burst = (F.col("id") / CLICKS_PER_BURST).cast("bigint")
        member = F.col("id") % CLICKS_PER_BURST
        base = F.lit(start_us) + (burst * F.lit(step)).cast("bigint")
        ts = F.least(base + member * (F.lit(5_000_000) + h(1) % 115_000_000), F.lit(start_us + span_us - 1))
        df = spark.range(n).withColumn("_ts", ts).withColumn("_burst", burst)
        cols = {
            "event_id": F.concat(F.lit(f"k-{seed}-"), F.col("id").cast("string")),
            "user_id": F.format_string("u-%04d", h(2, "_burst") % USERS),
            "page": pick(PAGES, h(3)),
            "event_time": F.expr("timestamp_micros(_ts)"),
            "event_date": F.to_date(F.expr("timestamp_micros(_ts)")),
            **lineage,
        }
        return df, cols
    if name == "customers":
        cid = (F.col("id") / 2).cast("bigint")
        version = F.col("id") % 2
        change = F.lit(start_us) + h(1, cid) % span_us
        updated = F.when(version == 0, F.lit(start_us - 86_400_000_000)).otherwise(change)
        df = spark.range(CUSTOMERS * 2).withColumn("_cid", cid).withColumn("_updated", updated)
        w = Window.partitionBy("_cid").orderBy("_updated")
        df = df.withColumn("_valid_to", F.lead("_updated").over(w))
        cols = {
            "customer_id": F.format_string("c-%04d", F.col("_cid")),
            "name": F.concat(F.lit("customer "), F.col("_cid").cast("string")),
            "segment": pick(SEGMENTS, F.col("_cid") + version),
            "country": pick(COUNTRIES, F.col("_cid") * 3 + version),
            "updated_at": F.expr("timestamp_micros(_updated)"),
            "valid_from": F.expr("timestamp_micros(_updated)"),
            "valid_to": F.expr("timestamp_micros(_valid_to)"),
            **lineage,
        }
        return df, cols
    if name == "products":
        cols = {
            "product_id": F.format_string("p-%03d", F.col("id")),
            "name": F.concat(F.lit("product "), F.col("id").cast("string")),
            "category": pick(CATEGORIES, F.col("id")),
            "list_price": F.round(F.lit(1.5) + F.col("id") * 0.75, 2),
            **lineage,
        }
        return spark.range(PRODUCTS), cols
    raise ValueError(f"no synthetic generator for silver/{name}")


def _spark() -> SparkSession:
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is None:
        raise LakehouseBenchError("no Spark session is running (call lakehouse_common.spark_session())")
    return session


def synthetic_table(name: str, shape: TableShape, events: int, days: int, seed: int = 1) -> DataFrame:
    """The synthetic silver table with exactly ``shape``'s columns, in its order and types."""
    df, cols = _catalog(name, events, days, seed)
    unknown = [f.name for f in shape.schema.fields if f.name not in cols]
    if unknown:
        raise SchemaDivergenceError(
            f"silver/{name} as the real silver asset writes it has columns {unknown} that the synthetic "
            f"generator in {__name__} does not produce; teach _catalog() to fill them (real schema: "
            f"{shape.schema.simpleString()})"
        )
    return df.select(*[cols[f.name].cast(f.dataType).alias(f.name) for f in shape.schema.fields])


@dataclass
class SilverLake:
    lake: Path
    events: int
    days: list[str]
    orders: int
    clicks: int
    seconds: float


def write_silver(lake: Path, events: int, shapes: Mapping[str, TableShape], seed: int = 1) -> SilverLake:
    """Write the four synthetic silver tables under ``lake`` and check they match ``shapes``."""
    from deltalake import DeltaTable

    from assets.delta import table_schema, write_delta
    from assets.sample_data import DEFAULT_START

    started = time.perf_counter()
    n_days = days_for(events)
    for name in ("customers", "products", "orders", "clicks"):
        shape = shapes[name]
        df = synthetic_table(name, shape, events, n_days, seed)
        uri = str(lake / "silver" / name)
        write_delta(df, uri, mode="overwrite", partition_by=shape.partition_by or None)
        written = TableShape(table_schema(uri), list(DeltaTable(uri).metadata().partition_columns))
        if written.signature() != shape.signature():
            raise SchemaDivergenceError(
                f"synthetic silver/{name} at {uri} differs from the real one: written "
                f"{written.signature()} vs real {shape.signature()}"
            )
    days = [(DEFAULT_START + timedelta(days=i)).date().isoformat() for i in range(n_days)]
    return SilverLake(
        lake, events, days, events // 2, events - events // 2, round(time.perf_counter() - started, 2)
    )


# ----------------------------------------------------------------------------------- measure + verify


def verify_gold(silver: SilverLake) -> dict[str, Any]:
    """Cheap end-to-end checks: every silver order is in exactly one tumbling window and one enriched
    row (with the profile valid at its time), every click in exactly one session, revenue adds up."""
    from pyspark.sql import functions as F

    from assets.delta import read_spark

    spark = _spark()

    def table(layer: str, name: str) -> DataFrame:
        return read_spark(spark, str(silver.lake / layer / name))

    orders = table("silver", "orders").agg(
        F.count("*").alias("n"),
        F.sum("quantity").alias("units"),
        F.sum(F.round(F.col("quantity") * F.col("unit_price"), 2)).alias("revenue"),
    )
    o = orders.first()
    tumbling = table("gold", "revenue_tumbling_5m").agg(
        F.sum("orders").alias("n"),
        F.sum("units").alias("units"),
        F.sum("revenue").alias("revenue"),
        F.count("*").alias("windows"),
    )
    t = tumbling.first()
    enriched = table("gold", "orders_enriched").agg(
        F.count("*").alias("n"),
        F.sum(F.col("segment").isNull().cast("int")).alias("no_profile"),
        F.sum("amount").alias("revenue"),
    )
    e = enriched.first()
    sessions = table("gold", "click_sessions").agg(F.sum("clicks").alias("clicks"), F.count("*").alias("n"))
    s = sessions.first()
    hopping_rows = table("gold", "revenue_hopping_10m").count()

    def close(a: float | None, b: float | None, slack: float) -> bool:
        a, b = a or 0.0, b or 0.0
        return abs(a - b) <= slack + 1e-9 * abs(b)

    checks = {
        "silver_orders": o["n"],
        "gold_tumbling_orders": t["n"],
        "gold_tumbling_units_match": t["units"] == o["units"],
        # each window's revenue is rounded to cents: up to half a cent apart per window
        "gold_tumbling_revenue_match": close(t["revenue"], o["revenue"], 0.005 * t["windows"]),
        "gold_enriched_rows": e["n"],
        "gold_enriched_without_profile": e["no_profile"],
        "gold_enriched_revenue_match": close(e["revenue"], o["revenue"], 0.01),
        "silver_clicks": silver.clicks,
        "gold_session_clicks": s["clicks"],
        "gold_sessions": s["n"],
        "gold_hopping_rows": hopping_rows,
    }
    checks["correct"] = bool(
        o["n"] == silver.orders
        and t["n"] == o["n"]
        and checks["gold_tumbling_units_match"]
        and checks["gold_tumbling_revenue_match"]
        and e["n"] == o["n"]
        and e["no_profile"] == 0
        and checks["gold_enriched_revenue_match"]
        and s["clicks"] == silver.clicks
        and 0 < s["n"] <= silver.clicks
        and hopping_rows > 0
    )
    return checks


def time_gold(silver: SilverLake) -> dict[str, Any]:
    """One gold-only ``daily_job`` run over every day of ``silver.lake``; wall seconds and per step."""
    from dagster import DagsterInstance

    defs = lake_definitions(silver.lake)
    instance = DagsterInstance.ephemeral()
    load = load_avg()
    started = time.perf_counter()
    results = run_selection(defs, silver.days, instance, ["gold"])
    seconds = time.perf_counter() - started
    steps = step_seconds(results)
    return {
        "seconds": round(seconds, 2),
        "gold_steps_s": layer_seconds(steps)["gold"],
        "step_seconds": steps,
        "runs": len(results),
        "loadavg_1m_before": load,
        "loadavg_1m_after": load_avg(),
    }


def linearity(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The verdict over measured sizes (see the module docstring); pure, so it is unit-tested."""
    ok = sorted((r for r in rows if r.get("seconds")), key=lambda r: r["events"])
    if len(ok) < 2:
        return {"target_met": None, "reason": "fewer than two measured sizes"}
    fit = linear_fit([r["events"] for r in ok], [r["seconds"] for r in ok])
    first, last = ok[0], ok[-1]
    growth = {
        "events_ratio": round(last["events"] / first["events"], 2),
        "seconds_ratio": round(last["seconds"] / first["seconds"], 2),
    }
    out: dict[str, Any] = {"fit": fit.as_dict(), **growth, "tolerance": LINEARITY_TOLERANCE}
    correct = all((r.get("verification") or {}).get("correct") for r in ok)
    if len(ok) < 3:
        out.update(target_met=None, reason="two sizes give one marginal step: no trend to judge")
        return out
    m = fit.marginal_s_per_m
    ratio = m[-1] / m[0] if m[0] > 0 else math.inf
    out["marginal_growth"] = round(ratio, 3)
    out["target_met"] = bool(correct and m[-1] > 0 and ratio <= LINEARITY_TOLERANCE)
    out["rule"] = (
        f"marginal s/M of the last step <= {LINEARITY_TOLERANCE} x that of the first step, and every "
        "size's output verified"
    )
    return out


def run(
    sizes: Sequence[int],
    workdir: Path,
    reference: ReferenceLake,
    *,
    warm_up: bool = True,
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Measure gold at each size; one result object per size (the last carries the verdict)."""
    shapes = reference_shapes(reference.lake)
    if warm_up:
        # Compile the gold queries once on a small lake, so the first size does not pay for it alone.
        warm = write_silver(workdir / "gold-warmup", 20_000, shapes)
        time_gold(warm)
    rows: list[dict[str, Any]] = []
    for events in sorted(sizes):
        silver = write_silver(workdir / f"gold-{events}", events, shapes)
        log(f"  gold {events:,}: silver generated ({len(silver.days)} days) in {silver.seconds:.1f}s")
        timing = time_gold(silver)
        verification = verify_gold(silver)
        seconds = timing["seconds"]
        row = result(
            SYSTEM,
            WORKLOAD,
            events,
            events / seconds,
            seconds=seconds,
            seconds_per_million=round(seconds / (events / 1e6), 2),
            days=len(silver.days),
            orders=silver.orders,
            clicks=silver.clicks,
            silver_generate_s=silver.seconds,
            verification=verification,
            **{k: v for k, v in timing.items() if k != "seconds"},
        )
        rows.append(row)
        log(
            f"  gold {events:,}: {seconds:.1f}s ({row['events_per_s']:,} events/s), "
            f"output {'verified' if verification['correct'] else 'WRONG'}"
        )
    verdict = linearity(rows)
    method = {
        "inputs": "synthetic silver tables (spark.range), schema taken from a real pipeline run",
        "reference_pipeline": {"events": sum(reference.records.values()), "seconds": reference.seconds},
        "days_per_million": DAYS_PER_MILLION,
        "dimensions": {"customers": CUSTOMERS, "products": PRODUCTS, "click_users": USERS},
        "timed": "daily_job restricted to the 4 gold assets, all days in one run, ExistingSparkResource",
    }
    for row in rows:
        row["method"] = method
    if rows:
        rows[-1]["linearity"] = verdict
        rows[-1]["target_met"] = verdict.get("target_met")
    return rows


def bench(ctx: BenchContext) -> list[dict[str, Any]]:
    """The run_all hook: sizes by ``ctx.lakehouse_scale`` (quick: small, skipped when time is short)."""
    quiet()
    scale = getattr(ctx, "lakehouse_scale", "quick")
    sizes = SIZES[scale]
    skipped = skipped_for_budget(ctx, WORKLOAD, NEEDS_S[scale], f"sizes {list(sizes)}")
    if skipped is not None:
        return skipped
    spark_session()
    reference = run_reference_pipeline(ctx.client, ctx.workdir)
    return run(sizes, ctx.workdir, reference, warm_up=scale != "tiny")

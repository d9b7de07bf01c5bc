"""Analyst queries on a large gold table: `assets.lake` (DuckDB over deltalake's Arrow datasets) beside
Spark SQL (`spark_views`) on the same table, in the same run.

The table: `gold.orders_enriched` (one row per order event, the orders_enriched schema), synthesised with
Spark (`spark.range` + deterministic hashes, as `benchmarks/systems/lakehouse_gold.py` builds its inputs)
and written through `assets.delta.write_delta`, partitioned by `event_date`, at the lakehouse benchmarks'
density (1M events = 3 days, so 20M events = 60 days).

Two queries, each run by both engines: one day (`WHERE event_date = <a day in the middle>`, revenue by
product) and a full-table aggregate (revenue and orders per day and segment). Each is timed cold (the
first run in a fresh session: reading the Delta log and the Parquet footers included) and warm (best of
`--repeat` further runs). Files read: DuckDB's from its scans (`LakeSession(count_reads=True)` records
the data files each scan is given after pruning, the ones Arrow opens); Spark's from its scan node
metrics (`numFiles`). Results of the two
engines are compared (row counts and sums) before any figure is written.

    .venv/bin/python -m benchmarks.analyst_query                    # 20M events
    .venv/bin/python -m benchmarks.analyst_query --events 2000000   # smaller, when time is short

Writes `benchmarks/results/analyst_query.json`.
"""

from __future__ import annotations

import argparse
import math
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import machine_info, result, write_results

DEFAULT_EVENTS = 20_000_000
DAYS_PER_MILLION = 3
CUSTOMERS = 500
PRODUCTS = 12
SEGMENTS = ["consumer", "smb", "enterprise"]
COUNTRIES = ["DE", "FR", "NL", "US", "GB"]
CATEGORIES = ["coffee", "tea", "bakery", "juice"]
TABLE = "gold.orders_enriched"

ONE_DAY = (
    "SELECT product_id, count(*) AS orders, sum(amount) AS revenue FROM {t} "
    "WHERE event_date = DATE '{day}' GROUP BY product_id ORDER BY product_id"
)
FULL = (
    "SELECT event_date, segment, count(*) AS orders, sum(amount) AS revenue FROM {t} "
    "GROUP BY event_date, segment ORDER BY event_date, segment"
)


def synthesize(spark: Any, uri: str, events: int) -> dict[str, Any]:
    """Write the gold table (one row per order) and return its shape."""
    from pyspark.sql import functions as F

    from assets.delta import write_delta
    from assets.sample_data import DEFAULT_START

    days = max(1, round(events * DAYS_PER_MILLION / 1_000_000))
    start_us = int(DEFAULT_START.timestamp() * 1_000_000)
    span_us = days * 86_400_000_000
    step = span_us / events

    def h(salt: int) -> Any:
        return F.abs(F.xxhash64(F.lit(salt), F.col("id")))

    def pick(values: list[str], idx: Any) -> Any:
        return F.element_at(F.array(*[F.lit(v) for v in values]), (idx % len(values) + 1).cast("int"))

    ts = F.lit(start_us) + (F.col("id") * F.lit(step)).cast("bigint")
    pid = h(2) % PRODUCTS
    cid = h(4) % CUSTOMERS
    quantity = (F.lit(1) + h(5) % 5).cast("int")
    list_price = F.round(F.lit(1.5) + pid * 0.75, 2)
    unit_price = F.round(list_price * (F.lit(0.8) + (h(3) % 5) * 0.05), 2)
    df = (
        spark.range(events)
        .withColumn("_ts", ts)
        .select(
            F.concat(F.lit("o-"), F.col("id").cast("string")).alias("order_id"),
            F.expr("timestamp_micros(_ts)").alias("event_time"),
            F.format_string("c-%04d", cid).alias("customer_id"),
            F.concat(F.lit("customer "), cid.cast("string")).alias("customer_name"),
            pick(SEGMENTS, cid).alias("segment"),
            pick(COUNTRIES, cid * 3).alias("country"),
            F.expr(f"timestamp_micros({start_us - 86_400_000_000})").alias("profile_valid_from"),
            F.format_string("p-%03d", pid).alias("product_id"),
            F.concat(F.lit("product "), pid.cast("string")).alias("product_name"),
            pick(CATEGORIES, pid).alias("category"),
            list_price.cast("double").alias("list_price"),
            quantity.alias("quantity"),
            unit_price.cast("double").alias("unit_price"),
            F.round(quantity * unit_price, 2).cast("double").alias("amount"),
            F.to_date(F.expr("timestamp_micros(_ts)")).alias("event_date"),
        )
    )
    started = time.perf_counter()
    commit = write_delta(df, uri, mode="overwrite", partition_by=["event_date"])
    return {
        "days": days,
        "rows": int(commit.rows_written),
        "files": int(commit.files_added),
        "write_s": round(time.perf_counter() - started, 2),
        "first_day": DEFAULT_START.date().isoformat(),
    }


def _spark_files_read(df: Any) -> int | None:
    """Files Spark's scans read, from the executed plan's `numFiles` metrics (AQE stages included)."""
    try:
        plan = df._jdf.queryExecution().executedPlan()
    except Exception:
        return None
    total = 0
    found = False
    stack = [plan]
    while stack:
        node = stack.pop()
        name = node.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            stack.append(node.executedPlan())
            continue
        if name.endswith("QueryStageExec"):
            stack.append(node.plan())
            continue
        if "Scan" in name:
            try:
                metric = node.metrics().get("numFiles")
                if metric.isDefined():
                    total += int(metric.get().value())
                    found = True
            except Exception:
                pass
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return total if found else None


def _summary(rows: list[dict[str, Any]]) -> tuple[int, int, float]:
    return len(rows), sum(int(r["orders"]) for r in rows), round(sum(float(r["revenue"]) for r in rows), 2)


def measure_duckdb(lake: Path, query: str, repeat: int) -> dict[str, Any]:
    from assets.lake import LakeSession

    started = time.perf_counter()
    with LakeSession(lake, count_reads=True) as session:
        rows = session.arrow(query.format(t=TABLE)).to_pylist()
        cold = time.perf_counter() - started
        files = session.scans.files_read
        warm = []
        for _ in range(repeat):
            t = time.perf_counter()
            session.arrow(query.format(t=TABLE))
            warm.append(time.perf_counter() - t)
    return {
        "cold_s": round(cold, 3),
        "warm_s": round(min(warm), 3) if warm else None,
        "files_read": files,
        "rows": rows,
    }


def measure_spark(spark: Any, lake: Path, query: str, repeat: int) -> dict[str, Any]:
    from assets.lake import spark_views

    started = time.perf_counter()
    spark_views(spark, lake_root=lake, tables=[TABLE])
    df = spark.sql(query.format(t=f"`{TABLE}`"))
    rows = [r.asDict() for r in df.collect()]
    cold = time.perf_counter() - started
    files = _spark_files_read(df)
    warm = []
    for _ in range(repeat):
        t = time.perf_counter()
        spark.sql(query.format(t=f"`{TABLE}`")).collect()
        warm.append(time.perf_counter() - t)
    return {
        "cold_s": round(cold, 3),
        "warm_s": round(min(warm), 3) if warm else None,
        "files_read": files,
        "rows": rows,
    }


def run(events: int, repeat: int, workdir: Path | None = None) -> list[dict[str, Any]]:
    from datetime import date, timedelta

    from benchmarks.systems.lakehouse_common import quiet, spark_session

    quiet()
    spark = spark_session()
    tmp = workdir or Path(tempfile.mkdtemp(prefix="analyst-bench-"))
    lake = tmp / "lake"
    try:
        shape = synthesize(spark, str(lake / "gold" / "orders_enriched"), events)
        day = (date.fromisoformat(shape["first_day"]) + timedelta(days=shape["days"] // 2)).isoformat()
        print(
            f"gold.orders_enriched: {shape['rows']:,} rows, {shape['days']} days, {shape['files']} files, "
            f"written in {shape['write_s']}s"
        )
        # Warm the JVM's query compilation and DuckDB's imports on a tiny query first, untimed.
        spark.range(10).selectExpr("sum(id)").collect()
        out = []
        for name, query in (("one-day", ONE_DAY.replace("{day}", day)), ("full-aggregate", FULL)):
            duck = measure_duckdb(lake, query, repeat)
            sparked = measure_spark(spark, lake, query, repeat)
            same = _summary(duck.pop("rows")) == _summary(sparked.pop("rows"))
            if not same:
                raise RuntimeError(f"{name}: DuckDB and Spark results differ")
            for system, figures in (("streamhouse-lake-duckdb", duck), ("spark-sql", sparked)):
                seconds = figures["warm_s"] or figures["cold_s"]
                rows_scanned = shape["rows"] / shape["days"] if name == "one-day" else shape["rows"]
                out.append(
                    result(
                        system,
                        f"analyst-{name}",
                        events,
                        rows_scanned / seconds if seconds else None,
                        **figures,
                        table_files=shape["files"],
                        table_rows=shape["rows"],
                        table_days=shape["days"],
                        day=day if name == "one-day" else None,
                        results_match=same,
                        **machine_info(),
                    )
                )
                print(
                    f"{name:>15} {system:>24}: cold {figures['cold_s']:7.3f}s  "
                    f"warm {figures['warm_s']:7.3f}s  "
                    f"files read {figures['files_read']} of {shape['files']}"
                )
        for row in out:
            row["method"] = {
                "table": "synthetic gold.orders_enriched, one row per order event, "
                "write_delta partitioned by event_date",
                "events_note": "events = rows of the table (every event is one order here)",
                "cold": "first run in a fresh session/view registration (log + footers read)",
                "warm": f"best of {repeat} further runs",
                "duckdb_files": "data files opened, counted at the filesystem (LakeSession count_reads)",
                "spark_files": "numFiles metric of Spark's scan nodes",
                "spark_master": spark.sparkContext.master,
            }
        return out
    finally:
        if workdir is None:
            shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--events", type=int, default=DEFAULT_EVENTS, help="rows (order events) of the gold table"
    )
    parser.add_argument("--repeat", type=int, default=3, help="warm runs per engine and query")
    args = parser.parse_args()
    if args.events < 1 or not math.isfinite(args.events):
        parser.error("--events must be positive")
    started = time.perf_counter()
    rows = run(args.events, args.repeat)
    path = write_results("analyst_query", rows)
    print(f"wrote {path} ({time.perf_counter() - started:.0f}s)")


if __name__ == "__main__":
    main()

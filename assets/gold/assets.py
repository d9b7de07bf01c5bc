"""Gold assets: windowed aggregates and the as-of enriched orders, daily partitions, with plots.

Every run reads its silver inputs pinned at one version, recomputes only the requested days and
replaces exactly those Delta partitions in one commit, recording the input versions in both the
Dagster metadata and the Delta commit.
"""

from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from dagster import (
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    MaterializeResult,
    MetadataValue,
    TimeWindowPartitionMapping,
    asset,
)
from dagster_pyspark import PySparkResource

from assets import plots
from assets.gold import transforms as T
from assets.lineage import (
    commit_lineage,
    png_metadata,
    read_partitions,
    table_metadata,
    upstream_inputs,
)
from assets.sample_data import CLICKS, CUSTOMERS, ORDERS, PRODUCTS
from assets.silver.assets import MissingInputError, silver_key
from orchestration.partitions import BACKFILL_POLICY, DAILY, to_date
from orchestration.resources import LakeResource

TUMBLING = "revenue_tumbling_5m"
HOPPING = "revenue_hopping_10m"
SESSIONS = "click_sessions"
ENRICHED = "orders_enriched"
GOLD_TABLES = [TUMBLING, HOPPING, SESSIONS, ENRICHED]
#: Partition column of each gold table.
GOLD_PARTITION = {
    TUMBLING: "window_date",
    HOPPING: "window_date",
    SESSIONS: "session_date",
    ENRICHED: "event_date",
}


def gold_key(name: str) -> AssetKey:
    return AssetKey(["gold", name])


def _pinned(lake: LakeResource, topic: str) -> tuple[str, int]:
    from assets.lineage import pinned_version

    uri = lake.table_uri("silver", topic)
    version = pinned_version(uri)
    if version is None:
        raise MissingInputError(f"silver table {uri} does not exist yet: materialize silver/{topic} first")
    return uri, version


def _span(dates: list[date], before: int, after: int) -> list[date]:
    days = {d + timedelta(days=i) for d in dates for i in range(-before, after + 1)}
    return sorted(days)


def _read_silver(spark: Any, lake: LakeResource, topic: str, days: list[date] | None, inputs: dict) -> Any:
    uri, version = _pinned(lake, topic)
    inputs[f"silver/{topic}"] = version
    if days is None:
        return read_partitions(spark, uri, version=version)
    return read_partitions(spark, uri, version=version, column="event_date", values=days)


def _write_gold(
    context: AssetExecutionContext,
    spark: Any,
    lake: LakeResource,
    name: str,
    df: Any,
    dates: list[date],
    inputs: dict[str, int],
    plot: Callable[[Any], bytes | None],
) -> MaterializeResult:
    from pyspark import StorageLevel

    from assets.delta import write_delta

    uri = lake.table_uri("gold", name)
    col = GOLD_PARTITION[name]
    df = df.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        commit = write_delta(
            df,
            uri,
            mode="overwrite_where",
            partition_by=[col],
            where={col: dates},
            commit_metadata=commit_lineage(inputs, partitions=",".join(d.isoformat() for d in dates)),
        )
        upstream = MetadataValue.json(upstream_inputs(lake.lake_root, inputs))
        meta = table_metadata(
            uri, commit, df, inputs=inputs, partitions=dates, extra={"upstream_versions": upstream}
        )
        png = plot(df)
    finally:
        df.unpersist()
    if png is not None:
        key = context.partition_key_range
        label = key.start if key.start == key.end else f"{key.start}_{key.end}"
        meta.update(png_metadata(png, Path(lake.plots_dir) / name / f"{label}_v{commit.version}.png"))
    context.log.info(
        f"gold/{name}: {commit.rows_written:,} rows for {len(dates)} day(s) → version {commit.version}"
    )
    return MaterializeResult(metadata=meta)


def _series(
    df: Any, x: str, y: str, group: str | None = None, top: int = 5
) -> dict[str, list[tuple[Any, float]]]:
    from pyspark.sql import functions as F

    if group is None:
        rows = df.groupBy(x).agg(F.sum(y).alias("y")).orderBy(x).collect()
        return {y: [(r[x], float(r["y"] or 0)) for r in rows]}
    leaders = [
        r[group] for r in df.groupBy(group).agg(F.sum(y).alias("t")).orderBy(F.desc("t")).limit(top).collect()
    ]
    rows = (
        df.filter(F.col(group).isin(leaders)).groupBy(group, x).agg(F.sum(y).alias("y")).orderBy(x).collect()
    )
    out: dict[str, list[tuple[Any, float]]] = {g: [] for g in leaders}
    for r in rows:
        out[r[group]].append((r[x], float(r["y"] or 0)))
    return out


def _tumbling_plot(df: Any) -> bytes:
    return plots.line_plot(
        _series(df, "window_start", "revenue", "product_id"), "Revenue per 5 min (top products)", "revenue"
    )


def _hopping_plot(df: Any) -> bytes:
    return plots.line_plot(
        _series(df, "window_start", "revenue"), "Revenue, 10-min windows every minute", "revenue"
    )


def _sessions_plot(df: Any) -> bytes:
    rows = df.select((df.duration_s / 60).alias("m")).limit(200_000).collect()
    return plots.histogram([float(r["m"]) for r in rows], "Session length", "minutes")


def _enriched_plot(df: Any) -> bytes:
    from pyspark.sql import functions as F

    rows = (
        df.groupBy(F.coalesce("segment", F.lit("(no profile)")).alias("s"))
        .agg(F.sum("amount").alias("a"))
        .collect()
    )
    return plots.bar_plot(
        {r["s"]: float(r["a"] or 0) for r in sorted(rows, key=lambda r: r["s"])},
        "Revenue by segment",
        "revenue",
    )


def _deps(topic: str, before: int = 0, after: int = 0) -> AssetDep:
    return AssetDep(
        silver_key(topic),
        partition_mapping=TimeWindowPartitionMapping(
            start_offset=-before, end_offset=after, allow_nonexistent_upstream_partitions=True
        ),
    )


def _gold(name: str, deps: list[Any], description: str):
    return asset(
        key=gold_key(name),
        deps=deps,
        partitions_def=DAILY,
        backfill_policy=BACKFILL_POLICY,
        group_name="gold",
        kinds={"spark", "delta"},
        description=description,
    )


@_gold(TUMBLING, [_deps(ORDERS)], "Revenue, orders and units per product per 5-minute tumbling window.")
def revenue_tumbling_5m(
    context: AssetExecutionContext, lake: LakeResource, pyspark: PySparkResource
) -> MaterializeResult:
    spark = pyspark.spark_session
    dates = [to_date(k) for k in context.partition_keys]
    inputs: dict[str, int] = {}
    orders = _read_silver(spark, lake, ORDERS, dates, inputs)
    return _write_gold(
        context, spark, lake, TUMBLING, T.revenue_tumbling(orders, dates), dates, inputs, _tumbling_plot
    )


@_gold(
    HOPPING,
    [_deps(ORDERS, after=1)],
    "Revenue, orders and distinct customers per 10-minute window advancing by 1 minute.",
)
def revenue_hopping_10m(
    context: AssetExecutionContext, lake: LakeResource, pyspark: PySparkResource
) -> MaterializeResult:
    spark = pyspark.spark_session
    dates = [to_date(k) for k in context.partition_keys]
    inputs: dict[str, int] = {}
    orders = _read_silver(spark, lake, ORDERS, _span(dates, 0, 1), inputs)
    return _write_gold(
        context, spark, lake, HOPPING, T.revenue_hopping(orders, dates), dates, inputs, _hopping_plot
    )


@_gold(
    SESSIONS,
    [_deps(CLICKS, before=1, after=1)],
    "User sessions: clicks separated by less than 30 minutes, by session start date.",
)
def click_sessions(
    context: AssetExecutionContext, lake: LakeResource, pyspark: PySparkResource
) -> MaterializeResult:
    spark = pyspark.spark_session
    dates = [to_date(k) for k in context.partition_keys]
    inputs: dict[str, int] = {}
    clicks = _read_silver(spark, lake, CLICKS, _span(dates, 1, 1), inputs)
    return _write_gold(
        context, spark, lake, SESSIONS, T.click_sessions(clicks, dates), dates, inputs, _sessions_plot
    )


@_gold(
    ENRICHED,
    [_deps(ORDERS), AssetDep(silver_key(CUSTOMERS)), AssetDep(silver_key(PRODUCTS))],
    "Orders joined with the customer profile valid at order time and the product.",
)
def orders_enriched(
    context: AssetExecutionContext, lake: LakeResource, pyspark: PySparkResource
) -> MaterializeResult:
    spark = pyspark.spark_session
    dates = [to_date(k) for k in context.partition_keys]
    inputs: dict[str, int] = {}
    orders = _read_silver(spark, lake, ORDERS, dates, inputs)
    customers = _read_silver(spark, lake, CUSTOMERS, None, inputs)
    products = _read_silver(spark, lake, PRODUCTS, None, inputs)
    df = T.enriched_orders(orders, customers, products)
    return _write_gold(context, spark, lake, ENRICHED, df, dates, inputs, _enriched_plot)


GOLD_ASSETS: list[AssetsDefinition] = [
    revenue_tumbling_5m,
    revenue_hopping_10m,
    click_sessions,
    orders_enriched,
]

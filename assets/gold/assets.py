"""Gold assets: one per declared gold table (``gold_tables`` of pipeline.yaml), daily partitions, plots.

What a table computes is ``assets.gold.declared``'s (windows in ``assets.gold.windows``); this module
is what every table shares.

Every run reads its silver inputs pinned at one version, recomputes the requested days whose input
partitions changed since they were last built (``assets.gold.freshness``; all of them with
``full_refresh``) and replaces exactly those Delta partitions in one commit, recording the input
versions in both the Dagster metadata and the Delta commit.
"""

from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from dagster import (
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    Config,
    Failure,
    MaterializeResult,
    MetadataValue,
    TimeWindowPartitionMapping,
    asset,
)
from dagster_pyspark import PySparkResource
from pydantic import Field

from assets import contract, plots
from assets.automation import DAILY_AUTOMATION
from assets.gold.declared import GoldTable, InputTable, gold_table
from assets.gold.freshness import GoldInput, GoldPlan, plan_gold
from assets.lineage import (
    commit_lineage,
    read_partitions,
    table_metadata,
    up_to_date_metadata,
    upstream_inputs,
)
from assets.owners import owners_of
from assets.partitions import BACKFILL_POLICY, DAILY, to_date
from assets.pipeline.active import active_pipeline
from assets.pipeline.fingerprint import changed_logic, logic_fingerprint
from assets.pipeline.model import Chart
from assets.resources import LakeResource
from assets.silver.assets import MissingInputError

#: The configured pipeline's gold tables, as declared.
GOLD_BUILDS: dict[str, GoldTable] = {
    name: gold_table(active_pipeline(), name) for name in active_pipeline().gold_tables
}
GOLD_TABLES = list(GOLD_BUILDS)
#: Partition column of each gold table.
GOLD_PARTITION = {name: build.partition for name, build in GOLD_BUILDS.items()}


#: Fetches the given columns of the written rows as an Arrow table (from the Arrow result or the cache).
Fetch = Callable[[list[str]], Any]


def gold_key(name: str) -> AssetKey:
    return AssetKey(["gold", name])


class GoldConfig(Config):
    full_refresh: bool = Field(
        default=False,
        description="recompute every selected day, even those whose silver inputs did not change since "
        "they were last built (after a change to the gold logic)",
    )
    input_versions: dict[str, int] = Field(
        default_factory=dict,
        description="read these silver inputs as of a Delta version instead of their latest, "
        "'silver/<table>' -> version (`streamhouse replay lake --as-of-version`)",
    )


def _input(lake: LakeResource, table: InputTable) -> GoldInput:
    """An input table pinned at its current version; event tables are read by day."""
    from assets.lineage import pinned_version

    uri = lake.table_uri(table.layer, table.name)
    version = pinned_version(uri)
    if version is None:
        raise MissingInputError(
            f"{table.layer} table {uri} does not exist yet: materialize {table.path} first"
        )
    return GoldInput(table.path, uri, version, table.column, table.before, table.after)


def _read(spark: Any, inp: GoldInput, days: list[date]) -> Any:
    if inp.column is None:
        return read_partitions(spark, inp.uri, version=inp.version)
    return read_partitions(spark, inp.uri, version=inp.version, column=inp.column, values=inp.span(days))


def _unchanged(
    lake: LakeResource, name: str, plan: GoldPlan, inputs: dict[str, int], skipped: str = ""
) -> MaterializeResult:
    """No requested day had a changed input (or any input at all): nothing is read or written."""
    days: dict[str, Any] = {
        "recomputed_days": MetadataValue.json([]),
        "unchanged_days": MetadataValue.json([d.isoformat() for d in plan.unchanged]),
    }
    if skipped:
        days["skipped"] = MetadataValue.text(skipped)
    return MaterializeResult(metadata=up_to_date_metadata(lake.table_uri("gold", name), inputs, days))


def _no_silver(
    context: AssetExecutionContext, lake: LakeResource, name: str, table: InputTable
) -> MaterializeResult | None:
    """A run whose first (event) input was never written (its days had no input data): nothing to do."""
    from assets.lineage import pinned_version

    if pinned_version(lake.table_uri(table.layer, table.name)) is not None:
        return None
    keys = context.partition_keys
    days = ", ".join(keys) if len(keys) <= 3 else f"{keys[0]}..{keys[-1]}"
    context.log.info(f"gold/{name}: {table.path} has no data yet, no input data for {days}")
    return MaterializeResult(
        metadata={
            "table_uri": MetadataValue.path(lake.table_uri("gold", name)),
            "commit_skipped": MetadataValue.bool(True),
            "rows_written": MetadataValue.int(0),
            "skipped": MetadataValue.text(f"no input data for {days}"),
        }
    )


def _holds_rows(uri: str, name: str, days: list[date]) -> bool:
    """Whether the gold table has files in any of ``days`` (a recompute would replace them)."""
    from assets.delta.changes import PartitionFiles
    from assets.lineage import pinned_version

    version = pinned_version(uri)
    if version is None:
        return False
    files = PartitionFiles.load(uri, version, GOLD_PARTITION[name])
    return bool(files.of([d.isoformat() for d in days]))


def _materialize(
    context: AssetExecutionContext,
    config: GoldConfig,
    lake: LakeResource,
    pyspark: PySparkResource,
    name: str,
    inputs: list[GoldInput],
    compute: Callable[[dict[str, Any], list[date]], Any],
    plot: Callable[[Fetch], plots.Plot | None],
) -> MaterializeResult:
    """Recompute the requested days whose inputs changed (``assets.gold.freshness``) and replace them."""
    from assets.replay.pins import pin_inputs

    dates = [to_date(k) for k in context.partition_keys]
    logic = logic_fingerprint(active_pipeline(), name)
    if not config.full_refresh and (why := changed_logic("gold", name, lake.table_uri("gold", name), logic)):
        raise Failure(description=why)
    inputs = pin_inputs(inputs, config.input_versions)
    versions = {inp.name: inp.version for inp in inputs}
    plan = plan_gold(lake.table_uri("gold", name), inputs, dates, rebuild=config.full_refresh)
    if plan.unchanged:
        context.log.info(
            f"gold/{name}: {len(plan.unchanged)} of {len(dates)} day(s) have unchanged inputs and are kept"
        )
    if not plan.stale:
        return _unchanged(lake, name, plan, versions)
    if plan.input_rows == 0 and not _holds_rows(lake.table_uri("gold", name), name, plan.stale):
        # The stale days' event inputs are empty and there is nothing to replace: no Delta version.
        days = ", ".join(d.isoformat() for d in plan.stale)
        context.log.info(f"gold/{name}: no input data for {days}; nothing written")
        return _unchanged(lake, name, plan, versions, skipped=f"no input data for {days}")
    spark = pyspark.spark_session
    df = compute({inp.name.split("/", 1)[1]: _read(spark, inp, plan.stale) for inp in inputs}, plan.stale)
    return _write_gold(context, lake, name, df, plan, versions, plot, logic)


#: A recompute whose inputs hold at most this many rows (a gold table never has more rows than its
#: day-partitioned input) is collected to the driver as Arrow, a few tens of MB at most, and written with
#: the JVM-free writer: an incremental run's table then costs one Spark job instead of four (compute and
#: cache, write, preview, plot). Larger recomputes (backfills, full runs) stay in Spark end to end.
SMALL_RESULT_ROWS = 250_000


def _write_gold(
    context: AssetExecutionContext,
    lake: LakeResource,
    name: str,
    df: Any,
    plan: GoldPlan,
    inputs: dict[str, int],
    plot: Callable[[Fetch], plots.Plot | None],
    logic: str,
) -> MaterializeResult:
    from pyspark import StorageLevel

    from assets.delta import write_delta, write_delta_arrow

    uri = lake.table_uri("gold", name)
    col = GOLD_PARTITION[name]
    dates = plan.stale
    options: dict[str, Any] = {
        "mode": "overwrite_where",
        "partition_by": [col],
        "where": {col: dates},
        # Columns the contract adds (``missing_dimensions``, ``duration_ms``) join existing tables; their
        # older days hold NULL until recomputed. Type changes are still refused by the Delta layer.
        "schema_evolution": True,
        "app_transactions": plan.transactions,
        "commit_metadata": commit_lineage(inputs, logic, partitions=",".join(d.isoformat() for d in dates)),
    }
    cached = None
    try:
        if plan.input_rows is not None and plan.input_rows <= SMALL_RESULT_ROWS:
            frame = df.toArrow()
            commit = write_delta_arrow(frame, uri, **options)
            png = plot(lambda columns: frame.select(columns))
        else:
            frame = cached = df.persist(StorageLevel.MEMORY_AND_DISK)
            commit = write_delta(frame, uri, **options)
            png = plot(lambda columns: cached.select(*columns).toArrow())
        upstream = MetadataValue.json(upstream_inputs(lake.lake_root, inputs))
        extra = {
            "upstream_versions": upstream,
            "recomputed_days": MetadataValue.json([d.isoformat() for d in dates]),
            "unchanged_days": MetadataValue.json([d.isoformat() for d in plan.unchanged]),
        }
        meta = table_metadata(uri, commit, frame, inputs=inputs, partitions=dates, extra=extra)
    finally:
        if cached is not None:
            cached.unpersist()
    if png is not None:
        key = context.partition_key_range
        label = key.start if key.start == key.end else f"{key.start}_{key.end}"
        meta.update(plots.plot_metadata(png, Path(lake.plots_dir) / name / f"{label}_v{commit.version}.png"))
    context.log.info(
        f"gold/{name}: {commit.rows_written:,} rows for {len(dates)} day(s) → version {commit.version}"
    )
    return MaterializeResult(metadata=meta)


def _series(
    table: Any, x: str, y: str, group: str | None = None, top: int = 5
) -> dict[str, list[tuple[Any, float]]]:
    """Plot series summed per ``x`` (per ``group`` for the ``top`` groups by total), aggregated locally:
    gold window tables are small (a few thousand rows per day)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = f"{y}_sum"
    if group is None:
        agg = table.group_by(x).aggregate([(y, "sum")]).sort_by(x)
        return {
            y: [(k, float(v or 0)) for k, v in zip(agg[x].to_pylist(), agg[total].to_pylist(), strict=True)]
        }
    ranked = table.group_by(group).aggregate([(y, "sum")]).sort_by([(total, "descending")])
    leaders = ranked[group].to_pylist()[:top]
    chosen = table.filter(pc.is_in(table[group], value_set=pa.array(leaders, table.schema.field(group).type)))
    agg = chosen.group_by([group, x]).aggregate([(y, "sum")]).sort_by(x)
    out: dict[str, list[tuple[Any, float]]] = {g: [] for g in leaders}
    for g, k, v in zip(agg[group].to_pylist(), agg[x].to_pylist(), agg[total].to_pylist(), strict=True):
        out[g].append((k, float(v or 0)))
    return out


def chart_plot(chart: Chart | None, table: str) -> Callable[[Fetch], plots.Plot | None]:
    """The declared chart of a gold table, drawn from the rows a run wrote."""
    if chart is None:
        return lambda _fetch: None
    title = chart.title or (
        f"{table}: {chart.x}" if chart.kind == "histogram" else f"{table}: {chart.y} by {chart.x}"
    )

    def draw(fetch: Fetch) -> plots.Plot:
        if chart.kind == "histogram":
            values = fetch([chart.x]).column(chart.x).to_pylist()[:200_000]
            return plots.histogram([float(v) for v in values if v is not None], title, chart.x)
        y = chart.y or ""
        if chart.kind == "bar":
            import pyarrow.compute as pc

            rows = fetch([chart.x, y])
            labels = pc.cast(pc.fill_null(pc.cast(rows[chart.x], "string"), "(none)"), "string")
            agg = rows.set_column(0, chart.x, labels).group_by(chart.x).aggregate([(y, "sum")])
            totals = dict(zip(agg[chart.x].to_pylist(), agg[f"{y}_sum"].to_pylist(), strict=True))
            return plots.bar_plot({k: float(totals[k] or 0) for k in sorted(totals)}, title, y)
        columns = [chart.x, y, *([chart.series] if chart.series else [])]
        return plots.line_plot(_series(fetch(columns), chart.x, y, chart.series), title, y)

    return draw


def _deps(table: InputTable) -> AssetDep:
    key = AssetKey([table.layer, table.name])
    if table.column is None:
        return AssetDep(key)
    return AssetDep(
        key,
        partition_mapping=TimeWindowPartitionMapping(
            start_offset=-table.before, end_offset=table.after, allow_nonexistent_upstream_partitions=True
        ),
    )


def build_gold_asset(build: GoldTable) -> AssetsDefinition:
    """The daily asset of one declared gold table: recompute the days whose inputs changed."""
    declared = active_pipeline().gold_tables[build.name]
    plot = chart_plot(declared.chart, build.name)
    first = build.inputs[0]

    @asset(
        key=gold_key(build.name),
        deps=[_deps(t) for t in build.inputs],
        partitions_def=DAILY,
        backfill_policy=BACKFILL_POLICY,
        group_name="gold",
        kinds={"spark", "delta"},
        owners=owners_of(declared.owners, active_pipeline().owners),
        automation_condition=DAILY_AUTOMATION,
        description=contract.description(
            f"gold.{build.name}", declared.description or f"Gold table {build.name}."
        ),
    )
    def _gold(
        context: AssetExecutionContext, config: GoldConfig, lake: LakeResource, pyspark: PySparkResource
    ) -> MaterializeResult:
        if (skipped := _no_silver(context, lake, build.name, first)) is not None:
            return skipped
        inputs = [_input(lake, t) for t in build.inputs]
        return _materialize(context, config, lake, pyspark, build.name, inputs, build.compute, plot)

    return _gold


GOLD_ASSETS: list[AssetsDefinition] = [build_gold_asset(build) for build in GOLD_BUILDS.values()]

"""Silver assets: typed and deduplicated events per day, rejected rows in quarantine tables.

``silver/orders`` and ``silver/clicks`` are daily partitions. A run reads only the bronze records each
requested day has not seen yet and appends what they yield (``assets.silver.watermarks``); days never
built, or a ``full_refresh``, are rebuilt and replaced atomically. ``silver/customers`` (profile history
with validity intervals) and ``silver/products`` are small dimension tables rebuilt as a whole, and only
when their bronze table changed.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    Config,
    MaterializeResult,
    MetadataValue,
    multi_asset,
)
from dagster_pyspark import PySparkResource
from pydantic import Field

from assets import contract
from assets.automation import DAILY_AUTOMATION
from assets.bronze.assets import bronze_key
from assets.delta import AppTransaction
from assets.lineage import (
    commit_lineage,
    pinned_version,
    read_partitions,
    table_metadata,
    up_to_date_metadata,
)
from assets.owners import OWNERS
from assets.partitions import BACKFILL_POLICY, DAILY, to_date
from assets.resources import LakeResource
from assets.sample_data import CLICKS, CUSTOMERS, ORDERS, PRODUCTS
from assets.silver.transform import (
    FAILED,
    PARTITION_COL,
    QUARANTINE_KEY,
    SPECS,
    UNKNOWN,
    SchemaRule,
    SchemaRuleError,
    SilverSpec,
    customer_history,
    deduplicate,
    row_profile,
    split,
)
from assets.silver.watermarks import (
    BronzeReadPlan,
    bronze_table_id,
    dimension_watermark_id,
    plan_bronze_read,
    read_plan,
    transaction_version,
)
from edge.errors import StreamhouseError

#: Explicit schema-evolution rules, per topic: the *only* way a silver table gains columns.
#: Example: ``SCHEMA_RULES[ORDERS] = SchemaRule({"coupon": "string"})``.
SCHEMA_RULES: dict[str, SchemaRule] = {}


class MissingInputError(StreamhouseError):
    pass


class SilverConfig(Config):
    add_columns: dict[str, str] = Field(
        default_factory=dict,
        description="schema rule for this run: new nullable payload fields to add, name -> type",
    )
    full_refresh: bool = Field(
        default=False,
        description="rebuild the selected days from every bronze record of those days (after a change to "
        "the silver logic or a bronze replay), instead of reading only the records added since each "
        "day was last built",
    )
    input_versions: dict[str, int] = Field(
        default_factory=dict,
        description="read the bronze input as of this Delta version instead of its latest, "
        "'bronze/<topic>' -> version (`streamhouse replay lake --as-of-version`)",
    )


def silver_key(topic: str) -> AssetKey:
    return AssetKey(["silver", topic])


def quarantine_key(topic: str) -> AssetKey:
    """``quarantine/<topic>_quarantine``: a graph node named unlike the silver table it guards (the
    Delta table stays at ``<lake_root>/quarantine/<topic>``)."""
    return AssetKey(["quarantine", f"{topic}_quarantine"])


def _rule(topic: str, config: SilverConfig) -> SchemaRule:
    base = SCHEMA_RULES.get(topic, SchemaRule())
    rule = SchemaRule({**base.add_columns, **config.add_columns})
    rule.validate(topic, SPECS[topic].contract)  # refused even when there is nothing to read
    return rule


def _bronze_version(lake: LakeResource, topic: str, pins: Mapping[str, int] | None = None) -> tuple[str, int]:
    from assets.replay.pins import pinned_input

    uri = lake.table_uri("bronze", topic)
    version = pinned_input(uri, f"bronze/{topic}", pins)
    if version is None:
        raise MissingInputError(f"bronze table {uri} does not exist yet: materialize bronze/{topic} first")
    return uri, version


def _align(df: Any, table_uri: str, rule: SchemaRule) -> tuple[Any, bool]:
    """Match the existing table: columns a rule once added stay (null); new rule columns evolve it."""
    from pyspark.sql import functions as F

    from assets.delta import table_exists, table_schema

    if not table_exists(table_uri):
        return df, False
    existing = {f.name: f.dataType for f in table_schema(table_uri).fields}
    for name, data_type in existing.items():
        if name not in df.columns:
            df = df.withColumn(name, F.lit(None).cast(data_type))
    evolves = any(name not in existing for name in df.columns)
    if evolves:
        new = [c for c in df.columns if c not in existing]
        unknown = [c for c in new if c not in rule.add_columns]
        if unknown:
            raise SchemaRuleError(
                f"{table_uri}: columns {unknown} are not in the contract or a schema rule; add them with "
                "SCHEMA_RULES or the asset config `add_columns`",
                table=table_uri,
            )
    return df, evolves


def _needs_new_columns(table_uri: str, rule: SchemaRule) -> bool:
    """A rule adds columns the table lacks: the requested days must be rebuilt to fill them."""
    from assets.delta import table_exists, table_schema

    if not rule.add_columns or not table_exists(table_uri):
        return False
    existing = {f.name for f in table_schema(table_uri).fields}
    return any(name not in existing for name in rule.add_columns)


def _existing(spark: Any, table_uri: str, days: list[date], columns: list[str]) -> Any | None:
    """``columns`` of the rows ``table_uri`` holds on ``days`` (None when there is nothing to match)."""
    from assets.delta import table_exists

    if not days or not table_exists(table_uri):
        return None
    version = pinned_version(table_uri)
    return read_partitions(spark, table_uri, version=version, column=PARTITION_COL, values=days).select(
        *columns
    )


def _without(df: Any, existing: Any | None, columns: list[str]) -> Any:
    return df if existing is None else df.join(existing, columns, "left_anti")


@dataclass
class _Target:
    """How a run writes: the days it rebuilds (None: the whole table) and the days it appends to."""

    rebuild_days: list[date] | None
    append_days: list[date]
    transactions: list[AppTransaction]
    extra: dict[str, Any]
    #: append days that have records to read: the only ones whose existing keys must be looked up
    lookup_days: list[date] = field(default_factory=list)
    #: append days whose bronze records may already be in the tables (a rescan, or one table ahead of
    #: the other after a failed run); elsewhere new bronze files hold only records never read before
    overlap_days: list[date] = field(default_factory=list)
    #: few enough bronze records to collect the results as Arrow (``SMALL_BATCH_ROWS``)
    small: bool = False

    @property
    def days(self) -> list[date] | None:
        return None if self.rebuild_days is None else sorted([*self.rebuild_days, *self.append_days])


#: A run reading at most this many bronze records collects its silver and quarantine rows as Arrow and
#: writes them without the JVM: two Spark jobs fewer per table for an incremental run's few thousand rows.
SMALL_BATCH_ROWS = 250_000


def _write(
    df: Any, uri: str, target: _Target, *, evolves: bool, lineage: dict[str, str], partitioned: bool
) -> Any:
    """``df`` is a Spark DataFrame (written by Spark) or an Arrow table (written by pyarrow)."""
    import pyarrow as pa

    from assets.delta import write_delta, write_delta_arrow

    write: Any = write_delta_arrow if isinstance(df, pa.Table) else write_delta
    common: dict[str, Any] = {
        "schema_evolution": evolves,
        "commit_metadata": lineage,
        "app_transactions": target.transactions,
    }
    if partitioned:
        common["partition_by"] = [PARTITION_COL]
    if target.rebuild_days is None:
        return write(df, uri, mode="overwrite", **common)
    if target.rebuild_days:
        return write(
            df,
            uri,
            mode="overwrite_where",
            where={PARTITION_COL: target.rebuild_days},
            append_outside_where=True,
            **common,
        )
    return write(df, uri, mode="append", **common)


def _quarantine_evolves(q_uri: str, columns: list[str]) -> bool:
    """A quarantine table written before it recorded the failed expectations and run id gains them."""
    from assets.delta import table_exists, table_schema

    if not table_exists(q_uri):
        return False
    existing = {f.name for f in table_schema(q_uri).fields}
    return any(c not in existing for c in columns)


def _write_pair(
    spark: Any,
    spec: SilverSpec,
    lake: LakeResource,
    bronze_version: int,
    bronze_df: Any,
    rule: SchemaRule,
    target: _Target,
    run_id: str = "",
) -> tuple[MaterializeResult, MaterializeResult]:
    """Silver and quarantine rows from ``bronze_df``; appended rows skip keys the tables already hold.

    Nothing disappears: the metadata's ``rows_in`` (bronze records read) equals ``rows_passed`` (rows
    passing every drop expectation: written, or dropped as duplicates) plus ``rows_quarantined``.
    """
    from pyspark import StorageLevel

    topic = spec.topic
    silver_uri = lake.table_uri("silver", topic)
    q_uri = lake.table_uri("quarantine", topic)
    frames = split(bronze_df, spec, rule, run_id)
    frames.typed.persist(StorageLevel.MEMORY_AND_DISK)
    valid = quarantine = None
    try:
        if topic == CUSTOMERS:
            valid = customer_history(frames.valid)
        else:
            valid = deduplicate(frames.valid, spec.key, latest=spec.time_col is None)
        valid = _without(
            valid, _existing(spark, silver_uri, target.lookup_days, list(spec.key)), list(spec.key)
        )
        quarantine = _without(
            frames.quarantine,
            _existing(spark, q_uri, target.overlap_days, list(QUARANTINE_KEY)),
            list(QUARANTINE_KEY),
        )
        valid, evolves = _align(valid, silver_uri, rule)
        if target.small:
            valid, quarantine = valid.toArrow(), quarantine.toArrow()
        else:
            valid = valid.persist(StorageLevel.MEMORY_AND_DISK)
            quarantine = quarantine.persist(StorageLevel.MEMORY_AND_DISK)
        inputs = {f"bronze/{topic}": bronze_version}
        dates = target.days
        lineage = commit_lineage(inputs, partitions=",".join(d.isoformat() for d in dates or []))
        commit = _write(
            valid, silver_uri, target, evolves=evolves, lineage=lineage, partitioned=dates is not None
        )
        q_evolves = _quarantine_evolves(q_uri, ["failed_expectations", "run_id"])
        q_commit = _write(quarantine, q_uri, target, evolves=q_evolves, lineage=lineage, partitioned=True)
        profile = row_profile(frames.typed, spec, rule)
        typed_valid = profile.pop("", 0)
        unknown = profile.pop(UNKNOWN, [])
        failed = profile.pop(FAILED, {})
        rejected = sum(profile.values())
        extra: dict[str, Any] = {
            "duplicates_dropped": MetadataValue.int(
                max(0, typed_valid - commit.rows_written) if topic != CUSTOMERS else 0
            ),
            "quarantined": MetadataValue.int(q_commit.rows_written),
            "rows_in": MetadataValue.int(typed_valid + rejected),
            "rows_passed": MetadataValue.int(typed_valid),
            "rows_quarantined": MetadataValue.int(rejected),
            "expectations_dropped": MetadataValue.json(
                {e.name: failed.get(e.name, 0) for e in spec.drop_expectations}
            ),
            "unknown_payload_fields": MetadataValue.json(unknown),
            "schema_rule": MetadataValue.json(dict(rule.add_columns)),
            "schema_evolved": MetadataValue.bool(evolves),
            **target.extra,
        }
        replaced = target.rebuild_days  # appended days are listed in `appended_days`
        meta = table_metadata(silver_uri, commit, valid, inputs=inputs, partitions=replaced, extra=extra)
        q_meta = table_metadata(
            q_uri,
            q_commit,
            quarantine,
            inputs=inputs,
            partitions=replaced,
            extra={"reasons": MetadataValue.json(dict(sorted(profile.items())[:50])), **target.extra},
            preview_columns=["topic", "partition", "offset", "reason", "value"],
        )
    finally:
        frames.typed.unpersist()
        for frame in (valid, quarantine):
            if frame is not None and not target.small:
                frame.unpersist()
    return (
        MaterializeResult(asset_key=silver_key(topic), metadata=meta),
        MaterializeResult(asset_key=quarantine_key(topic), metadata=q_meta),
    )


def _up_to_date(
    lake: LakeResource, topic: str, bronze_version: int, dates: list[date] | None, skipped: str = ""
) -> tuple[MaterializeResult, MaterializeResult]:
    """Materializations for a run that found no bronze record its days have not seen: no commit."""
    inputs = {f"bronze/{topic}": bronze_version}
    extra: dict[str, Any] = (
        {} if dates is None else {"partitions_checked": MetadataValue.json([d.isoformat() for d in dates])}
    )
    if skipped:
        extra["skipped"] = MetadataValue.text(skipped)
    return (
        MaterializeResult(
            asset_key=silver_key(topic),
            metadata=up_to_date_metadata(lake.table_uri("silver", topic), inputs, extra),
        ),
        MaterializeResult(
            asset_key=quarantine_key(topic),
            metadata=up_to_date_metadata(lake.table_uri("quarantine", topic), inputs, extra),
        ),
    )


def _holds_rows(lake: LakeResource, topic: str, days: list[date]) -> bool:
    """Whether silver or quarantine has files in any of ``days`` (a rebuild would replace them)."""
    from assets.delta.changes import PartitionFiles
    from assets.lineage import pinned_version

    keys = [d.isoformat() for d in days]
    for layer in ("silver", "quarantine"):
        uri = lake.table_uri(layer, topic)
        version = pinned_version(uri) if keys else None
        if version is not None and PartitionFiles.load(uri, version, PARTITION_COL).of(keys):
            return True
    return False


def _no_input_reason(plan: BronzeReadPlan, dates: list[date]) -> str:
    days = ", ".join(d.isoformat() for d in dates) if len(dates) <= 3 else f"{dates[0]}..{dates[-1]}"
    if plan.bronze.of([d.isoformat() for d in dates]):
        return f"no new input data for {days}"
    return f"no input data for {days}"


def _days_metadata(plan: BronzeReadPlan) -> dict[str, Any]:
    return {
        "rebuilt_days": MetadataValue.json([d.isoformat() for d in plan.rebuild_days]),
        "appended_days": MetadataValue.json([d.isoformat() for d in plan.append_days]),
        "rescanned_days": MetadataValue.json([d.isoformat() for d in plan.rescanned_days]),
        "bronze_files_read": MetadataValue.int(len(plan.files)),
    }


def build_silver_events(topic: str) -> AssetsDefinition:
    spec = SPECS[topic]

    @multi_asset(
        name=f"silver_{topic}",
        specs=[
            AssetSpec(
                silver_key(topic),
                deps=[bronze_key(topic)],
                group_name="silver",
                kinds={"spark", "delta"},
                owners=OWNERS,
                automation_condition=DAILY_AUTOMATION,
                description=contract.description(
                    f"silver.{topic}", f"Typed `{topic}` events, one per {'/'.join(spec.key)}, by event date."
                ),
            ),
            AssetSpec(
                quarantine_key(topic),
                deps=[bronze_key(topic)],
                group_name="silver",
                kinds={"spark", "delta"},
                owners=OWNERS,
                automation_condition=DAILY_AUTOMATION,
                description=contract.description(
                    "quarantine.<topic>", f"Rejected `{topic}` records with the reason, by record date."
                ),
            ),
        ],
        partitions_def=DAILY,
        backfill_policy=BACKFILL_POLICY,
    )
    def _silver(
        context: AssetExecutionContext, config: SilverConfig, lake: LakeResource, pyspark: PySparkResource
    ):
        dates = [to_date(k) for k in context.partition_keys]
        bronze_uri, bronze_version = _bronze_version(lake, topic, config.input_versions)
        rule = _rule(topic, config)
        silver_uri = lake.table_uri("silver", topic)
        plan = plan_bronze_read(
            bronze_uri,
            bronze_version,
            [silver_uri, lake.table_uri("quarantine", topic)],
            dates,
            column=PARTITION_COL,
            rebuild=config.full_refresh or _needs_new_columns(silver_uri, rule),
        )
        context.log.info(
            f"silver/{topic}: {len(dates)} day(s) at bronze version {bronze_version}: "
            f"{len(plan.rebuild_days)} rebuilt, {len(plan.append_days)} appended to, "
            f"{len(plan.files)} bronze file(s) to read"
        )
        if plan.up_to_date:
            yield from _up_to_date(lake, topic, bronze_version, dates)
            return
        if not plan.files and not _holds_rows(lake, topic, plan.rebuild_days):
            # No bronze record to read and nothing to replace: no Delta version (an empty day, or days
            # whose bronze partitions did not change while bronze got data for other days).
            context.log.info(f"silver/{topic}: {_no_input_reason(plan, dates)}; nothing written")
            yield from _up_to_date(lake, topic, bronze_version, dates, skipped=_no_input_reason(plan, dates))
            return
        spark = pyspark.spark_session
        target = _Target(
            plan.rebuild_days,
            plan.append_days,
            plan.advancing,
            _days_metadata(plan),
            plan.appended_days_read,
            plan.overlap_days,
            small=plan.records is not None and plan.records <= SMALL_BATCH_ROWS,
        )
        yield from _write_pair(
            spark, spec, lake, bronze_version, read_plan(spark, plan), rule, target, context.run_id
        )

    return _silver


def build_silver_dimension(topic: str) -> AssetsDefinition:
    spec = SPECS[topic]
    what: Mapping[str, str] = {
        CUSTOMERS: "Customer profile history with validity intervals [valid_from, valid_to).",
        PRODUCTS: "Latest product attributes, one row per product_id.",
    }

    @multi_asset(
        name=f"silver_{topic}",
        specs=[
            AssetSpec(
                silver_key(topic),
                deps=[bronze_key(topic)],
                group_name="silver",
                kinds={"spark", "delta"},
                owners=OWNERS,
                description=contract.description(f"silver.{topic}", what[topic]),
            ),
            AssetSpec(
                quarantine_key(topic),
                deps=[bronze_key(topic)],
                group_name="silver",
                kinds={"spark", "delta"},
                owners=OWNERS,
                description=contract.description(
                    "quarantine.<topic>", f"Rejected `{topic}` records with the reason."
                ),
            ),
        ],
    )
    def _silver(
        context: AssetExecutionContext, config: SilverConfig, lake: LakeResource, pyspark: PySparkResource
    ):
        """Rebuilt as a whole (profile history needs every version), but only when bronze changed."""
        bronze_uri, bronze_version = _bronze_version(lake, topic, config.input_versions)
        rule = _rule(topic, config)
        silver_uri = lake.table_uri("silver", topic)
        app_id = dimension_watermark_id(bronze_table_id(bronze_uri))
        marks = [
            transaction_version(uri, app_id) for uri in (silver_uri, lake.table_uri("quarantine", topic))
        ]
        current = all(m is not None and m >= bronze_version for m in marks)
        if current and not config.full_refresh and not _needs_new_columns(silver_uri, rule):
            context.log.info(f"silver/{topic}: up to date with bronze version {bronze_version}")
            yield from _up_to_date(lake, topic, bronze_version, None)
            return
        spark = pyspark.spark_session
        bronze_df = read_partitions(spark, bronze_uri, version=bronze_version)
        txns = [] if current else [AppTransaction(app_id, bronze_version)]
        target = _Target(None, [], txns, {})
        yield from _write_pair(spark, spec, lake, bronze_version, bronze_df, rule, target, context.run_id)

    return _silver


SILVER_ASSETS = [build_silver_events(ORDERS), build_silver_events(CLICKS)]
DIMENSION_ASSETS = [build_silver_dimension(CUSTOMERS), build_silver_dimension(PRODUCTS)]

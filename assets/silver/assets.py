"""Silver assets: typed and deduplicated events per day, rejected rows in quarantine tables.

``silver/orders`` and ``silver/clicks`` are daily partitions. A run reads only the bronze records each
requested day has not seen yet and appends what they yield (``assets.silver.watermarks``); days never
built, or a ``full_refresh``, are rebuilt and replaced atomically. ``silver/customers`` (profile history
with validity intervals) and ``silver/products`` are small dimension tables rebuilt as a whole, and only
when their bronze table changed.

This module decides what a run covers (which days, which bronze files, whether anything is to be
done); writing the silver and quarantine pair is ``assets.silver.write``, and when a table may gain
columns is ``assets.silver.schema_evolution``.
"""

from collections.abc import Mapping
from datetime import date
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    AssetSpec,
    Config,
    Failure,
    MetadataValue,
    multi_asset,
)
from dagster_pyspark import PySparkResource
from pydantic import Field

from assets import contract
from assets.automation import DAILY_AUTOMATION
from assets.bronze.assets import bronze_key
from assets.delta import AppTransaction
from assets.owners import owners_of
from assets.partitions import BACKFILL_POLICY, DAILY, to_date
from assets.pipeline.active import active_pipeline
from assets.pipeline.fingerprint import changed_logic
from assets.resources import LakeResource
from assets.silver.keys import quarantine_key, silver_key
from assets.silver.schema_evolution import SCHEMA_RULES, needs_new_columns, schema_rule
from assets.silver.transform import PARTITION_COL, SPECS, SilverSpec
from assets.silver.watermarks import (
    BronzeReadPlan,
    bronze_table_id,
    dimension_watermark_id,
    plan_bronze_read,
    read_plan,
    read_whole,
    transaction_version,
)
from assets.silver.write import WriteTarget, silver_logic, up_to_date, write_pair
from edge.errors import StreamhouseError

#: the silver layer's public names, importable from here as before the writer and the schema rules
#: moved to modules of their own
__all__ = [
    "DIMENSION_ASSETS",
    "SCHEMA_RULES",
    "SILVER_ASSETS",
    "SMALL_BATCH_ROWS",
    "MissingInputError",
    "SilverConfig",
    "build_silver_dimension",
    "build_silver_events",
    "quarantine_key",
    "silver_key",
]

#: A run reading at most this many bronze records collects its silver and quarantine rows as Arrow and
#: writes them without the JVM: two Spark jobs fewer per table for an incremental run's few thousand rows.
SMALL_BATCH_ROWS = 250_000


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


def _bronze_version(lake: LakeResource, topic: str, pins: Mapping[str, int] | None = None) -> tuple[str, int]:
    from assets.replay.pins import pinned_input

    uri = lake.table_uri("bronze", topic)
    version = pinned_input(uri, f"bronze/{topic}", pins)
    if version is None:
        raise MissingInputError(f"bronze table {uri} does not exist yet: materialize bronze/{topic} first")
    return uri, version


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
                owners=owners_of(spec.owners, active_pipeline().owners),
                automation_condition=DAILY_AUTOMATION,
                description=contract.description(
                    f"silver.{topic}",
                    spec.description
                    or f"Typed `{topic}` events, one per {'/'.join(spec.key)}, by event date.",
                ),
            ),
            AssetSpec(
                quarantine_key(topic),
                deps=[bronze_key(topic)],
                group_name="silver",
                kinds={"spark", "delta"},
                owners=owners_of(spec.owners, active_pipeline().owners),
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
        rule = schema_rule(topic, config.add_columns)
        silver_uri = lake.table_uri("silver", topic)
        if not config.full_refresh and (
            why := changed_logic("silver", topic, silver_uri, *silver_logic(topic))
        ):
            raise Failure(description=why)
        plan = plan_bronze_read(
            bronze_uri,
            bronze_version,
            [silver_uri, lake.table_uri("quarantine", topic)],
            dates,
            column=PARTITION_COL,
            rebuild=config.full_refresh or needs_new_columns(silver_uri, rule),
        )
        context.log.info(
            f"silver/{topic}: {len(dates)} day(s) at bronze version {bronze_version}: "
            f"{len(plan.rebuild_days)} rebuilt, {len(plan.append_days)} appended to, "
            f"{len(plan.files)} bronze file(s) to read"
        )
        if plan.up_to_date:
            yield from up_to_date(lake, topic, bronze_version, dates)
            return
        if not plan.files and not _holds_rows(lake, topic, plan.rebuild_days):
            # No bronze record to read and nothing to replace: no Delta version (an empty day, or days
            # whose bronze partitions did not change while bronze got data for other days).
            context.log.info(f"silver/{topic}: {_no_input_reason(plan, dates)}; nothing written")
            yield from up_to_date(lake, topic, bronze_version, dates, skipped=_no_input_reason(plan, dates))
            return
        spark = pyspark.spark_session
        target = WriteTarget(
            plan.rebuild_days,
            plan.append_days,
            plan.advancing,
            _days_metadata(plan),
            plan.appended_days_read,
            plan.overlap_days,
            small=plan.records is not None and plan.records <= SMALL_BATCH_ROWS,
        )
        yield from write_pair(
            spark, spec, lake, bronze_version, read_plan(spark, plan), rule, target, context.run_id
        )

    return _silver


def build_silver_dimension(topic: str) -> AssetsDefinition:
    spec = SPECS[topic]
    what = spec.description or _dimension_text(spec)

    @multi_asset(
        name=f"silver_{topic}",
        specs=[
            AssetSpec(
                silver_key(topic),
                deps=[bronze_key(topic)],
                group_name="silver",
                kinds={"spark", "delta"},
                owners=owners_of(spec.owners, active_pipeline().owners),
                description=contract.description(f"silver.{topic}", what),
            ),
            AssetSpec(
                quarantine_key(topic),
                deps=[bronze_key(topic)],
                group_name="silver",
                kinds={"spark", "delta"},
                owners=owners_of(spec.owners, active_pipeline().owners),
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
        rule = schema_rule(topic, config.add_columns)
        silver_uri = lake.table_uri("silver", topic)
        app_id = dimension_watermark_id(bronze_table_id(bronze_uri))
        marks = [
            transaction_version(uri, app_id) for uri in (silver_uri, lake.table_uri("quarantine", topic))
        ]
        current = all(m is not None and m >= bronze_version for m in marks)
        if current and not config.full_refresh and not needs_new_columns(silver_uri, rule):
            context.log.info(f"silver/{topic}: up to date with bronze version {bronze_version}")
            yield from up_to_date(lake, topic, bronze_version, None)
            return
        spark = pyspark.spark_session
        bronze_df, records = read_whole(spark, bronze_uri, bronze_version)
        txns = [] if current else [AppTransaction(app_id, bronze_version)]
        # A few hundred customer profiles are collected and written through Arrow, as small event
        # batches are: no Delta write through Spark (issue 46 item 7).
        small = records is not None and records <= SMALL_BATCH_ROWS
        target = WriteTarget(None, [], txns, {}, small=small)
        yield from write_pair(spark, spec, lake, bronze_version, bronze_df, rule, target, context.run_id)

    return _silver


def _dimension_text(spec: SilverSpec) -> str:
    if spec.scd_type == 2:
        return f"Every version of each {'/'.join(spec.keys)} with its validity [valid_from, valid_to)."
    return f"The latest row of each {'/'.join(spec.keys or spec.key)}."


#: Daily-partitioned silver tables: the declared event tables with an event time.
SILVER_ASSETS = [build_silver_events(name) for name, spec in SPECS.items() if spec.time_col is not None]
#: Tables rebuilt whole when bronze changed: change tables and event tables without an event time.
DIMENSION_ASSETS = [build_silver_dimension(name) for name, spec in SPECS.items() if spec.time_col is None]

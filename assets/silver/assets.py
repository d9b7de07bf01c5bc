"""Silver assets: typed and deduplicated events per day, rejected rows in quarantine tables.

``silver/orders`` and ``silver/clicks`` are daily partitions (replaced atomically with
``overwrite_where``); ``silver/customers`` (profile history with validity intervals) and
``silver/products`` are small dimension tables rebuilt as a whole.
"""

from collections.abc import Mapping
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

from assets.bronze.assets import bronze_key
from assets.lineage import commit_lineage, pinned_version, read_partitions, table_metadata
from assets.sample_data import CLICKS, CUSTOMERS, ORDERS, PRODUCTS
from assets.silver.transform import (
    PARTITION_COL,
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
from edge.errors import StreamhouseError
from orchestration.partitions import BACKFILL_POLICY, DAILY, to_date
from orchestration.resources import LakeResource

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


def silver_key(topic: str) -> AssetKey:
    return AssetKey(["silver", topic])


def quarantine_key(topic: str) -> AssetKey:
    return AssetKey(["quarantine", topic])


def _rule(topic: str, config: SilverConfig) -> SchemaRule:
    base = SCHEMA_RULES.get(topic, SchemaRule())
    return SchemaRule({**base.add_columns, **config.add_columns})


def _bronze_version(lake: LakeResource, topic: str) -> tuple[str, int]:
    uri = lake.table_uri("bronze", topic)
    version = pinned_version(uri)
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


def _write_pair(
    spark: Any,
    spec: SilverSpec,
    lake: LakeResource,
    bronze_uri: str,
    bronze_version: int,
    bronze_df: Any,
    rule: SchemaRule,
    dates: list[date] | None,
) -> tuple[MaterializeResult, MaterializeResult]:
    from pyspark import StorageLevel

    from assets.delta import write_delta

    topic = spec.topic
    silver_uri = lake.table_uri("silver", topic)
    q_uri = lake.table_uri("quarantine", topic)
    frames = split(bronze_df, spec, rule)
    frames.typed.persist(StorageLevel.MEMORY_AND_DISK)
    valid = None
    try:
        if topic == CUSTOMERS:
            valid = customer_history(frames.valid)
        else:
            valid = deduplicate(frames.valid, spec.key, latest=spec.time_col is None)
        valid, evolves = _align(valid, silver_uri, rule)
        valid = valid.persist(StorageLevel.MEMORY_AND_DISK)
        inputs = {f"bronze/{topic}": bronze_version}
        lineage = commit_lineage(inputs, partitions=",".join(d.isoformat() for d in dates or []))
        if dates is not None:
            where = {PARTITION_COL: dates}
            commit = write_delta(
                valid,
                silver_uri,
                mode="overwrite_where",
                partition_by=[PARTITION_COL],
                where=where,
                schema_evolution=evolves,
                commit_metadata=lineage,
            )
        else:
            commit = write_delta(
                valid, silver_uri, mode="overwrite", schema_evolution=evolves, commit_metadata=lineage
            )
        q_commit = write_delta(
            frames.quarantine,
            q_uri,
            mode="overwrite_where" if dates is not None else "overwrite",
            partition_by=[PARTITION_COL],
            where={PARTITION_COL: dates} if dates is not None else None,
            commit_metadata=lineage,
        )
        profile = row_profile(frames.typed, spec, rule)
        typed_valid = profile.pop("", 0)
        unknown = profile.pop(UNKNOWN, [])
        extra: dict[str, Any] = {
            "duplicates_dropped": MetadataValue.int(
                max(0, typed_valid - commit.rows_written) if topic != CUSTOMERS else 0
            ),
            "quarantined": MetadataValue.int(q_commit.rows_written),
            "unknown_payload_fields": MetadataValue.json(unknown),
            "schema_rule": MetadataValue.json(dict(rule.add_columns)),
            "schema_evolved": MetadataValue.bool(evolves),
        }
        meta = table_metadata(silver_uri, commit, valid, inputs=inputs, partitions=dates, extra=extra)
        q_meta = table_metadata(
            q_uri,
            q_commit,
            frames.quarantine,
            inputs=inputs,
            partitions=dates,
            extra={"reasons": MetadataValue.json(dict(sorted(profile.items())[:50]))},
            preview_columns=["topic", "partition", "offset", "reason", "value"],
        )
    finally:
        frames.typed.unpersist()
        if valid is not None:
            valid.unpersist()
    return (
        MaterializeResult(asset_key=silver_key(topic), metadata=meta),
        MaterializeResult(asset_key=quarantine_key(topic), metadata=q_meta),
    )


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
                description=f"Typed `{topic}` events, one per {'/'.join(spec.key)}, by event date.",
            ),
            AssetSpec(
                quarantine_key(topic),
                deps=[bronze_key(topic)],
                group_name="silver",
                kinds={"spark", "delta"},
                description=f"Rejected `{topic}` records with the reason, by record date.",
            ),
        ],
        partitions_def=DAILY,
        backfill_policy=BACKFILL_POLICY,
    )
    def _silver(
        context: AssetExecutionContext, config: SilverConfig, lake: LakeResource, pyspark: PySparkResource
    ):
        spark = pyspark.spark_session
        dates = [to_date(k) for k in context.partition_keys]
        bronze_uri, bronze_version = _bronze_version(lake, topic)
        bronze_df = read_partitions(
            spark, bronze_uri, version=bronze_version, column=PARTITION_COL, values=dates
        )
        context.log.info(f"silver/{topic}: {len(dates)} day(s) from bronze version {bronze_version}")
        yield from _write_pair(
            spark, spec, lake, bronze_uri, bronze_version, bronze_df, _rule(topic, config), dates
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
                description=what[topic],
            ),
            AssetSpec(
                quarantine_key(topic),
                deps=[bronze_key(topic)],
                group_name="silver",
                kinds={"spark", "delta"},
                description=f"Rejected `{topic}` records with the reason.",
            ),
        ],
    )
    def _silver(
        context: AssetExecutionContext, config: SilverConfig, lake: LakeResource, pyspark: PySparkResource
    ):
        spark = pyspark.spark_session
        bronze_uri, bronze_version = _bronze_version(lake, topic)
        bronze_df = read_partitions(spark, bronze_uri, version=bronze_version)
        yield from _write_pair(
            spark, spec, lake, bronze_uri, bronze_version, bronze_df, _rule(topic, config), None
        )

    return _silver


SILVER_ASSETS = [build_silver_events(ORDERS), build_silver_events(CLICKS)]
DIMENSION_ASSETS = [build_silver_dimension(CUSTOMERS), build_silver_dimension(PRODUCTS)]

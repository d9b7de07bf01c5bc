"""Bronze → silver: typed columns, one row per event id, and every rejected row kept with its reason.

The typed contract of each table is its ``fields`` in the pipeline's declaration (``pipeline.yaml``,
``assets.pipeline``), the typing rule is written in docs/data-contract.md. Values are typed by their
JSON type (the typing rule in
``assets.silver.expectations``: ``3`` and ``3.0`` are ints, ``"3"`` is not), and every conversion is a
``try_`` one, so a bad value becomes a quarantine reason, never a failed job. Which rows are rejected is
decided by the table's row-level expectations with action ``drop`` (``assets.silver.expectations``, the
row-level part of the table's Great Expectations suite in ``quality/``); a rejected row carries the
readable ``reason``, the names of the failed expectations and the run id. Schema evolution happens
only through an explicit rule (``SchemaRule``): payload fields outside the contract are counted and
ignored until a rule adds them as nullable columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assets.pipeline.active import active_pipeline
from assets.pipeline.model import ChangeTable, EventTable, Pipeline
from assets.silver.expectations import (
    DROP,
    JSON_COL,
    RowExpectation,
    declared_expectations,
    row_expectations,
    typed_sql,
)
from edge.errors import StreamhouseError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

SPARK_TYPES = {
    "string": "string",
    "int": "int",
    "long": "bigint",
    "double": "double",
    "timestamp": "timestamp",
}
PARTITION_COL = "event_date"
QUARANTINE_COLUMNS = [
    "topic",
    "partition",
    "offset",
    "key",
    "value",
    "reason",
    "failed_expectations",
    "run_id",
    "event_timestamp",
    "ingest_time",
    PARTITION_COL,
]
#: identifies a quarantined record: its position in Kafka
QUARANTINE_KEY = ("topic", "partition", "offset")
#: A change table's column marking records that delete their key (dropped once the changes are applied).
DELETED = "_deleted"


class SchemaRuleError(StreamhouseError):
    def __init__(self, message: str, *, table: str) -> None:
        self.table = table
        super().__init__(message)


@dataclass(frozen=True)
class SchemaRule:
    """The only way a silver schema grows: named, nullable, additive columns of a known type."""

    add_columns: Mapping[str, str] = field(default_factory=dict)

    def validate(self, table: str, contract: Mapping[str, str]) -> None:
        for name, typ in self.add_columns.items():
            if name in contract:
                raise SchemaRuleError(
                    f"schema rule for {table} adds {name!r}, which is already in the contract as "
                    f"{contract[name]!r}; type changes are not allowed by rule (write a migration)",
                    table=table,
                )
            if typ not in SPARK_TYPES:
                raise SchemaRuleError(
                    f"schema rule for {table}: column {name!r} has unknown type {typ!r}; "
                    f"use one of {sorted(SPARK_TYPES)}",
                    table=table,
                )


@dataclass(frozen=True)
class SilverSpec:
    """What silver needs of a declared table (``event_tables`` / ``change_tables`` of pipeline.yaml)."""

    #: the table's name: its source's logical topic, and ``silver/<topic>`` / ``quarantine/<topic>``
    topic: str
    #: columns identifying one row (dedup key; a change table's keys + its sequence column)
    key: tuple[str, ...]
    #: typed event-time column that decides the daily partition (None: not time-partitioned)
    time_col: str | None
    #: payload field -> logical type (the typing rule types them)
    contract: Mapping[str, str] = field(default_factory=dict)
    #: the declared expectations beyond the contract's own
    declared: tuple[RowExpectation, ...] = ()
    #: a change table's sequence column (later wins, whatever the arrival order); None: an event table
    sequence_by: str | None = None
    #: a change table's SCD type: 1 the latest row per key, 2 every version with its validity
    #: ``[valid_from, valid_to)``; 0 for an event table
    scd_type: int = 0
    description: str = ""
    owners: tuple[str, ...] = ()
    #: a change feed's records: ``upsert`` (the row) or ``debezium`` (an envelope whose after/before is)
    envelope: str = "upsert"
    #: an upsert feed's delete marker: a Spark SQL predicate over the typed fields
    delete_when: str | None = None

    @property
    def keys(self) -> tuple[str, ...]:
        """A change table's keys (its dedup key without the sequence column)."""
        return tuple(k for k in self.key if k != self.sequence_by)

    @property
    def expectations(self) -> list[RowExpectation]:
        """The row-level expectations of ``silver/<topic>`` (every action)."""
        return row_expectations(self.contract, self.time_col, self.declared)

    @property
    def drop_expectations(self) -> list[RowExpectation]:
        """The ones that send a failing row to quarantine."""
        return [e for e in self.expectations if e.action == DROP]


def silver_spec(name: str, table: EventTable | ChangeTable) -> SilverSpec:
    """A declared table as silver builds it. An event table keeps one row per key (the latest, when it
    has no event time); an SCD2 change table keeps every version (keys + sequence) with its validity,
    an SCD1 one the latest row per key."""
    shared = {
        "contract": dict(table.fields),
        "declared": declared_expectations(table),
        "description": table.description,
        "owners": tuple(table.owners),
    }
    if isinstance(table, EventTable):
        return SilverSpec(name, tuple(table.key), table.event_time, **shared)
    key = (*table.keys, table.sequence_by) if table.scd_type == 2 else tuple(table.keys)
    return SilverSpec(
        name,
        key,
        None,
        sequence_by=table.sequence_by,
        scd_type=table.scd_type,
        envelope=table.format,
        delete_when=table.delete_when,
        **shared,
    )


def silver_specs(pipeline: Pipeline) -> dict[str, SilverSpec]:
    return {name: silver_spec(name, table) for name, table in pipeline.silver_tables().items()}


#: The configured pipeline's silver tables (``assets.pipeline.active``), by name.
SPECS: dict[str, SilverSpec] = silver_specs(active_pipeline())


def parse_json(value: Column) -> Column:
    """Raw Kafka value bytes -> VARIANT (null if not valid JSON, or an object repeating a field name):
    unlike a MAP<STRING,STRING>, it keeps each field's JSON type, which the typing rule needs."""
    from pyspark.sql import functions as F

    return F.try_parse_json(value.cast("string"))


def payload_map(json: Column) -> Column:
    """VARIANT -> MAP<STRING,STRING> of the top-level fields (null unless a JSON object): field presence,
    reasons and unknown fields are read from it."""
    from pyspark.sql import functions as F

    return F.try_variant_get(json, "$", "map<string,string>")


@dataclass
class SilverFrames:
    typed: DataFrame  # every bronze row, typed, with ``_reason`` ("" when valid) and ``_failed``
    valid: DataFrame  # typed, not yet deduplicated
    quarantine: DataFrame
    columns: list[str]


def split(
    bronze: DataFrame, spec: SilverSpec, rule: SchemaRule | None = None, run_id: str = ""
) -> SilverFrames:
    """Typed rows and rejected rows from bronze rows of one topic: a row failing any ``drop``
    expectation is rejected with the readable reasons, the failed expectation names and ``run_id``."""
    from pyspark.sql import functions as F

    rule = rule or SchemaRule()
    rule.validate(spec.topic, spec.contract)
    fields = {**spec.contract, **rule.add_columns}
    typed_cols = [F.expr(typed_sql(name, typ)).alias(name) for name, typ in fields.items()]
    # Bronze keeps raw bytes; the payload is parsed here, once, as a VARIANT that keeps each field's
    # JSON type (the typing rule), and read as a map of field texts for presence and reasons.
    bronze = bronze.withColumn(JSON_COL, parse_json(F.col("value")))
    envelope_cols: list[Column] = []
    if spec.envelope == "debezium":
        # The row is the envelope's `after` (its `before` for a delete): typing, expectations and
        # reasons below read the row; the operation and the change time stay beside it.
        op = F.expr(f"try_variant_get({JSON_COL}, '$.op', 'string')")
        row = F.when(op == "d", F.expr(f"try_variant_get({JSON_COL}, '$.before', 'variant')")).otherwise(
            F.expr(f"try_variant_get({JSON_COL}, '$.after', 'variant')")
        )
        envelope_cols.append(op.alias("_op"))
        if spec.sequence_by is not None and spec.sequence_by not in fields:
            ms = F.expr(f"try_variant_get({JSON_COL}, '$.{spec.sequence_by}', 'bigint')")
            envelope_cols.append(F.timestamp_millis(ms).alias(spec.sequence_by))
        bronze = bronze.select("*", *envelope_cols).withColumn(JSON_COL, row)
    bronze = bronze.withColumn("payload", payload_map(F.col(JSON_COL)))
    df = bronze.select(
        "topic",
        "partition",
        "offset",
        "key",
        "value",
        JSON_COL,
        "payload",
        "event_timestamp",
        "ingest_time",
        F.col(PARTITION_COL).alias("_bronze_date"),
        *typed_cols,
        *(c for c in ("_op", spec.sequence_by) if spec.envelope == "debezium" and c and c not in fields),
    )
    if spec.sequence_by is not None:  # a change table: which records delete their key
        if spec.envelope == "debezium":
            deletes = F.col("_op") == "d"
        else:
            deletes = F.expr(spec.delete_when) if spec.delete_when else F.lit(False)
        df = df.withColumn(DELETED, F.coalesce(deletes, F.lit(False)))
    reasons: list[Column] = []
    names: list[Column] = []
    for exp in spec.drop_expectations:
        violated = F.coalesce(F.expr(exp.violation), F.lit(False))
        reasons.append(F.when(violated, F.expr(exp.message)))
        names.append(F.when(violated, F.lit(exp.name)))
    # concat_ws skips nulls: "" means valid; array_compact drops the nulls of passed expectations
    # (neither is a higher-order function, so both stay in codegen).
    df = df.withColumn("_reason", F.concat_ws("; ", *reasons)).withColumn(
        "_failed", F.array_compact(F.array(*names))
    )
    quarantine = df.filter(F.col("_reason") != "").select(
        "topic",
        "partition",
        "offset",
        "key",
        "value",
        F.col("_reason").alias("reason"),
        F.col("_failed").alias("failed_expectations"),
        F.lit(run_id).alias("run_id"),
        "event_timestamp",
        "ingest_time",
        F.col("_bronze_date").alias(PARTITION_COL),
    )
    lineage = [
        F.col("partition").alias("_kafka_partition"),
        F.col("offset").alias("_kafka_offset"),
        F.col("ingest_time").alias("_ingest_time"),
    ]
    out = [*fields, "_kafka_partition", "_kafka_offset", "_ingest_time"]
    select = [F.col(n) for n in fields] + lineage
    if spec.sequence_by is not None:
        # a change table's sequence from the envelope, and its delete marker (dropped once applied)
        select += [F.col(c) for c in (spec.sequence_by, DELETED) if c not in fields]
        out += [spec.sequence_by] if spec.sequence_by not in fields else []
    if spec.time_col is not None:
        select.append(F.to_date(F.col(spec.time_col)).alias(PARTITION_COL))
        out.append(PARTITION_COL)
    valid = df.filter(F.col("_reason") == "").select(*select)
    return SilverFrames(typed=df, valid=valid, quarantine=quarantine, columns=out)


def deduplicate(df: DataFrame, key: Sequence[str], latest: bool = False) -> DataFrame:
    """One row per key: the first copy ingested, or the last with ``latest`` (dimensions).

    "First" is the smallest (bronze ingest time, Kafka partition, offset): a copy in an earlier ingest
    run wins, which is also what an incremental run does (it skips keys silver already holds), so a
    full rebuild picks the same copy as the incremental runs did, whatever partition each copy is in.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = [F.col("_ingest_time"), F.col("_kafka_partition"), F.col("_kafka_offset")]
    if latest:
        order = [c.desc() for c in order]
    w = Window.partitionBy(*key).orderBy(*order)
    return df.withColumn("_rn", F.row_number().over(w)).filter(F.col("_rn") == 1).drop("_rn")


UNKNOWN = "__unknown_fields__"


#: ``row_profile`` key: rows failing each drop expectation (a row may fail several)
FAILED = "__failed_expectations__"


def row_profile(typed: DataFrame, spec: SilverSpec, rule: SchemaRule | None = None) -> dict[str, Any]:
    """One pass: row count per reason ("" = valid), rows per failed expectation (under ``FAILED``) and
    payload fields outside contract and rule (under ``UNKNOWN``; a hint that a schema rule may be
    needed)."""
    from pyspark.sql import functions as F

    known = F.array(*[F.lit(k) for k in [*spec.contract, *(rule or SchemaRule()).add_columns]])
    rows = (
        typed.groupBy("_reason", "_failed")
        .agg(
            F.count("*").alias("n"),
            F.array_distinct(F.flatten(F.collect_set(F.array_except(F.map_keys("payload"), known)))).alias(
                "u"
            ),
        )
        .collect()
    )
    out: dict[str, Any] = {}
    failed: dict[str, int] = {}
    for r in rows:
        out[r["_reason"]] = out.get(r["_reason"], 0) + int(r["n"])
        for name in r["_failed"] or []:
            failed[name] = failed.get(name, 0) + int(r["n"])
    out[UNKNOWN] = sorted({u for r in rows for u in (r["u"] or [])})
    out[FAILED] = failed
    return out


def change_history(valid: DataFrame, keys: Sequence[str], sequence_by: str) -> DataFrame:
    """SCD2: every version of a key, ordered by its sequence column, valid in ``[valid_from, valid_to)``
    (``valid_to`` NULL for the current one). A delete ends the validity of the version before it and
    is no version itself; a later change starts a new one. The same change received twice counts once
    (the last ingested copy), so a replayed feed gives the same table."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    deduped = deduplicate(valid, (*keys, sequence_by), latest=True)
    w = Window.partitionBy(*keys).orderBy(sequence_by)
    history = deduped.withColumn("valid_from", F.col(sequence_by)).withColumn(
        "valid_to", F.lead(sequence_by).over(w)
    )
    return _without_deletes(history)


def latest_version(valid: DataFrame, keys: Sequence[str], sequence_by: str) -> DataFrame:
    """SCD1: the row of each key with the greatest sequence value, whatever order the changes arrived
    in (ties: the last ingested copy); a key whose latest change is a delete has no row."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    lineage = ("_ingest_time", "_kafka_partition", "_kafka_offset")
    order = [F.col(sequence_by).desc(), *(F.col(c).desc() for c in lineage)]
    ranked = valid.withColumn("_rank", F.row_number().over(Window.partitionBy(*keys).orderBy(*order)))
    return _without_deletes(ranked.where(F.col("_rank") == 1).drop("_rank"))


def _without_deletes(df: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return df.where(~F.col(DELETED)).drop(DELETED) if DELETED in df.columns else df


def apply_changes(valid: DataFrame, spec: SilverSpec) -> DataFrame:
    """The valid rows of ``spec``'s table as silver keeps them (see ``SilverSpec.scd_type``)."""
    if spec.sequence_by is not None and spec.scd_type == 2:
        return change_history(valid, spec.keys, spec.sequence_by)
    if spec.sequence_by is not None:
        return latest_version(valid, spec.keys, spec.sequence_by)
    return deduplicate(valid, spec.key, latest=spec.time_col is None)

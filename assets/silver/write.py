"""Writing a silver table and its quarantine table together, and the materializations that report it.

The asset definitions (``assets.silver.assets``) decide *what* a run covers (which days are rebuilt,
which appended to, which bronze files are read); this module turns that decision, a ``WriteTarget``,
into two Delta commits: split and deduplicate the bronze records, skip keys the tables already hold,
align to (or evolve) the existing schema, write through Spark or, for small batches, through Arrow,
and describe both commits in the asset metadata. Apart so that the read planning and the write
mechanics can each be read without the other.
"""

from dataclasses import dataclass, field
from datetime import date
from typing import Any

from dagster import MaterializeResult, MetadataValue

from assets.delta import AppTransaction
from assets.lineage import (
    commit_lineage,
    pinned_version,
    read_partitions,
    table_metadata,
    up_to_date_metadata,
)
from assets.resources import LakeResource
from assets.silver.keys import quarantine_key, silver_key
from assets.silver.schema_evolution import align, quarantine_evolves
from assets.silver.transform import (
    FAILED,
    PARTITION_COL,
    QUARANTINE_KEY,
    UNKNOWN,
    SchemaRule,
    SilverSpec,
    apply_changes,
    row_profile,
    split,
)


def silver_logic(table: str) -> tuple[str, str | None]:
    """The fingerprint of the table's declared logic and its declared fields
    (``assets.pipeline.fingerprint``)."""
    from assets.pipeline.active import active_pipeline
    from assets.pipeline.fingerprint import fields_json, logic_fingerprint

    pipeline = active_pipeline()
    return logic_fingerprint(pipeline, table), fields_json(pipeline, table)


@dataclass
class WriteTarget:
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


def _write(
    df: Any, uri: str, target: WriteTarget, *, evolves: bool, lineage: dict[str, str], partitioned: bool
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


def write_pair(
    spark: Any,
    spec: SilverSpec,
    lake: LakeResource,
    bronze_version: int,
    bronze_df: Any,
    rule: SchemaRule,
    target: WriteTarget,
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
        valid = apply_changes(frames.valid, spec)
        valid = _without(
            valid, _existing(spark, silver_uri, target.lookup_days, list(spec.key)), list(spec.key)
        )
        quarantine = _without(
            frames.quarantine,
            _existing(spark, q_uri, target.overlap_days, list(QUARANTINE_KEY)),
            list(QUARANTINE_KEY),
        )
        valid, evolves = align(valid, silver_uri, rule, spec.contract)
        if target.small:
            valid, quarantine = valid.toArrow(), quarantine.toArrow()
        else:
            valid = valid.persist(StorageLevel.MEMORY_AND_DISK)
            quarantine = quarantine.persist(StorageLevel.MEMORY_AND_DISK)
        inputs = {f"bronze/{topic}": bronze_version}
        dates = target.days
        logic, fields = silver_logic(topic)
        lineage = commit_lineage(
            inputs, logic, fields, partitions=",".join(d.isoformat() for d in dates or [])
        )
        commit = _write(
            valid, silver_uri, target, evolves=evolves, lineage=lineage, partitioned=dates is not None
        )
        q_evolves = quarantine_evolves(q_uri, ["failed_expectations", "run_id"])
        q_commit = _write(quarantine, q_uri, target, evolves=q_evolves, lineage=lineage, partitioned=True)
        profile = row_profile(frames.typed, spec, rule)
        typed_valid = profile.pop("", 0)
        unknown = profile.pop(UNKNOWN, [])
        failed = profile.pop(FAILED, {})
        rejected = sum(profile.values())
        extra: dict[str, Any] = {
            "duplicates_dropped": MetadataValue.int(
                max(0, typed_valid - commit.rows_written) if spec.scd_type != 2 else 0
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


def up_to_date(
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

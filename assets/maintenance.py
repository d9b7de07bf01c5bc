"""Lake maintenance: compact small files, write checkpoints, vacuum old files — for every table.

Bronze gets one small file per partition per ingest batch and silver/gold rewrite days often, so
without compaction readers open thousands of tiny files. Vacuum keeps ``retention_hours`` of history
(time travel and readers of older versions need it), 7 days by default.
"""

from pathlib import Path
from typing import Any

from dagster import (
    AssetExecutionContext,
    Config,
    MaterializeResult,
    MetadataValue,
    TableRecord,
    TableSchema,
    asset,
)
from pydantic import Field

from assets.owners import OWNERS
from assets.resources import LakeResource

LAYERS = ("bronze", "silver", "quarantine", "gold")


class MaintenanceConfig(Config):
    retention_hours: int = Field(default=168, description="vacuum keeps files referenced in this window")
    target_file_mb: int = 128
    enforce_retention: bool = Field(default=True, description="refuse retention below the table minimum")


def lake_tables(lake_root: str | Path) -> list[str]:
    root = Path(lake_root)
    return sorted(
        str(t)
        for layer in LAYERS
        if (root / layer).is_dir()
        for t in (root / layer).iterdir()
        if (t / "_delta_log").is_dir()
    )


def maintain_table(uri: str, *, retention_hours: int, target_file_size: int, enforce: bool) -> dict[str, Any]:
    from assets.delta import checkpoint, optimize, table_version, vacuum

    metrics = optimize(
        uri, target_file_size=target_file_size, commit_metadata={"streamhouse.job": "maintenance"}
    )
    checkpoint(uri)
    removed = vacuum(uri, retention_hours=retention_hours, enforce_retention_duration=enforce)
    return {
        "table": uri,
        "version": table_version(uri),
        "files_added": int(metrics.get("numFilesAdded", 0)),
        "files_removed": int(metrics.get("numFilesRemoved", 0)),
        "vacuumed": len(removed),
    }


@asset(
    key=["maintenance", "lake"],
    group_name="maintenance",
    kinds={"delta"},
    owners=OWNERS,
    description="Compacts small files, writes a checkpoint and vacuums every lake table.",
)
def lake_maintenance(
    context: AssetExecutionContext, config: MaintenanceConfig, lake: LakeResource
) -> MaterializeResult:
    rows = []
    for uri in lake_tables(lake.lake_root):
        row = maintain_table(
            uri,
            retention_hours=config.retention_hours,
            target_file_size=config.target_file_mb * 1024 * 1024,
            enforce=config.enforce_retention,
        )
        context.log.info(f"maintained {uri}: {row}")
        rows.append(row)
    schema = TableSchema.from_name_type_dict(
        {"table": "string", "version": "int", "files_added": "int", "files_removed": "int", "vacuumed": "int"}
    )
    return MaterializeResult(
        metadata={
            "tables": MetadataValue.int(len(rows)),
            "files_compacted": MetadataValue.int(sum(r["files_removed"] for r in rows)),
            "files_vacuumed": MetadataValue.int(sum(r["vacuumed"] for r in rows)),
            "details": MetadataValue.table([TableRecord(r) for r in rows], schema=schema),
        }
    )

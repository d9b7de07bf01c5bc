"""Staging: Spark (or pyarrow) writes Parquet under `<table>/_staging/<id>/`, then files move into the table.

Staging inside the table root keeps the final move a same-filesystem rename, and the leading
underscore hides the directory from Delta readers and from VACUUM. Files that were moved into the
table but never committed are deleted by `discard`, so a failed write leaves no orphans behind.
"""

from __future__ import annotations

import logging
import posixpath
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from assets.delta.location import TableLocation
from assets.delta.partitions import HIVE_NULL, parse_partition_dir, to_partition_string
from assets.delta.stats import file_stats

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)
STAGING_DIR = "_staging"


@dataclass(frozen=True)
class StagedFile:
    rel_path: str  # final raw (unencoded) path relative to the table root
    staging_rel_path: str  # where Spark wrote it, relative to the staging dir
    partition_values: dict[str, str | None]
    size: int
    num_records: int
    stats_json: str


@dataclass(frozen=True)
class Staging:
    location: TableLocation
    rel_dir: str  # e.g. _staging/<uuid>
    write_id: str

    def fs_path(self, rel_path: str = "") -> str:
        return self.location.fs_path(posixpath.join(self.rel_dir, rel_path) if rel_path else self.rel_dir)


def new_staging(location: TableLocation) -> Staging:
    write_id = uuid.uuid4().hex
    return Staging(location, f"{STAGING_DIR}/{write_id}", write_id)


def write_staged(
    df: DataFrame,
    staging: Staging,
    partition_cols: Sequence[str],
    column_types: Mapping[str, str],
) -> list[StagedFile]:
    """Let Spark write the Parquet files, then describe each one (partition values + footer stats)."""
    writer = df.write.mode("errorifexists").format("parquet")
    if partition_cols:
        writer = writer.partitionBy(*partition_cols)
    writer.save(staging.location.spark_path(staging.rel_dir))

    fs = staging.location.filesystem
    base = staging.fs_path()
    infos = fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
    staged: list[StagedFile] = []
    for info in sorted(infos, key=lambda i: i.path):
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(base) :].lstrip("/")
        name = posixpath.basename(rel)
        if name.startswith((".", "_")) or not name.endswith(".parquet"):
            continue
        stats = file_stats(info.path, fs, column_types)
        if stats.num_records == 0:
            continue  # Spark writes schema-only files for empty partitions; Delta does not need them
        rel_dir = posixpath.dirname(rel)
        partition_values = parse_partition_dir(rel_dir, partition_cols)
        # Spark reuses `part-NNNNN-<job>.c000` names across partition dirs; make names table-unique.
        suffix = name[name.index(".") :]
        final = posixpath.join(rel_dir, f"part-{len(staged):05d}-{staging.write_id}{suffix}")
        staged.append(
            StagedFile(final, rel, partition_values, int(info.size or 0), stats.num_records, stats.stats_json)
        )
    return staged


def publish(staging: Staging, files: Iterable[StagedFile]) -> list[str]:
    """Move staged files to their final place in the table; returns what was moved (for `discard`)."""
    fs = staging.location.filesystem
    moved: list[str] = []
    created_dirs: set[str] = set()
    for f in files:
        target = staging.location.fs_path(f.rel_path)
        parent = posixpath.dirname(target)
        if parent not in created_dirs:
            fs.create_dir(parent, recursive=True)
            created_dirs.add(parent)
        fs.move(staging.fs_path(f.staging_rel_path), target)
        moved.append(f.rel_path)
    return moved


def discard(location: TableLocation, rel_paths: Iterable[str]) -> None:
    """Delete data files that were moved into the table but whose commit failed."""
    for rel in rel_paths:
        try:
            location.filesystem.delete_file(location.fs_path(rel))
        except (FileNotFoundError, OSError) as exc:  # best effort: VACUUM would catch leftovers
            log.warning("could not delete uncommitted file %s: %s", rel, exc)


def remove_staging(staging: Staging) -> None:
    fs = staging.location.filesystem
    try:
        fs.delete_dir(staging.fs_path())
    except (FileNotFoundError, OSError):
        pass


def write_staged_arrow(
    table: pa.Table,
    staging: Staging,
    partition_cols: Sequence[str],
    column_types: Mapping[str, str],
    *,
    row_group_size: int = 256 * 1024,
) -> list[StagedFile]:
    """Write an Arrow table as one Parquet file per partition, laid out like Spark's `partitionBy`.

    No JVM in the loop: for ingestion this is several times faster than handing the batch to Spark.
    Partition columns are not stored in the files (Delta keeps them in the log), exactly as Spark does.
    Statistics are written only for the columns Delta keeps min/max for; computing them for large
    payload columns would only cost time.
    """
    fs = staging.location.filesystem
    data_cols = [c for c in table.column_names if c not in partition_cols]
    groups = _partition_groups(table, partition_cols)
    staged: list[StagedFile] = []
    for values, rows in groups:
        if rows.num_rows == 0:
            continue
        rel_dir = "/".join(f"{quote(c, safe='')}={_dir_value(values[c])}" for c in partition_cols)
        name = f"part-{len(staged):05d}-{staging.write_id}.snappy.parquet"
        rel = posixpath.join(rel_dir, name) if rel_dir else name
        path = staging.fs_path(rel)
        fs.create_dir(posixpath.dirname(path), recursive=True)
        with fs.open_output_stream(path) as sink:
            pq.write_table(
                rows.select(data_cols),
                sink,
                compression="snappy",
                row_group_size=row_group_size,
                write_statistics=[c for c in data_cols if c in column_types],
                use_dictionary=[c for c in data_cols if column_types.get(c) == "string"],
            )
        stats = file_stats(path, fs, column_types)
        size = fs.get_file_info(path).size
        staged.append(StagedFile(rel, rel, dict(values), int(size or 0), stats.num_records, stats.stats_json))
    return staged


def _partition_groups(
    table: pa.Table, partition_cols: Sequence[str]
) -> list[tuple[dict[str, str | None], pa.Table]]:
    """(Delta partition values, rows) per distinct combination of the partition columns."""
    if not partition_cols:
        return [({}, table)]
    combos = table.select(list(partition_cols)).group_by(list(partition_cols)).aggregate([]).to_pylist()
    groups = []
    for combo in combos:
        mask = None
        for col, value in combo.items():
            column = table.column(col)
            cond = pc.is_null(column) if value is None else pc.fill_null(pc.equal(column, value), False)
            mask = cond if mask is None else pc.and_(mask, cond)
        rows = table.filter(mask) if len(combos) > 1 else table
        groups.append(({c: to_partition_string(v) for c, v in combo.items()}, rows))
    return groups


def _dir_value(value: str | None) -> str:
    return HIVE_NULL if value is None else quote(value, safe="")

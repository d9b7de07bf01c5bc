"""Staging: Spark writes Parquet under `<table>/_staging/<id>/`, then files move into the table.

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

from pyarrow import fs as pafs

from assets.delta.location import TableLocation
from assets.delta.partitions import parse_partition_dir
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

"""Table maintenance: compaction, checkpoints and vacuum, delegated to delta-rs.

These operations only reorganise files (dataChange=false) or the log, so delta-rs can run them
directly on the table; its files carry full stats and partition values, which our readers use.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from deltalake import CommitProperties

from assets.delta.errors import DeltaLayerError
from assets.delta.location import resolve
from assets.delta.snapshot import open_table

DEFAULT_TARGET_FILE_SIZE = 128 * 1024 * 1024


def optimize(
    table_uri: str | os.PathLike[str],
    *,
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
    partition_filters: list[tuple[str, str, Any]] | None = None,
    commit_metadata: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Bin-pack small files into ~target_file_size files; returns delta-rs metrics
    (numFilesAdded, numFilesRemoved, ...). Data is unchanged; a no-op when nothing is small."""
    location = resolve(table_uri)
    dt = open_table(location)
    metadata = {"streamhouse.operation": "optimize", **(commit_metadata or {})}
    return dt.optimize.compact(
        partition_filters=partition_filters,
        target_size=target_file_size,
        commit_properties=CommitProperties(custom_metadata=metadata),
    )


def checkpoint(table_uri: str | os.PathLike[str]) -> None:
    """Write a Parquet checkpoint for the latest version so readers skip replaying JSON commits."""
    open_table(resolve(table_uri)).create_checkpoint()


def vacuum(
    table_uri: str | os.PathLike[str],
    *,
    retention_hours: int = 168,
    dry_run: bool = False,
    enforce_retention_duration: bool = True,
) -> list[str]:
    """Delete files no longer referenced by versions newer than `retention_hours`; returns their paths.

    A retention below the table's `delta.deletedFileRetentionDuration` (7 days by default) breaks
    time travel and concurrent readers, so it needs `enforce_retention_duration=False`.
    """
    location = resolve(table_uri)
    dt = open_table(location)
    if retention_hours < 0:
        raise DeltaLayerError(
            f"vacuum retention_hours must be >= 0 (got {retention_hours}) for {location.uri}.",
            table_uri=location.uri,
        )
    try:
        return dt.vacuum(
            retention_hours=retention_hours,
            dry_run=dry_run,
            enforce_retention_duration=enforce_retention_duration,
        )
    except Exception as exc:
        if "retention" in str(exc).lower():
            raise DeltaLayerError(
                f"vacuum of {location.uri} with retention_hours={retention_hours} is below the table's "
                f"minimum retention; pass enforce_retention_duration=False if you really mean it ({exc}).",
                table_uri=location.uri,
            ) from exc
        raise

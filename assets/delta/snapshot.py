"""A read-consistent view of a Delta table: one loaded `DeltaTable` and the facts derived from it.

Everything a write decides (which files to remove, which app transactions are done, the schema) is
derived from the *same* loaded version, and the commit goes through that same handle, so delta-rs
detects any commit that happened in between.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError as DeltaTableNotFound
from pyarrow import fs as pafs

from assets.delta.errors import TableNotFoundError
from assets.delta.location import TableLocation, resolve
from assets.delta.partitions import to_partition_string
from assets.delta.schema import table_schema_json


@dataclass(frozen=True)
class ActiveFile:
    rel_path: str  # decoded: the real path on storage relative to the table root
    size: int
    partition_values: dict[str, str | None]
    num_records: int | None
    # per-file bounds of top-level columns from the log's stats (absent when not recorded)
    min_values: dict[str, Any] = field(default_factory=dict)
    max_values: dict[str, Any] = field(default_factory=dict)


def table_exists(table_uri: str | os.PathLike[str]) -> bool:
    """True if a Delta table (a `_delta_log` with at least one commit) exists at `table_uri`."""
    location = resolve(table_uri)
    return DeltaTable.is_deltatable(location.uri)


def open_table(
    location: TableLocation,
    *,
    version: int | None = None,
    timestamp: datetime | str | None = None,
) -> DeltaTable:
    """Load the table (optionally time-travelled) or raise a TableNotFoundError that says why."""
    if version is not None and timestamp is not None:
        raise ValueError("pass either version or timestamp, not both")
    try:
        dt = DeltaTable(location.uri)
    except DeltaTableNotFound as exc:
        raise TableNotFoundError(
            f"No Delta table at {location.uri}; write it first (write_delta creates it on first write).",
            table_uri=location.uri,
        ) from exc
    if version is None and timestamp is None:
        return dt
    try:
        dt.load_as_version(version if version is not None else timestamp)  # type: ignore[arg-type]
    except Exception as exc:
        raise TableNotFoundError(
            f"Delta table {location.uri} has no version matching "
            f"{'version=' + str(version) if version is not None else 'timestamp=' + str(timestamp)} "
            f"(latest is {DeltaTable(location.uri).version()}); pick a version/timestamp inside its "
            f"retained history ({exc}).",
            table_uri=location.uri,
            version=version,
        ) from exc
    return dt


def partition_columns(dt: DeltaTable) -> list[str]:
    return list(dt.metadata().partition_columns)


def schema_json(dt: DeltaTable) -> dict[str, Any]:
    return table_schema_json(dt.schema())


def active_files(dt: DeltaTable) -> list[ActiveFile]:
    """The files of the loaded version with *decoded* paths and string partition values.

    `get_add_actions` returns URL-encoded paths (the log form) while AddAction/RemoveAction take raw
    paths, so everything in this package works with decoded paths.
    """
    actions = pa.table(dt.get_add_actions(flatten=True))
    parts = partition_columns(dt)
    columns = actions.to_pydict()
    top_level = [f["name"] for f in schema_json(dt)["fields"]]
    bounded = [c for c in top_level if f"min.{c}" in columns and f"max.{c}" in columns]
    files: list[ActiveFile] = []
    for i, path in enumerate(columns.get("path", [])):
        values = {p: to_partition_string(columns[f"partition.{p}"][i]) for p in parts}
        num = columns.get("num_records", [None] * (i + 1))[i]
        mins = {c: columns[f"min.{c}"][i] for c in bounded if columns[f"min.{c}"][i] is not None}
        maxs = {c: columns[f"max.{c}"][i] for c in bounded if columns[f"max.{c}"][i] is not None}
        files.append(ActiveFile(unquote(path), int(columns["size_bytes"][i]), values, num, mins, maxs))
    return files


def _logged_app_ids(location: TableLocation) -> set[str]:
    """Every appId ever mentioned in the retained log (JSON commits and checkpoints)."""
    fs = location.filesystem
    app_ids: set[str] = set()
    infos = fs.get_file_info(pafs.FileSelector(location.log_dir, allow_not_found=True))
    for info in infos:
        name = os.path.basename(info.path)
        if name.endswith(".json") and name[:20].isdigit():
            with fs.open_input_stream(info.path) as stream:
                for line in stream.read().decode("utf-8").splitlines():
                    if '"txn"' in line:
                        action = json.loads(line)
                        if "txn" in action:
                            app_ids.add(action["txn"]["appId"])
        elif ".checkpoint" in name and name.endswith(".parquet"):
            table = pq.read_table(info.path, filesystem=fs, columns=["txn"])
            for txn in table.column("txn").to_pylist():
                if txn and txn.get("appId"):
                    app_ids.add(txn["appId"])
    return app_ids


def committed_app_versions(location: TableLocation, dt: DeltaTable) -> dict[str, int]:
    versions: dict[str, int] = {}
    for app_id in sorted(_logged_app_ids(location)):
        committed = dt.transaction_version(app_id)
        if committed is not None:
            versions[app_id] = committed
    return versions


def app_transaction_versions(table_uri: str | os.PathLike[str]) -> dict[str, int]:
    """app_id -> latest committed version for every app transaction in the table ({} if no table)."""
    location = resolve(table_uri)
    if not DeltaTable.is_deltatable(location.uri):
        return {}
    return committed_app_versions(location, DeltaTable(location.uri))

"""Per-file Delta statistics computed from Parquet footers.

Spark already wrote min/max/null counts into every row group's footer, so the driver only reads
footers (a few KB per file) instead of re-scanning data. Values are formatted by the *Delta* type of
the column (from the Spark schema), never by the Parquet/Arrow type, so the JSON matches what Delta
readers expect. Where a bound cannot be represented exactly (long strings, decimals, floats with NaN)
the bound is omitted: a missing stat only disables file skipping, a wrong one silently drops rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import pyarrow.parquet as pq
from pyarrow import fs as pafs

STRING_PREFIX_LENGTH = 32
_INTEGRAL = {"byte", "short", "integer", "long"}
_FLOATING = {"float", "double"}


@dataclass(frozen=True)
class FileStats:
    num_records: int
    stats_json: str


def _format_bound(value: Any, delta_type: str, *, is_max: bool) -> Any:
    """Delta JSON representation of a min/max bound, or None when it must be omitted."""
    if value is None:
        return None
    if delta_type in _INTEGRAL:
        return int(value)
    if delta_type in _FLOATING:
        number = float(value)
        return number if math.isfinite(number) else None
    if delta_type == "string":
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        if len(text) <= STRING_PREFIX_LENGTH:
            return text
        # A prefix is a valid lower bound but not a valid upper bound.
        return None if is_max else text[:STRING_PREFIX_LENGTH]
    if delta_type == "date":
        if isinstance(value, datetime):
            value = value.date()
        return value.isoformat() if isinstance(value, date) else None
    if delta_type == "timestamp":
        if not isinstance(value, datetime):
            return None
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if delta_type == "timestamp_ntz":
        if not isinstance(value, datetime):
            return None
        return value.replace(tzinfo=None).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return None  # boolean, binary, decimal, nested: no bounds


def file_stats(path: str, filesystem: pafs.FileSystem, column_types: Mapping[str, str]) -> FileStats:
    """Compute Delta stats for one Parquet file.

    `column_types` maps each top-level *data* column (partition columns excluded, they are not in the
    file) to its Delta primitive type name; other (nested) columns get no stats.
    """
    metadata = pq.read_metadata(path, filesystem=filesystem)
    num_records = metadata.num_rows
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    if metadata.num_row_groups == 0:
        return FileStats(num_records, json.dumps({"numRecords": num_records}))

    for col_index in range(metadata.num_columns):
        name = metadata.schema.column(col_index).path
        delta_type = column_types.get(name)
        if delta_type is None:  # nested leaf or unknown: skip
            continue
        null_total: int | None = 0
        lo: Any = None
        hi: Any = None
        bounds_ok = True
        for rg_index in range(metadata.num_row_groups):
            rg = metadata.row_group(rg_index)
            column = rg.column(col_index)
            stats = column.statistics
            if stats is None:
                null_total = None
                bounds_ok = False
                break
            if null_total is not None:
                null_total = null_total + stats.null_count if stats.has_null_count else None
            if rg.num_rows == 0:
                continue
            if stats.has_min_max:
                try:
                    lo = stats.min if lo is None or stats.min < lo else lo
                    hi = stats.max if hi is None or stats.max > hi else hi
                except TypeError:
                    bounds_ok = False
            elif not (stats.has_null_count and stats.null_count == rg.num_rows):
                bounds_ok = False  # non-null values without bounds: cannot bound the file
        if null_total is not None:
            nulls[name] = null_total
        if bounds_ok and lo is not None:
            lo_json = _format_bound(lo, delta_type, is_max=False)
            hi_json = _format_bound(hi, delta_type, is_max=True)
            if lo_json is not None:
                mins[name] = lo_json
            if hi_json is not None:
                maxs[name] = hi_json

    payload: dict[str, Any] = {"numRecords": num_records}
    if mins:
        payload["minValues"] = mins
    if maxs:
        payload["maxValues"] = maxs
    if nulls:
        payload["nullCount"] = nulls
    return FileStats(num_records, json.dumps(payload, separators=(",", ":")))

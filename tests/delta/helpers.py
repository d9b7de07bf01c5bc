"""Shared helpers for the Delta tests: row normalisation and raw log inspection."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def norm(value: Any) -> Any:
    """Compare Spark (naive UTC) and Arrow/DuckDB (tz-aware) timestamps on equal terms."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def rows_of(records: list[dict[str, Any]], columns: list[str]) -> list[tuple[Any, ...]]:
    return sorted((tuple(norm(r[c]) for c in columns) for r in records), key=repr)


def spark_rows(df, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    columns = columns or df.columns
    return rows_of([r.asDict(recursive=True) for r in df.collect()], columns)


def log_actions(table: Path) -> list[dict[str, Any]]:
    actions = []
    for commit in sorted((table / "_delta_log").glob("*.json")):
        actions += [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
    return actions


def data_files_on_disk(table: Path) -> set[str]:
    """Parquet files under the table root, excluding the log and staging areas."""
    return {
        str(p.relative_to(table))
        for p in table.rglob("*.parquet")
        if not any(part.startswith("_") for part in p.relative_to(table).parts)
    }

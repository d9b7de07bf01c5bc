"""Lineage and metadata attached to every lakehouse materialization.

Each materialization records which Delta version it produced, how many rows, the schema, the exact
input versions it read (so any gold version can be traced to the silver/bronze versions behind it),
and a small markdown preview. Inputs are always read *pinned* to a version taken at the start of the
step, so the recorded versions are exactly the data that was used.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from dagster import MetadataValue, TableColumn, TableSchema

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

PREVIEW_ROWS = 8


def pinned_version(table_uri: str) -> int | None:
    from assets.delta import table_exists, table_version

    return table_version(table_uri) if table_exists(table_uri) else None


def read_partitions(
    spark: SparkSession,
    table_uri: str,
    *,
    version: int | None,
    column: str | None = None,
    values: Iterable[date | str] | None = None,
) -> DataFrame:
    """The table at ``version`` restricted to the partitions ``column in values`` (files pruned)."""
    from assets.delta import read_spark

    partitions = {column: list(values)} if column is not None and values is not None else None
    return read_spark(spark, table_uri, version=version, partitions=partitions)


def spark_table_schema(schema: Any) -> TableSchema:
    return TableSchema(columns=[TableColumn(f.name, f.dataType.simpleString()) for f in schema.fields])


def arrow_table_schema(schema: Any) -> TableSchema:
    """Column schema for the UI from an Arrow schema, in the Delta/Spark type names analysts query."""
    from assets.delta.schema import arrow_schema_json

    def name(t: Any) -> str:
        if isinstance(t, str):
            return t
        if t["type"] == "array":
            return f"array<{name(t['elementType'])}>"
        if t["type"] == "map":
            return f"map<{name(t['keyType'])},{name(t['valueType'])}>"
        return "struct<" + ",".join(f"{f['name']}:{name(f['type'])}" for f in t["fields"]) + ">"

    return TableSchema(
        columns=[TableColumn(f["name"], name(f["type"])) for f in arrow_schema_json(schema)["fields"]]
    )


def markdown_preview(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str], limit: int = PREVIEW_ROWS
) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, bytes | bytearray):
            value = value[:40].decode("utf-8", "replace")
        text = str(value)
        return (text[:60] + "…" if len(text) > 60 else text).replace("|", "\\|").replace("\n", " ")

    head = "| " + " | ".join(columns) + " |"
    sep = "| " + " | ".join("---" for _ in columns) + " |"
    body = ["| " + " | ".join(cell(row.get(c)) for c in columns) + " |" for row in rows[:limit]]
    return "\n".join([head, sep, *body]) if body else "_no rows_"


def table_metadata(
    table_uri: str,
    commit: Any,
    df: DataFrame | pa.Table,
    *,
    inputs: Mapping[str, int | None] | None = None,
    partitions: Sequence[date] | None = None,
    extra: Mapping[str, Any] | None = None,
    preview_columns: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Standard metadata for a materialization that committed ``df`` to ``table_uri`` as ``commit``.

    ``df`` is a Spark DataFrame (still cached: the preview is taken from it instead of re-reading the
    table) or the Arrow table that was written.
    """
    meta: dict[str, Any] = {
        "table_uri": MetadataValue.path(table_uri),
        "delta_version": MetadataValue.int(int(commit.version)),
        "commit_skipped": MetadataValue.bool(bool(commit.skipped)),
        "rows_written": MetadataValue.int(int(commit.rows_written)),
        "files_added": MetadataValue.int(int(commit.files_added)),
        "files_removed": MetadataValue.int(int(commit.files_removed)),
        "dagster/row_count": MetadataValue.int(int(commit.rows_written)),
    }
    import pyarrow as pa

    is_arrow = isinstance(df, pa.Table)
    meta["dagster/column_schema"] = (
        arrow_table_schema(df.schema) if is_arrow else spark_table_schema(df.schema)
    )
    if inputs is not None:
        meta["input_versions"] = MetadataValue.json(dict(inputs))
    if partitions:
        meta["partitions_replaced"] = MetadataValue.json([d.isoformat() for d in partitions])
    columns = list(preview_columns or [f.name for f in df.schema][:10])
    if is_arrow:
        rows = df.select(columns).slice(0, PREVIEW_ROWS).to_pylist()
    else:
        rows = [r.asDict() for r in df.select(*columns).limit(PREVIEW_ROWS).collect()]
    meta["preview"] = MetadataValue.md(markdown_preview(rows, columns))
    for key, value in (extra or {}).items():
        meta[key] = value
    return meta


def up_to_date_metadata(
    table_uri: str, inputs: Mapping[str, int | None], extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Metadata of a materialization whose inputs brought nothing new: no commit, same version."""
    return {
        "table_uri": MetadataValue.path(table_uri),
        "delta_version": MetadataValue.int(pinned_version(table_uri) or 0),
        "commit_skipped": MetadataValue.bool(True),
        "rows_written": MetadataValue.int(0),
        "up_to_date": MetadataValue.bool(True),
        "input_versions": MetadataValue.json(dict(inputs)),
        **(extra or {}),
    }


def commit_lineage(
    inputs: Mapping[str, int | None], logic: str | None = None, fields: str | None = None, **extra: Any
) -> dict[str, str]:
    """Lineage stored in the Delta commit itself (readable without Dagster via ``history``): the input
    versions read and the fingerprint of the declared logic that wrote it
    (``assets.pipeline.fingerprint``)."""
    from assets.pipeline.fingerprint import FIELDS_KEY, LOGIC_KEY

    return {
        "streamhouse.inputs": json.dumps(dict(inputs), sort_keys=True),
        **({LOGIC_KEY: logic} if logic else {}),
        **({FIELDS_KEY: fields} if fields else {}),
        **{k: str(v) for k, v in extra.items()},
    }


def upstream_inputs(lake_root: str, inputs: Mapping[str, int | None]) -> dict[str, Any]:
    """The inputs recorded by each input's own commit: gold → silver version → bronze version.

    ``inputs`` maps ``layer/table`` to the version read; the result maps ``layer/table@version`` to
    that commit's ``streamhouse.inputs`` (empty when it recorded none).
    """
    from assets.delta import history, table_version
    from assets.lake.layout import path_uri

    out: dict[str, Any] = {}
    for name, version in inputs.items():
        if version is None:
            continue
        uri = path_uri(lake_root, name)
        try:
            # Only the commits since the one read (newest first): a long-lived table has thousands.
            entries = history(uri, limit=max(1, table_version(uri) - version + 1))
        except Exception:  # lineage is best effort; never fail a materialization over it
            continue
        for entry in entries:
            if entry.get("version") == version:
                raw = entry.get("streamhouse.inputs")
                out[f"{name}@{version}"] = json.loads(raw) if raw else {}
                break
    return out

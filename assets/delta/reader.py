"""Reading Delta tables from Spark (natively with Delta jars, else as plain Parquet), Arrow and DuckDB.

Spark reads the exact file list of a snapshot as plain Parquet with the Delta schema; partition
values come from the *log* (joined by file name) rather than from directory names, so files written
by any Delta writer (Spark layout or delta-rs layout) read back identically.
"""

from __future__ import annotations

import functools
import os
import posixpath
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from assets.delta.errors import DeltaLayerError
from assets.delta.location import TableLocation, resolve
from assets.delta.partitions import normalize_where, partition_matches
from assets.delta.snapshot import ActiveFile, active_files, open_table, partition_columns, schema_json

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

FILE_NAME_COL = "__streamhouse_file_name"


def _struct_type(fields: list[dict[str, Any]]) -> Any:
    from pyspark.sql.types import StructType

    return StructType.fromJson({"type": "struct", "fields": fields})


def read_files(
    spark: SparkSession,
    location: TableLocation,
    table_schema: dict[str, Any],
    partition_cols: Sequence[str],
    files: Sequence[ActiveFile],
    *,
    with_file_name: bool = False,
) -> DataFrame:
    """A DataFrame over exactly `files`, in table column order (optionally with their file name)."""
    from pyspark.sql import functions as F

    columns = [f["name"] for f in table_schema["fields"]]
    out_columns = [*columns, FILE_NAME_COL] if with_file_name else columns
    full_schema = _struct_type(table_schema["fields"])
    if not files:
        empty = spark.createDataFrame([], full_schema)
        return empty.withColumn(FILE_NAME_COL, F.lit(None).cast("string")) if with_file_name else empty

    data_fields = [f for f in table_schema["fields"] if f["name"] not in partition_cols]
    paths = [location.spark_path(f.rel_path) for f in files]
    df = spark.read.schema(_struct_type(data_fields)).parquet(*paths)
    if not partition_cols and not with_file_name:
        return df.select(*columns)
    df = df.withColumn(FILE_NAME_COL, F.col("_metadata.file_name"))
    if partition_cols:
        types = {
            f["name"]: _struct_type([_field(f["name"], f["type"])])[f["name"]].dataType
            for f in table_schema["fields"]
        }
        names = [posixpath.basename(f.rel_path) for f in files]
        if len(set(names)) == len(names):
            # One scan; partition values joined on the (unique) file name.
            mapping_schema = ", ".join(
                [f"`{FILE_NAME_COL}` string", *[f"`{p}` string" for p in partition_cols]]
            )
            rows = [
                (name, *[f.partition_values.get(p) for p in partition_cols])
                for name, f in zip(names, files, strict=True)
            ]
            mapping = spark.createDataFrame(rows, mapping_schema)
            for p in partition_cols:
                mapping = mapping.withColumn(p, F.col(p).cast(types[p]))
            df = df.join(F.broadcast(mapping), FILE_NAME_COL)
        else:
            # Foreign writers may reuse file names across partitions: one scan per partition instead.
            groups: dict[tuple[str | None, ...], list[ActiveFile]] = {}
            for f in files:
                groups.setdefault(tuple(f.partition_values.get(p) for p in partition_cols), []).append(f)
            parts_dfs = []
            for values, group in groups.items():
                part_df = spark.read.schema(_struct_type(data_fields)).parquet(
                    *[location.spark_path(f.rel_path) for f in group]
                )
                part_df = part_df.withColumn(FILE_NAME_COL, F.col("_metadata.file_name"))
                for p, v in zip(partition_cols, values, strict=True):
                    part_df = part_df.withColumn(p, F.lit(v).cast(types[p]))
                parts_dfs.append(part_df)
            df = functools.reduce(lambda a, b: a.unionByName(b), parts_dfs)
    return df.select(*out_columns)


def _field(name: str, data_type: Any) -> dict[str, Any]:
    return {"name": name, "type": data_type, "nullable": True, "metadata": {}}


def prune_files(
    dt: Any,
    files: Sequence[ActiveFile],
    partitions: Mapping[str, object | Sequence[object]] | None,
    table_uri: str,
) -> list[ActiveFile]:
    """Keep the files whose partition values satisfy `partitions` ({column: value or list of values},
    same validation and typed matching as `write_delta(where=...)`; None means every file)."""
    if partitions is None:
        return list(files)
    parts = partition_columns(dt)
    types = {f["name"]: f["type"] for f in schema_json(dt)["fields"] if f["name"] in parts}
    typed = normalize_where(partitions, types, table_uri=table_uri, version=dt.version())
    return [f for f in files if partition_matches(f.partition_values, typed, types)]


# Reader features that change how data files must be interpreted; a plain Parquet scan would be wrong.
_PLAIN_PARQUET_UNSAFE = {"deletionVectors", "columnMapping", "v2Checkpoint", "variantType", "typeWidening"}


def check_plain_parquet_readable(dt: Any, table_uri: str) -> None:
    """Refuse tables whose files cannot be read as plain Parquet (written by other Delta engines)."""
    features = set(dt.protocol().reader_features or [])
    unsafe = sorted(features & _PLAIN_PARQUET_UNSAFE)
    if unsafe:
        raise DeltaLayerError(
            f"Delta table {table_uri} uses reader features {unsafe}, which a plain Parquet scan cannot "
            "honour; read it with an engine that supports them (Spark with Delta jars, or delta-rs where "
            "it does).",
            table_uri=table_uri,
            version=dt.version(),
        )


def read_spark(
    spark: SparkSession,
    table_uri: str | os.PathLike[str],
    *,
    version: int | None = None,
    timestamp: datetime | str | None = None,
    partitions: Mapping[str, object | Sequence[object]] | None = None,
) -> DataFrame:
    """The table (optionally time-travelled) as a Spark DataFrame with the Delta schema.

    `partitions` ({partition column: value or list of values, None = the null partition}) prunes the
    file list before Spark sees it, so reading one day of a daily table scans only that day's files.

    With native Delta on (`assets.delta.native`) Spark reads ``format("delta")`` with ``versionAsOf``;
    a `timestamp` is first resolved to its version through the log (the latest version committed at
    or before it), so both engines read the same version for the same timestamp, including one after
    the last commit (Spark's ``timestampAsOf`` refuses those).
    """
    from assets.delta.native import native_setting, read_native

    location = resolve(table_uri)
    dt = open_table(location, version=version, timestamp=timestamp)
    if native_setting(spark) != "false":
        pinned = dt.version() if (version is not None or timestamp is not None) else None
        df = read_native(spark, location, pinned)
        if partitions is not None:
            from assets.delta.partitions import spark_predicate

            parts = partition_columns(dt)
            types = {f["name"]: f["type"] for f in schema_json(dt)["fields"] if f["name"] in parts}
            typed = normalize_where(partitions, types, table_uri=location.uri, version=dt.version())
            df = df.where(spark_predicate(typed))
        return df
    check_plain_parquet_readable(dt, location.uri)
    files = prune_files(dt, active_files(dt), partitions, location.uri)
    return read_files(spark, location, schema_json(dt), partition_columns(dt), files)


def table_schema(
    table_uri: str | os.PathLike[str],
    *,
    version: int | None = None,
    timestamp: datetime | str | None = None,
) -> StructType:
    """The table's schema at a version as a Spark StructType, without reading any data."""
    from pyspark.sql.types import StructType

    dt = open_table(resolve(table_uri), version=version, timestamp=timestamp)
    return StructType.fromJson(schema_json(dt))


def read_arrow(
    table_uri: str | os.PathLike[str],
    *,
    version: int | None = None,
    timestamp: datetime | str | None = None,
    columns: Sequence[str] | None = None,
    filters: Any = None,
) -> pa.Table:
    """The table as an Arrow table via deltalake (filters: pyarrow expression or DNF tuples)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    dt = open_table(resolve(table_uri), version=version, timestamp=timestamp)
    dataset = dt.to_pyarrow_dataset()
    expression = None
    if filters is not None:
        expression = filters if isinstance(filters, pc.Expression) else pq.filters_to_expression(filters)
    return dataset.to_table(columns=list(columns) if columns is not None else None, filter=expression)


def duckdb_relation(
    con: duckdb.DuckDBPyConnection,
    table_uri: str | os.PathLike[str],
    *,
    version: int | None = None,
    timestamp: datetime | str | None = None,
    view_name: str | None = None,
) -> duckdb.DuckDBPyRelation:
    """A DuckDB relation over the table's Arrow dataset (DuckDB's `delta` extension needs a download).

    With `view_name` the dataset is also registered as a view so it can be used in SQL.
    """
    dt = open_table(resolve(table_uri), version=version, timestamp=timestamp)
    dataset = dt.to_pyarrow_dataset()
    if view_name:
        con.register(view_name, dataset)
        return con.table(view_name)
    return con.from_arrow(dataset)


def table_version(table_uri: str | os.PathLike[str]) -> int:
    """Latest committed version (TableNotFoundError if there is no table)."""
    return open_table(resolve(table_uri)).version()


def history(table_uri: str | os.PathLike[str], limit: int | None = None) -> list[dict[str, Any]]:
    """Commit infos, newest first, each with its `version`.

    The commit metadata a native Delta write keeps as JSON in ``userMetadata`` is flattened into the
    entry, so entries carry the same keys (``streamhouse.inputs``, ...) whichever engine wrote them.
    """
    from assets.delta.native import user_metadata

    entries = open_table(resolve(table_uri)).history(limit)
    return [{**user_metadata(e), **e} for e in entries]

"""Analyst access to the lake: find, describe and query every Delta table by name, with time travel.

From a notebook::

    from assets.lake import sql, spark_views
    sql("SELECT product_id, sum(revenue) FROM gold.revenue_tumbling_5m GROUP BY 1")   # pandas
    sql("SELECT count(*) FROM silver.orders@v3", arrow=True)                          # pyarrow.Table
    sql("SELECT * FROM gold.orders_enriched", as_of="2026-11-21T10:00:00Z")
    spark_views(spark)    # then spark.sql("SELECT * FROM `gold.revenue_tumbling_5m`")

The same engine backs `streamhouse tables | describe | sql` (orchestration/cli/lake.py). The lake root
is `lake_root=` or, as for the platform, `STREAMHOUSE_LAKE_ROOT` / `lake_root` in streamhouse.yaml /
`.state/lake`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from assets.lake.catalog import (
    Lake,
    TableDescription,
    TableInfo,
    TableRef,
    default_lake_root,
    describe,
    discover,
    history,
    list_tables,
    parse_as_of,
)
from assets.lake.errors import (
    LakeQueryError,
    SqlError,
    SqlSyntaxError,
    UnknownColumnError,
    UnknownTableError,
    VersionOutOfRangeError,
)
from assets.lake.query import LakeSession, ScanStats, find_tables

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

AsOf = int | str | datetime | None


def sql(
    query: str,
    *,
    as_of: AsOf = None,
    lake_root: str | os.PathLike[str] | None = None,
    arrow: bool = False,
    locked: bool = False,
) -> Any:
    """Run DuckDB SQL over the lake's tables (`gold.revenue_tumbling_5m`, `silver.orders@v3`, ...).

    Returns a pandas DataFrame (`arrow=True`: a pyarrow Table). Every call sees the tables' latest
    versions (or `as_of`: a version or timestamp for every table). Mistakes raise a `LakeQueryError`
    whose message says what to fix. `locked=True` for SQL from someone else: no file or network access
    beyond the lake's tables (see `LakeSession`).
    """
    with LakeSession(lake_root, as_of=as_of, locked=locked) as session:
        table = session.arrow(query)
    return table if arrow else table.to_pandas()


def spark_views(
    spark: SparkSession,
    *,
    as_of: AsOf | Mapping[str, AsOf] = None,
    lake_root: str | os.PathLike[str] | None = None,
    tables: list[str] | None = None,
) -> list[str]:
    """Register every table (or `tables`) as a Spark temp view named like the table (read by
    `assets.delta.read_spark`, so exactly as the pipeline reads it).

    Spark only accepts one-part temp view names, so the view is called `gold.revenue_tumbling_5m`
    and is queried with backticks: ``spark.sql("SELECT * FROM `gold.revenue_tumbling_5m`")`` or
    ``spark.table("`gold.revenue_tumbling_5m`")``. `as_of`: a version/timestamp for every table, or
    {table: version/timestamp}; with one timestamp for all, tables created after it are skipped.
    Returns the names registered.
    """
    from assets.delta import read_spark
    from assets.lake.catalog import open_at

    lake = discover(lake_root)
    names = [lake.get(n).name for n in tables] if tables is not None else lake.names()
    registered = []
    for name in names:
        ref = lake.tables[name]
        when = as_of.get(name) if isinstance(as_of, Mapping) else as_of
        parsed = parse_as_of(when)
        try:
            version = open_at(ref, parsed).version()  # a timestamp resolves to a version here
        except VersionOutOfRangeError:
            if isinstance(as_of, Mapping) or not isinstance(parsed, datetime):
                raise
            continue
        read_spark(spark, ref.uri, version=version).createOrReplaceTempView(f"`{name}`")
        registered.append(name)
    return registered


__all__ = [
    "Lake",
    "LakeQueryError",
    "LakeSession",
    "ScanStats",
    "SqlError",
    "SqlSyntaxError",
    "TableDescription",
    "TableInfo",
    "TableRef",
    "UnknownColumnError",
    "UnknownTableError",
    "VersionOutOfRangeError",
    "default_lake_root",
    "describe",
    "discover",
    "find_tables",
    "history",
    "list_tables",
    "parse_as_of",
    "spark_views",
    "sql",
]

"""One table, three engines (Spark, deltalake/Arrow, DuckDB), and a Delta log other readers accept."""

from __future__ import annotations

import json
import re
import shutil
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow.compute as pc
import pytest

from assets.delta import (
    PartitionFilterError,
    duckdb_relation,
    optimize,
    read_arrow,
    read_spark,
    table_exists,
    table_schema,
    write_delta,
)
from assets.delta.native import delta_engine
from assets.spark.delta_jars import unavailable_reason
from tests.delta.helpers import log_actions, rows_of, spark_rows
from tests.fixtures.spark import STATE_DIR

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCHEMA = (
    "id long, label string, score double, price decimal(10,2), ok boolean, "
    "ts timestamp, day date, tags array<string>, attrs struct<k:string,v:int>, region string"
)


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Built once for the module (three commits: partitioned create, append, merge); tests only read it."""
    path = tmp_path_factory.mktemp("readers") / "wide"
    rows = [
        (
            i,
            None if i == 3 else f"label-{i}",
            i / 3,
            Decimal(f"{i}.25"),
            i % 2 == 0,
            datetime(2024, 1, 1, 0, 0, i, 123456 + i),
            date(2024, 1, 1 + i % 2),
            ["x", str(i)],
            (f"k{i}", i),
            [None, "eu", "us west"][i % 3],
        )
        for i in range(6)
    ]
    df = spark.createDataFrame(rows, SCHEMA)
    assert not table_exists(path)
    write_delta(df.filter("id < 3"), path, partition_by=["region", "day"])
    write_delta(df.filter("id >= 3"), path)
    write_delta(df.filter("id = 1").withColumn("label", df.label), path, mode="merge", merge_keys=["id"])
    assert table_exists(path)
    return path, df.columns


def test_spark_arrow_and_duckdb_read_the_same_rows(spark, table) -> None:
    path, columns = table
    from_spark = spark_rows(read_spark(spark, path), columns)
    from_arrow = rows_of(read_arrow(path).to_pylist(), columns)
    con = duckdb.connect()
    relation = duckdb_relation(con, path, view_name="wide")
    from_duckdb = rows_of([dict(zip(relation.columns, r, strict=True)) for r in relation.fetchall()], columns)
    assert len(from_spark) == 6
    assert from_spark == from_arrow == from_duckdb
    assert con.sql("select count(*) from wide where region is null").fetchall() == [(2,)]
    assert str(dict(zip(relation.columns, relation.dtypes, strict=True))["ts"]) == "TIMESTAMP WITH TIME ZONE"


def test_arrow_reader_projects_and_filters(table) -> None:
    path, _ = table
    subset = read_arrow(path, columns=["id", "region"], filters=[("region", "=", "eu")])
    assert subset.column_names == ["id", "region"]
    assert sorted(subset.column("id").to_pylist()) == [1, 4]
    by_expr = read_arrow(path, columns=["id"], filters=pc.field("id") > 3)
    assert sorted(by_expr.column("id").to_pylist()) == [4, 5]


def test_delta_log_is_portable(spark, table, tmp_path: Path) -> None:
    path = tmp_path / "wide"
    shutil.copytree(table[0], path)  # optimize() below must not change the shared table
    actions = log_actions(path)
    raw_log = "".join(p.read_text() for p in (path / "_delta_log").glob("*.json"))
    assert "timestampNanos" not in raw_log and "timestampNtz" not in raw_log
    protocols = [a["protocol"] for a in actions if "protocol" in a]
    assert protocols and all(p["minReaderVersion"] <= 3 for p in protocols)
    schema = json.loads(next(a["metaData"] for a in actions if "metaData" in a)["schemaString"])
    assert {f["name"]: f["type"] for f in schema["fields"]}["ts"] == "timestamp"

    live: dict[str, dict] = {}
    for action in actions:
        if "add" in action:
            live[action["add"]["path"]] = action["add"]
        elif "remove" in action:
            live.pop(action["remove"]["path"], None)
    stats = [json.loads(add["stats"]) for add in live.values()]
    assert sum(s["numRecords"] for s in stats) == read_spark(spark, path).count() == 6
    for s in stats:
        assert set(s["nullCount"]) >= {"id", "label", "score", "ts"}
        assert s["minValues"]["id"] <= s["maxValues"]["id"]
        # ISO UTC; microseconds from the deltalake path, milliseconds from native Delta (delta-spark)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(\d{3})?Z", s["minValues"]["ts"])
    assert all(set(add["partitionValues"]) == {"region", "day"} for add in live.values())

    optimize(path)  # delta-rs rewrites must keep the log portable too
    raw_log = "".join(p.read_text() for p in (path / "_delta_log").glob("*.json"))
    assert "timestampNanos" not in raw_log
    assert spark_rows(read_spark(spark, path)) == rows_of(
        read_arrow(path).to_pylist(), read_spark(spark, path).columns
    )


def test_read_spark_prunes_partitions_and_schema_needs_no_data(spark, table) -> None:
    path, columns = table
    eu = read_spark(spark, path, partitions={"region": "eu"})
    assert sorted(r.id for r in eu.collect()) == [1, 4]
    assert eu.inputFiles() and all("region=eu" in f for f in eu.inputFiles())
    nulls = read_spark(
        spark, path, partitions={"region": [None], "day": [date(2024, 1, 1), date(2024, 1, 2)]}
    )
    assert sorted(r.id for r in nulls.collect()) == [0, 3]
    assert read_spark(spark, path, partitions={"region": "nowhere"}).count() == 0
    with pytest.raises(PartitionFilterError, match="not partition columns"):
        read_spark(spark, path, partitions={"id": 1})
    assert table_schema(path, version=0) == read_spark(spark, path, version=0).schema
    assert table_schema(path).fieldNames() == columns


def test_tables_needing_delta_semantics_are_refused_by_the_plain_parquet_reader(
    spark, table, tmp_path
) -> None:
    from deltalake import DeltaTable, TableFeatures

    from assets.delta import DeltaLayerError

    path = tmp_path / "dv"
    shutil.copytree(table[0], path)
    DeltaTable(str(path)).alter.add_feature(
        TableFeatures.DeletionVectors, allow_protocol_versions_increase=True
    )
    with delta_engine(spark, "false"), pytest.raises(DeltaLayerError, match=r"deletionVectors.*Delta jars"):
        read_spark(spark, path)
    if not unavailable_reason(STATE_DIR):  # native Delta honours deletion vectors: it reads the table
        with delta_engine(spark, "true"):
            assert read_spark(spark, path).count() == 6

"""Schema conflicts, schema evolution and partition-predicate validation."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import functions as F

from assets.delta import (
    PartitionFilterError,
    SchemaMismatchError,
    read_spark,
    table_version,
    write_delta,
)
from assets.delta.errors import StreamhouseError, WriteOptionsError
from tests.delta.helpers import data_files_on_disk

pytestmark = [pytest.mark.spark]


@pytest.fixture
def table(spark, tmp_lake: Path) -> Path:
    path = tmp_lake / "orders"
    df = spark.createDataFrame([(1, "eu", 10.0), (2, "us", 20.0)], "id long, region string, amount double")
    write_delta(df, path, partition_by=["region"])
    return path


def test_schema_conflicts_name_the_columns(spark, table: Path) -> None:
    base = spark.createDataFrame([(3, "eu", 1.0)], "id long, region string, amount double")
    files_before = data_files_on_disk(table)

    with pytest.raises(SchemaMismatchError, match=r"missing columns \['amount'\]") as missing:
        write_delta(base.drop("amount"), table)
    assert missing.value.columns == ("amount",) and missing.value.version == 0

    with pytest.raises(SchemaMismatchError, match=r"amount \(double -> string\)"):
        write_delta(base.withColumn("amount", F.col("amount").cast("string")), table)

    with pytest.raises(SchemaMismatchError, match=r"new columns \['note'\].*schema_evolution=True"):
        write_delta(base.withColumn("note", F.lit("x")), table)

    with pytest.raises(WriteOptionsError, match="partition_by"):
        write_delta(base, table, partition_by=["id"])

    assert isinstance(missing.value, StreamhouseError)
    assert table_version(table) == 0 and data_files_on_disk(table) == files_before


def test_schema_evolution_adds_a_nullable_column(spark, table: Path) -> None:
    wider = spark.createDataFrame(
        [(3, "eu", 30.0, "gift")], "id long, region string, amount double, note string"
    )
    result = write_delta(wider.select("note", "amount", "region", "id"), table, schema_evolution=True)
    back = read_spark(spark, table)
    assert back.columns == ["id", "region", "amount", "note"]
    assert {r.id: r.note for r in back.collect()} == {1: None, 2: None, 3: "gift"}
    assert table_version(table) == result.version
    # later writes must now include the column
    with pytest.raises(SchemaMismatchError, match="note"):
        write_delta(spark.createDataFrame([(4, "eu", 1.0)], "id long, region string, amount double"), table)


def test_schema_evolution_with_overwrite_is_one_commit(spark, table: Path) -> None:
    wider = spark.createDataFrame([(7, "us", 1.5, 3)], "id long, region string, amount double, qty int")
    result = write_delta(wider, table, mode="overwrite", schema_evolution=True)
    assert result.version == 1 and table_version(table) == 1
    assert [tuple(r) for r in read_spark(spark, table).collect()] == [(7, "us", 1.5, 3)]
    assert read_spark(spark, table, version=0).columns == ["id", "region", "amount"]


def test_column_order_and_nullability_do_not_matter(spark, table: Path) -> None:
    reordered = spark.range(5, 6).select(F.lit(99.0).alias("amount"), F.lit("eu").alias("region"), "id")
    assert not reordered.schema["id"].nullable  # spark.range ids are non-null; the table's are nullable
    write_delta(reordered, table)
    assert sorted(r.id for r in read_spark(spark, table).collect()) == [1, 2, 5]


def test_partition_filter_validation(spark, table: Path) -> None:
    eu = spark.createDataFrame([(5, "eu", 1.0)], "id long, region string, amount double")
    with pytest.raises(PartitionFilterError, match=r"\['amount'\] are not partition columns.*\['region'\]"):
        write_delta(eu, table, mode="overwrite_where", where={"amount": 1.0})
    with pytest.raises(PartitionFilterError, match="outside"):
        write_delta(eu, table, mode="overwrite_where", where={"region": "us"})
    with pytest.raises(PartitionFilterError, match="non-empty"):
        write_delta(eu, table, mode="overwrite_where", where={})
    with pytest.raises(PartitionFilterError, match="empty list"):
        write_delta(eu, table, mode="overwrite_where", where={"region": []})
    assert table_version(table) == 0


def test_overwrite_where_on_unpartitioned_table_is_rejected(spark, tmp_lake: Path) -> None:
    path = tmp_lake / "flat"
    df = spark.createDataFrame([(1, "eu")], "id long, region string")
    write_delta(df, path)
    with pytest.raises(PartitionFilterError, match="not partitioned"):
        write_delta(df, path, mode="overwrite_where", where={"region": "eu"})


def test_unsupported_spark_types_are_rejected(spark, tmp_lake: Path) -> None:
    df = spark.range(1).withColumn("nothing", F.lit(None))
    with pytest.raises(SchemaMismatchError, match="nothing"):
        write_delta(df, tmp_lake / "void")

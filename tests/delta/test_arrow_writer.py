"""write_delta_arrow: the JVM-free writer makes the same tables as write_delta (Spark), mixes with it,
and keeps the same guarantees (app-transaction idempotency, schema rules, partition layout)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from assets.delta import (
    AppTransaction,
    read_arrow,
    read_spark,
    table_version,
    write_delta,
    write_delta_arrow,
)
from assets.delta.errors import PartitionFilterError, SchemaMismatchError, WriteOptionsError
from tests.delta.helpers import data_files_on_disk, rows_of, spark_rows

pytestmark = [pytest.mark.spark]

TS = datetime(2024, 3, 1, 12, 30, 45, 123456, tzinfo=UTC)
SPARK_SCHEMA = "id long, name string, ts timestamp, payload binary, tags array<string>, region string"
ARROW_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("payload", pa.binary()),
        ("tags", pa.list_(pa.string())),
        ("region", pa.string()),
    ]
)
COLUMNS = ARROW_SCHEMA.names


def _rows(ids, region: str | None = "eu") -> list[dict]:
    return [
        {
            "id": i,
            "name": f"n{i}",
            "ts": TS.replace(second=i % 60),
            "payload": f'{{"i": {i}}}'.encode(),
            "tags": ["a", str(i)] if i % 2 else None,
            "region": region,
        }
        for i in ids
    ]


def _arrow(ids, region: str | None = "eu") -> pa.Table:
    return pa.Table.from_pylist(_rows(ids, region), schema=ARROW_SCHEMA)


def test_partitioned_append_reads_back_identically_with_arrow_and_spark(spark, tmp_lake) -> None:
    table = tmp_lake / "events"
    data = pa.concat_tables([_arrow(range(4), "eu"), _arrow(range(4, 6), "us west/2"), _arrow([6], None)])
    result = write_delta_arrow(data, table, partition_by=["region"])
    assert (result.version, result.rows_written, result.files_added) == (0, 7, 3)

    back = read_arrow(table)
    assert rows_of(back.to_pylist(), COLUMNS) == rows_of(data.to_pylist(), COLUMNS)
    df = read_spark(spark, table)
    assert df.schema.simpleString() == spark.createDataFrame([], SPARK_SCHEMA).schema.simpleString()
    expected = [
        {**r, "ts": r["ts"].replace(tzinfo=None), "payload": bytearray(r["payload"])}
        for r in data.to_pylist()
    ]
    assert spark_rows(df, COLUMNS) == rows_of(expected, COLUMNS)
    assert df.filter("region IS NULL").count() == 1 and df.filter("region = 'us west/2'").count() == 2
    # Spark-style layout: partition columns live in the directory names and the log, not in the files.
    files = data_files_on_disk(table)
    assert {f.split("/")[0] for f in files} == {
        "region=eu",
        "region=us%20west%2F2",
        "region=__HIVE_DEFAULT_PARTITION__",
    }
    assert DeltaTable(str(table)).metadata().partition_columns == ["region"]


def test_arrow_and_spark_writers_append_to_each_others_tables(spark, tmp_lake) -> None:
    table = tmp_lake / "mixed"
    write_delta(spark.createDataFrame(_rows(range(3)), SPARK_SCHEMA), table, partition_by=["region"])
    write_delta_arrow(_arrow(range(3, 5)), table)
    write_delta(spark.createDataFrame(_rows(range(5, 6)), SPARK_SCHEMA), table)
    assert table_version(table) == 2
    assert sorted(r["id"] for r in read_spark(spark, table).select("id").collect()) == list(range(6))


def test_app_transactions_make_a_replayed_batch_a_no_op(tmp_lake) -> None:
    table = tmp_lake / "idempotent"
    txn = [AppTransaction("topic-0", 10), AppTransaction("topic-1", 7)]
    first = write_delta_arrow(_arrow(range(5)), table, app_transactions=txn)
    again = write_delta_arrow(_arrow(range(5)), table, app_transactions=txn)
    assert not first.skipped and again.skipped and again.rows_written == 0
    assert table_version(table) == 0 and read_arrow(table).num_rows == 5
    newer = write_delta_arrow(_arrow(range(5, 8)), table, app_transactions=[AppTransaction("topic-0", 12)])
    assert not newer.skipped and read_arrow(table).num_rows == 8
    assert DeltaTable(str(table)).transaction_version("topic-0") == 12


def test_overwrite_replaces_every_row(tmp_lake) -> None:
    table = tmp_lake / "snapshot"
    write_delta_arrow(_arrow(range(5)), table, partition_by=["region"])
    result = write_delta_arrow(_arrow(range(100, 102), "us"), table, mode="overwrite")
    assert result.files_removed == 1
    assert sorted(read_arrow(table, columns=["id"]).column("id").to_pylist()) == [100, 101]


def test_overwrite_where_replaces_only_the_selected_partitions(spark, tmp_lake) -> None:
    """What a small gold recompute does: Arrow rows replace their partitions of a Spark-written table."""
    table = tmp_lake / "gold"
    rows = spark.createDataFrame(_rows(range(3), "eu") + _rows(range(3, 5), "us"), SPARK_SCHEMA)
    write_delta(rows, table, partition_by=["region"])
    result = write_delta_arrow(_arrow([10, 11], "eu"), table, mode="overwrite_where", where={"region": "eu"})
    assert result.files_removed >= 1 and result.rows_written == 2  # Spark may have written several files
    back = sorted((r.region, r.id) for r in read_spark(spark, table).select("region", "id").collect())
    assert back == [("eu", 10), ("eu", 11), ("us", 3), ("us", 4)]
    with pytest.raises(PartitionFilterError, match="outside where"):
        write_delta_arrow(_arrow([12], "us"), table, mode="overwrite_where", where={"region": "eu"})
    with pytest.raises(PartitionFilterError, match="non-empty `where`"):
        write_delta_arrow(_arrow([12], "eu"), table, mode="overwrite_where")
    assert table_version(table) == 1


def test_user_mistakes_are_clear_errors_and_write_nothing(tmp_lake) -> None:
    table = tmp_lake / "strict"
    write_delta_arrow(_arrow(range(2)), table)
    with pytest.raises(SchemaMismatchError, match="missing columns \\['tags'\\]"):
        write_delta_arrow(_arrow(range(2)).drop_columns(["tags"]), table)
    naive = _arrow(range(2)).set_column(2, "ts", pa.array([datetime(2024, 1, 1)] * 2, pa.timestamp("us")))
    with pytest.raises(SchemaMismatchError, match=r"ts .*tz='UTC'"):
        write_delta_arrow(naive, table)
    with pytest.raises(WriteOptionsError, match="use write_delta with a Spark DataFrame for merge"):
        write_delta_arrow(_arrow(range(2)), table, mode="merge")  # type: ignore[arg-type]
    with pytest.raises(WriteOptionsError, match="partition_by"):
        write_delta_arrow(_arrow(range(2)), table, partition_by=["region"])
    assert table_version(table) == 0 and read_arrow(table).num_rows == 2
    assert not list((tmp_lake / "strict").glob("_staging/*"))


def test_date_partitions_written_by_arrow_are_pruned_by_spark(spark, tmp_lake) -> None:
    table = tmp_lake / "by_day"
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "day": pa.array([date(2024, 1, 1), date(2024, 1, 2), date(2024, 1, 2)], pa.date32()),
        }
    )
    write_delta_arrow(data, table, partition_by=["day"])
    assert read_spark(spark, table, partitions={"day": date(2024, 1, 2)}).count() == 2

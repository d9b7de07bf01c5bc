"""Round trips through write_delta for every mode, partitioned and not, read back with Spark."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from pyspark.sql import functions as F

from assets.delta import read_arrow, read_spark, table_version, write_delta
from assets.delta.errors import PartitionFilterError, WriteOptionsError
from tests.delta.helpers import spark_rows

pytestmark = [pytest.mark.spark]

SCHEMA = "id long, name string, ts timestamp, day date, region string"
TS = datetime(2024, 3, 1, 12, 30, 45, 123456)  # microseconds must survive every round trip


def _rows(ids, region="eu", name="n"):
    return [(i, f"{name}{i}", TS.replace(second=i % 60), date(2024, 3, 1 + i % 3), region) for i in ids]


def test_append_unpartitioned_keeps_microseconds(spark, tmp_lake) -> None:
    table = tmp_lake / "events"
    first = write_delta(spark.createDataFrame(_rows(range(3)), SCHEMA), table)
    second = write_delta(spark.createDataFrame(_rows(range(3, 5)), SCHEMA), table)
    assert (first.version, second.version) == (0, 1)
    assert (first.rows_written, second.rows_written) == (3, 2)
    assert not first.skipped and first.files_removed == 0
    back = read_spark(spark, table)
    assert back.schema.simpleString() == spark.createDataFrame([], SCHEMA).schema.simpleString()
    assert spark_rows(back) == spark_rows(spark.createDataFrame(_rows(range(5)), SCHEMA))
    arrow_ts = read_arrow(table, columns=["ts"]).column("ts")
    assert str(arrow_ts.type) == "timestamp[us, tz=UTC]"
    assert TS.replace(second=0, tzinfo=UTC) in arrow_ts.to_pylist()


def test_append_partitioned_with_null_and_special_partition_values(spark, tmp_lake) -> None:
    table = tmp_lake / "by_region"
    rows = [*_rows([1], "eu"), *_rows([2], None), *_rows([3], "a b/c%d=e"), *_rows([4], "ü:?*")]
    df = spark.createDataFrame(rows, SCHEMA)
    result = write_delta(df, table, partition_by=["region"])
    assert result.files_added == 4
    assert spark_rows(read_spark(spark, table)) == spark_rows(df)
    assert sorted(read_arrow(table).column("region").to_pylist(), key=repr) == sorted(
        ["eu", None, "a b/c%d=e", "ü:?*"], key=repr
    )


def test_overwrite_replaces_all_rows(spark, tmp_lake) -> None:
    table = tmp_lake / "snap"
    created = write_delta(spark.createDataFrame(_rows(range(4)), SCHEMA), table, partition_by=["day"])
    result = write_delta(spark.createDataFrame(_rows([7]), SCHEMA), table, mode="overwrite")
    assert result.files_removed == created.files_added >= 3 and result.files_added == 1
    assert [r.id for r in read_spark(spark, table).collect()] == [7]


def test_overwrite_where_replaces_only_matching_partitions(spark, tmp_lake) -> None:
    table = tmp_lake / "daily"
    rows = [*_rows([1, 2], "eu"), *_rows([3], "us"), *_rows([4], None)]
    write_delta(spark.createDataFrame(rows, SCHEMA), table, partition_by=["region"])

    new_eu = spark.createDataFrame(_rows([10], "eu"), SCHEMA)
    result = write_delta(new_eu, table, mode="overwrite_where", where={"region": "eu"})
    assert result.files_removed == 1 and result.rows_written == 1
    assert sorted(r.id for r in read_spark(spark, table).collect()) == [3, 4, 10]

    # a list of values including the null partition
    new_rows = spark.createDataFrame([*_rows([20], "us"), *_rows([21], None)], SCHEMA)
    write_delta(new_rows, table, mode="overwrite_where", where={"region": ["us", None]})
    back = {r.id: r.region for r in read_spark(spark, table).collect()}
    assert back == {10: "eu", 20: "us", 21: None}


def test_overwrite_where_on_typed_partition_column(spark, tmp_lake) -> None:
    table = tmp_lake / "by_day"
    write_delta(spark.createDataFrame(_rows(range(6)), SCHEMA), table, partition_by=["day"])
    replacement = spark.createDataFrame(_rows([3]), SCHEMA).withColumn("name", F.lit("new"))
    write_delta(replacement, table, mode="overwrite_where", where={"day": date(2024, 3, 1)})
    back = read_spark(spark, table).collect()
    assert sorted((r.id, r.name) for r in back if r.day == date(2024, 3, 1)) == [(3, "new")]
    assert len([r for r in back if r.day != date(2024, 3, 1)]) == 4


@pytest.mark.slow
def test_merge_upserts_unpartitioned(spark, tmp_lake) -> None:
    table = tmp_lake / "dim"
    write_delta(spark.createDataFrame(_rows(range(5)), SCHEMA).repartition(2), table)
    before = table_version(table)
    upsert = spark.createDataFrame([*_rows([1, 3], name="upd"), *_rows([9], name="new")], SCHEMA)
    result = write_delta(upsert, table, mode="merge", merge_keys=["id"])
    assert result.version == before + 1
    assert result.files_removed >= 1
    back = {r.id: r.name for r in read_spark(spark, table).collect()}
    assert back == {0: "n0", 1: "upd1", 2: "n2", 3: "upd3", 4: "n4", 9: "new9"}


@pytest.mark.slow
def test_merge_partitioned_rewrites_only_touched_files(spark, tmp_lake) -> None:
    table = tmp_lake / "dim_by_region"
    rows = [*_rows([1, 2], "eu"), *_rows([3], "us"), *_rows([4], None)]
    write_delta(spark.createDataFrame(rows, SCHEMA), table, partition_by=["region"])
    upsert = spark.createDataFrame([*_rows([2], "eu", name="upd"), *_rows([5], "apac", name="new")], SCHEMA)
    result = write_delta(upsert, table, mode="merge", merge_keys=["region", "id"])
    assert result.files_removed == 1  # only the eu file held a matching key
    back = {(r.region, r.id): r.name for r in read_spark(spark, table).collect()}
    assert back == {("eu", 1): "n1", ("eu", 2): "upd2", ("us", 3): "n3", (None, 4): "n4", ("apac", 5): "new5"}


@pytest.mark.slow
def test_merge_creates_missing_table_and_rejects_duplicate_keys(spark, tmp_lake) -> None:
    table = tmp_lake / "fresh"
    result = write_delta(spark.createDataFrame(_rows([1, 2]), SCHEMA), table, mode="merge", merge_keys=["id"])
    assert result.version == 0 and result.rows_written == 2
    dupes = spark.createDataFrame(_rows([1, 1]), SCHEMA)
    with pytest.raises(WriteOptionsError, match="deduplicate"):
        write_delta(dupes, table, mode="merge", merge_keys=["id"])
    assert table_version(table) == 0


def test_overwrite_where_appending_outside_rows_in_the_same_commit(spark, tmp_lake) -> None:
    """What an incremental silver run does: rebuild some partitions, add rows to others, one commit."""
    table = tmp_lake / "mixed"
    write_delta(
        spark.createDataFrame([*_rows([1], "eu"), *_rows([2], "us")], SCHEMA), table, partition_by=["region"]
    )
    rows = spark.createDataFrame([*_rows([10], "eu"), *_rows([3], "us")], SCHEMA)
    with pytest.raises(PartitionFilterError, match="outside"):
        write_delta(rows, table, mode="overwrite_where", where={"region": "eu"})
    result = write_delta(
        rows, table, mode="overwrite_where", where={"region": "eu"}, append_outside_where=True
    )
    assert (result.version, result.files_removed, result.rows_written) == (1, 1, 2)
    assert sorted((r.region, r.id) for r in read_spark(spark, table).collect()) == [
        ("eu", 10),
        ("us", 2),
        ("us", 3),
    ]
    with pytest.raises(WriteOptionsError, match="append_outside_where"):
        write_delta(rows, table, mode="append", append_outside_where=True)


def test_invalid_option_combinations(spark, tmp_lake) -> None:
    df = spark.createDataFrame(_rows([1]), SCHEMA)
    with pytest.raises(WriteOptionsError, match="merge_keys"):
        write_delta(df, tmp_lake / "t", mode="merge")
    with pytest.raises(WriteOptionsError, match="overwrite_where"):
        write_delta(df, tmp_lake / "t", where={"region": "eu"})
    with pytest.raises(WriteOptionsError, match="not one of"):
        write_delta(df, tmp_lake / "t", mode="upsert")  # type: ignore[arg-type]


def test_typed_partition_columns_round_trip(spark, tmp_lake) -> None:
    """Timestamp (with microseconds), boolean, int and date partition values, including nulls."""
    table = tmp_lake / "typed_parts"
    rows = [
        (1, datetime(2024, 1, 1, 1, 0, 0), True, 5, date(2024, 1, 1)),
        (2, datetime(2024, 1, 1, 2, 30, 0, 500), False, None, None),
    ]
    df = spark.createDataFrame(rows, "id long, hour timestamp, flag boolean, n int, d date")
    write_delta(df, table, partition_by=["hour", "flag", "n", "d"])
    assert spark_rows(read_spark(spark, table)) == spark_rows(df)
    arrow_hours = sorted(h.replace(tzinfo=None) for h in read_arrow(table).column("hour").to_pylist())
    assert arrow_hours == [rows[0][1], rows[1][1]]

    replacement = df.filter("id = 2").withColumn("id", F.lit(20).cast("long"))
    result = write_delta(
        replacement,
        table,
        mode="overwrite_where",
        where={"hour": datetime(2024, 1, 1, 2, 30, 0, 500), "n": None},
    )
    assert result.files_removed == 1
    assert sorted(r.id for r in read_spark(spark, table).collect()) == [1, 20]
    assert [r.id for r in read_spark(spark, table, partitions={"n": 5, "flag": True}).collect()] == [1]


@pytest.mark.slow
def test_merge_skips_files_whose_key_range_cannot_match(spark, tmp_lake) -> None:
    table = tmp_lake / "ranges"
    write_delta(spark.createDataFrame(_rows(range(0, 10)), SCHEMA).coalesce(1), table)
    write_delta(spark.createDataFrame(_rows(range(100, 110)), SCHEMA).coalesce(1), table)
    upsert = spark.createDataFrame([*_rows([105], name="upd"), *_rows([500], name="new")], SCHEMA)
    result = write_delta(upsert, table, mode="merge", merge_keys=["id"])
    assert result.files_removed == 1 and result.rows_written == 11  # only the 100..109 file is rewritten
    back = {r.id: r.name for r in read_spark(spark, table).collect()}
    assert len(back) == 21 and back[105] == "upd105" and back[500] == "new500" and back[5] == "n5"


@pytest.mark.slow
def test_timestamps_do_not_depend_on_the_python_process_time_zone(spark, tmp_lake, monkeypatch) -> None:
    """PySpark converts naive datetimes with the *process* time zone; the Delta layer must not."""
    import time

    table = tmp_lake / "tz"
    hour = datetime(2024, 6, 1, 3, 0, 0)
    base = spark.createDataFrame(
        [(1, hour, TS), (2, hour.replace(hour=4), TS)], "id long, hour timestamp, ts timestamp"
    )
    write_delta(base, table, partition_by=["hour"])
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        upsert = spark.sql(
            "select 1L as id, timestamp'2024-06-01 03:00:00' as hour, timestamp'2030-01-01' as ts"
        )
        result = write_delta(upsert, table, mode="merge", merge_keys=["hour", "id", "ts"])
        assert result.files_removed == 0  # new (hour, id, ts) key: inserted, nothing rewritten
        upsert = spark.sql(
            "select 1L as id, timestamp'2024-06-01 03:00:00' as hour, "
            "timestamp'2024-03-01 12:30:45.123456' as ts"
        )
        result = write_delta(upsert, table, mode="merge", merge_keys=["hour", "id", "ts"])
        assert result.files_removed == 1
        replacement = spark.sql(
            "select 9L as id, timestamp'2024-06-01 04:00:00' as hour, timestamp'2024-01-01' as ts"
        )
        result = write_delta(replacement, table, mode="overwrite_where", where={"hour": hour.replace(hour=4)})
        assert result.files_removed == 1
    finally:
        monkeypatch.undo()
        time.tzset()
    assert sorted(r.id for r in read_spark(spark, table).collect()) == [1, 1, 9]

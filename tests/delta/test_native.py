"""Native Delta (delta-spark jars from `make install`) and the Parquet + deltalake engine on ONE table.

Every test here forces native Delta for the writes it can do (`native_delta`: setting "always") and
skips, with Maven's recorded reason, when the jars are missing. Cross-engine checks switch the same
session's engine with `delta_engine` (one JVM).
"""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, date, datetime
from importlib.metadata import version as package_version
from pathlib import Path

import duckdb
import pytest

from assets.delta import (
    AppTransaction,
    app_transaction_versions,
    duckdb_relation,
    history,
    read_arrow,
    read_spark,
    table_version,
    write_delta,
)
from assets.delta.native import delta_engine, replace_where_sql, unsupported_reason, use_native
from assets.spark.delta_jars import DELTA_SPARK_JAR_PREFIX, delta_jars
from tests.delta.helpers import log_actions, rows_of, spark_rows
from tests.fixtures.spark import STATE_DIR

pytestmark = [pytest.mark.spark]

SCHEMA = "id long, name string, ts timestamp, day date"
COLUMNS = ["id", "name", "ts", "day"]
D1, D2, D3 = date(2024, 1, 1), date(2024, 1, 2), date(2024, 1, 3)


def _rows(ids: list[int], day: date | None, name: str = "n") -> list[tuple]:
    return [(i, f"{name}{i}", datetime(2024, 1, 1, 12, 0, 0, 123456 + i), day) for i in ids]


def _all_readers(spark, table: Path) -> dict[str, list[tuple]]:
    """The table's rows as native Delta, the plain-Parquet Spark reader, deltalake and DuckDB see them."""
    with delta_engine(spark, "true"):
        native = spark_rows(read_spark(spark, table), COLUMNS)
    with delta_engine(spark, "false"):
        parquet = spark_rows(read_spark(spark, table), COLUMNS)
    arrow = rows_of(read_arrow(table).to_pylist(), COLUMNS)
    rel = duckdb_relation(duckdb.connect(), table)
    duck = rows_of([dict(zip(rel.columns, r, strict=True)) for r in rel.fetchall()], COLUMNS)
    return {"native": native, "parquet": parquet, "arrow": arrow, "duckdb": duck}


def _assert_all_read(spark, table: Path, expected_ids: list[int]) -> None:
    seen = _all_readers(spark, table)
    for engine, rows in seen.items():
        assert sorted(r[0] for r in rows) == sorted(expected_ids), engine
    assert seen["native"] == seen["parquet"] == seen["arrow"] == seen["duckdb"]


def test_jars_match_the_python_package_and_pyspark() -> None:
    jars = delta_jars(STATE_DIR)
    if not jars:
        pytest.skip("no delta-spark jars (make install records why in .state/jars/delta/UNAVAILABLE)")
    import pyspark

    name = next(p.name for p in jars if p.name.startswith(DELTA_SPARK_JAR_PREFIX))
    match = re.fullmatch(r"delta-spark_(\d+\.\d+)_(\d+\.\d+)-(\d+)\.(\d+)\.\d+\.jar", name)
    assert match, name
    spark_line, scala, major, minor = match.groups()
    assert spark_line == ".".join(pyspark.__version__.split(".")[:2])
    assert list((Path(pyspark.__file__).parent / "jars").glob(f"scala-library-{scala}.*.jar"))
    assert package_version("delta-spark").split(".")[:2] == [major, minor]


def test_one_session_has_the_jars_and_the_extension(native_delta) -> None:
    spark = native_delta
    assert "io.delta.sql.DeltaSparkSessionExtension" in spark.conf.get("spark.sql.extensions")
    assert any(DELTA_SPARK_JAR_PREFIX in j for j in spark.conf.get("spark.jars").split(","))
    assert use_native(spark, "append", [AppTransaction("a", 1)])


def test_engine_choice_keeps_one_commit() -> None:
    one, two = [AppTransaction("a", 1)], [AppTransaction("a", 1), AppTransaction("b", 1)]
    assert unsupported_reason("append", one, False) is None
    assert unsupported_reason("overwrite_where", one, False) is None
    assert "one app transaction" in (unsupported_reason("append", two, False) or "")
    assert "replaceWhere" in (unsupported_reason("overwrite_where", one, True) or "")
    assert "merge" in (unsupported_reason("merge", (), False) or "")
    where = replace_where_sql({"day": [D1, None], "name": ["o'k"]}, {"day": "date", "name": "string"})
    assert where == "(`day` IN (CAST('2024-01-01' AS DATE)) OR `day` IS NULL) AND (`name` IN ('o\\'k'))"


@pytest.mark.slow
def test_native_writes_every_mode_and_every_reader_agrees(native_delta, tmp_lake: Path) -> None:
    spark = native_delta
    table = tmp_lake / "native_modes"
    first = write_delta(
        spark.createDataFrame(_rows([1, 2], D1) + _rows([3], D2) + _rows([4], None), SCHEMA),
        table,
        partition_by=["day"],
        commit_metadata={"streamhouse.inputs": json.dumps({"bronze/x": 3}), "run_id": "r1"},
    )
    assert (first.version, first.rows_written, first.skipped) == (0, 4, False)
    commit = next(a["commitInfo"] for a in log_actions(table) if "commitInfo" in a)
    assert commit["engineInfo"].startswith("Apache-Spark") and "Delta-Lake" in commit["engineInfo"]
    entry = history(table)[0]  # the layer's metadata reads back as top-level keys, as from deltalake
    assert entry["run_id"] == "r1" and json.loads(entry["streamhouse.inputs"]) == {"bronze/x": 3}
    assert entry["streamhouse.engine"] == "delta-spark" and entry["streamhouse.mode"] == "append"
    _assert_all_read(spark, table, [1, 2, 3, 4])

    # replace day 1 and the null partition; day 2 stays
    replaced = write_delta(
        spark.createDataFrame(_rows([10], D1) + _rows([11], None), SCHEMA),
        table,
        mode="overwrite_where",
        where={"day": [D1, None]},
    )
    assert replaced.version == 1 and replaced.files_removed >= 2 and replaced.rows_written == 2
    _assert_all_read(spark, table, [3, 10, 11])

    # the deltalake engine appends to the natively written table, then native appends again
    with delta_engine(spark, "false"):
        write_delta(spark.createDataFrame(_rows([20], D3), SCHEMA), table)
    write_delta(spark.createDataFrame(_rows([21], D3), SCHEMA), table)
    _assert_all_read(spark, table, [3, 10, 11, 20, 21])
    engines = [e.get("streamhouse.engine", "deltalake") for e in history(table)]
    assert engines == ["delta-spark", "deltalake", "delta-spark", "delta-spark"]

    overwritten = write_delta(spark.createDataFrame(_rows([30], D2), SCHEMA), table, mode="overwrite")
    assert overwritten.version == 4
    _assert_all_read(spark, table, [30])
    assert read_arrow(table, version=3).num_rows == 5


@pytest.mark.slow
def test_native_reads_a_deltalake_written_table_with_time_travel(native_delta, tmp_lake: Path) -> None:
    spark = native_delta
    table = tmp_lake / "deltalake_written"
    with delta_engine(spark, "false"):
        write_delta(spark.createDataFrame(_rows([1], D1), SCHEMA), table, partition_by=["day"])
        time.sleep(0.05)
        between = datetime.now(UTC)
        time.sleep(0.05)
        write_delta(spark.createDataFrame(_rows([2], D2), SCHEMA), table)
        day2 = spark.createDataFrame(_rows([3], D2), SCHEMA)
        write_delta(day2, table, mode="overwrite_where", where={"day": D2})
    assert table_version(table) == 2
    with delta_engine(spark, "true"):
        assert sorted(r.id for r in read_spark(spark, table).collect()) == [1, 3]
        assert sorted(r.id for r in read_spark(spark, table, version=1).collect()) == [1, 2]
        assert sorted(r.id for r in read_spark(spark, table, timestamp=between).collect()) == [1]
        later = datetime(2100, 1, 1, tzinfo=UTC)  # after the last commit: the latest version, as deltalake
        expected = read_arrow(table, timestamp=later).num_rows
        assert read_spark(spark, table, timestamp=later).count() == expected
        day2 = read_spark(spark, table, partitions={"day": D2})
        assert [r.id for r in day2.collect()] == [3]
        # Spark's own time travel options agree with the layer's
        raw = spark.read.format("delta").option("timestampAsOf", between.isoformat()).load(str(table))
        assert sorted(r.id for r in raw.collect()) == [1]
        raw = spark.read.format("delta").option("versionAsOf", 1).load(str(table))
        assert spark_rows(raw, COLUMNS) == rows_of(read_arrow(table, version=1).to_pylist(), COLUMNS)


@pytest.mark.slow
def test_app_transactions_are_idempotent_across_engines(native_delta, tmp_lake: Path) -> None:
    spark = native_delta
    table = tmp_lake / "txns"
    df = spark.createDataFrame(_rows([1], D1), SCHEMA)
    native = write_delta(df, table, partition_by=["day"], app_transactions=[AppTransaction("ingest", 5)])
    txns = [a["txn"] for a in log_actions(table) if "txn" in a]
    assert [(t["appId"], t["version"]) for t in txns] == [("ingest", 5)]
    assert app_transaction_versions(table) == {"ingest": 5}  # read by deltalake
    with delta_engine(spark, "false"):  # the deltalake engine sees native's txn and skips
        retry = write_delta(df, table, app_transactions=[AppTransaction("ingest", 5)])
        assert retry.skipped and retry.version == native.version
        other = write_delta(df, table, app_transactions=[AppTransaction("other", 2)])
        assert not other.skipped and other.version == 1
    # and native sees deltalake's: the layer skips before writing ...
    again = write_delta(df, table, app_transactions=[AppTransaction("other", 2)])
    assert again.skipped and table_version(table) == 1
    # ... and so does Delta itself when asked directly with the same txnAppId/txnVersion
    (df.write.format("delta").mode("append").option("txnAppId", "other").option("txnVersion", "2")
       .save(str(table)))  # fmt: skip
    assert table_version(table) == 1
    # several app transactions in one commit stay on the deltalake engine, still one commit
    both = write_delta(df, table, app_transactions=[AppTransaction("ingest", 6), AppTransaction("other", 3)])
    assert both.version == 2 and app_transaction_versions(table) == {"ingest": 6, "other": 3}
    assert "streamhouse.engine" not in history(table, 1)[0]
    assert read_arrow(table).num_rows == 3


@pytest.mark.slow
def test_merge_on_a_natively_written_table_finds_millisecond_stats(native_delta, tmp_lake: Path) -> None:
    """delta-spark truncates timestamp stats to ms; key-range pruning must not skip the matching file."""
    spark = native_delta
    table = tmp_lake / "ms_stats"
    write_delta(spark.createDataFrame(_rows([1, 2], D1), SCHEMA), table)
    stats = json.loads(next(a["add"]["stats"] for a in log_actions(table) if "add" in a))
    assert stats["maxValues"]["ts"].endswith(".123Z")  # the real values end in .123457/.123458
    upsert = spark.createDataFrame([(2, "new", datetime(2024, 1, 1, 12, 0, 0, 123458), D1)], SCHEMA)
    result = write_delta(upsert, table, mode="merge", merge_keys=["ts"])
    assert result.files_removed == 1
    assert sorted((r.id, r.name) for r in read_spark(spark, table).collect()) == [(1, "n1"), (2, "new")]

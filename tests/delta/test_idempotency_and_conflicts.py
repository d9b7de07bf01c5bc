"""Idempotent retries via app transactions, and optimistic-concurrency conflicts."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import pytest

import assets.delta.writer as writer_module
from assets.delta import (
    AppTransaction,
    CommitConflictError,
    app_transaction_versions,
    history,
    read_spark,
    table_version,
    write_delta,
)
from assets.delta.native import use_native
from tests.delta.helpers import data_files_on_disk, log_actions

pytestmark = [pytest.mark.spark]

SCHEMA = "id long, part string"


@pytest.mark.slow
def test_retry_with_same_app_transaction_is_skipped(spark, tmp_lake: Path) -> None:
    table = tmp_lake / "idem"
    df = spark.createDataFrame([(1, "a"), (2, "b")], SCHEMA)
    txn = [AppTransaction("ingest-job", 7)]
    assert app_transaction_versions(table) == {}

    first = write_delta(df, table, app_transactions=txn, commit_metadata={"asset": "events", "run_id": "r1"})
    files_after_first = data_files_on_disk(table)
    retry = write_delta(df, table, app_transactions=txn)
    older = write_delta(df, table, app_transactions=[AppTransaction("ingest-job", 3)])

    assert not first.skipped and retry.skipped and older.skipped
    assert retry.version == first.version == 0 and retry.files_added == 0
    assert data_files_on_disk(table) == files_after_first  # nothing staged or moved
    assert read_spark(spark, table).count() == 2
    assert app_transaction_versions(table) == {"ingest-job": 7}
    assert history(table)[0]["run_id"] == "r1" and history(table)[0]["asset"] == "events"

    # a newer version, or another app id not yet committed, writes again (and records both)
    nxt = write_delta(
        df, table, app_transactions=[AppTransaction("ingest-job", 8), AppTransaction("other", 1)]
    )
    assert not nxt.skipped and nxt.version == 1
    assert app_transaction_versions(table) == {"ingest-job": 8, "other": 1}
    txns = [a["txn"] for a in log_actions(table) if "txn" in a]
    assert {(t["appId"], t["version"]) for t in txns} == {("ingest-job", 7), ("ingest-job", 8), ("other", 1)}


def _inject_concurrent_commit(monkeypatch: pytest.MonkeyPatch, action) -> None:
    """Run a real competing commit after our snapshot was read and our files were staged."""
    original = writer_module.write_staged

    def staged_then_competitor(*args, **kwargs):
        staged = original(*args, **kwargs)
        monkeypatch.setattr(writer_module, "write_staged", original)  # competitor writes normally
        action()
        return staged

    monkeypatch.setattr(writer_module, "write_staged", staged_then_competitor)


@pytest.mark.usefixtures("parquet_delta")  # injects into the staging/deltalake commit steps
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["overwrite", "merge"])
def test_concurrent_commit_conflict(
    spark, tmp_lake: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    table = tmp_lake / f"contended_{mode}"
    write_delta(spark.createDataFrame([(1, "a"), (2, "b")], SCHEMA), table, partition_by=["part"])
    competitor = spark.createDataFrame([(3, "a")], SCHEMA)
    _inject_concurrent_commit(monkeypatch, lambda: write_delta(competitor, table, mode="overwrite"))

    ours = spark.createDataFrame([(1, "a"), (9, "z")], SCHEMA)
    kwargs = {"merge_keys": ["id"]} if mode == "merge" else {}
    with pytest.raises(CommitConflictError, match=r"retry") as excinfo:
        write_delta(ours, table, mode=mode, app_transactions=[AppTransaction("job", 1)], **kwargs)

    assert excinfo.value.version == 1 and str(table) in str(excinfo.value)
    assert table_version(table) == 1  # the competitor's commit, nothing of ours
    assert [r.id for r in read_spark(spark, table).collect()] == [3]
    assert app_transaction_versions(table) == {}
    referenced = {a["add"]["path"] for a in log_actions(table) if "add" in a}
    assert data_files_on_disk(table) <= {unquote(p) for p in referenced}  # our moved files were deleted
    assert not list((table / "_staging").glob("*"))

    # the retry succeeds on top of the competitor's version
    retry = write_delta(ours, table, mode=mode, app_transactions=[AppTransaction("job", 1)], **kwargs)
    assert retry.version == 2
    expected = [1, 9] if mode == "overwrite" else [1, 3, 9]
    assert sorted(r.id for r in read_spark(spark, table).collect()) == expected


@pytest.mark.usefixtures("parquet_delta")  # injects into the staging/deltalake commit steps
def test_concurrent_blind_appends_both_land(spark, tmp_lake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_lake / "appends"
    write_delta(spark.createDataFrame([(1, "a")], SCHEMA), table)
    _inject_concurrent_commit(
        monkeypatch, lambda: write_delta(spark.createDataFrame([(2, "b")], SCHEMA), table)
    )
    result = write_delta(spark.createDataFrame([(3, "c")], SCHEMA), table)
    assert result.version == 2
    assert sorted(r.id for r in read_spark(spark, table).collect()) == [1, 2, 3]


def test_failed_spark_job_leaves_no_version_and_no_files(spark, tmp_lake: Path) -> None:
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    table = tmp_lake / "failing"
    write_delta(spark.createDataFrame([(1, "a")], SCHEMA), table)
    files_before = data_files_on_disk(table)
    referenced_before = {unquote(a["add"]["path"]) for a in log_actions(table) if "add" in a}
    bad = spark.range(3).select(
        F.when(F.col("id") == 2, F.raise_error(F.lit("boom")))
        .otherwise(F.col("id"))
        .cast("long")
        .alias("id"),
        F.lit("b").alias("part"),
    )
    native = use_native(spark, "overwrite", ())
    with pytest.raises((PySparkException, Py4JJavaError), match="boom"):
        write_delta(bad, table, mode="overwrite")
    assert table_version(table) == 0
    referenced = {unquote(a["add"]["path"]) for a in log_actions(table) if "add" in a}
    assert referenced == referenced_before
    if not native:  # native Delta may leave the failed tasks' files unreferenced (vacuum removes them)
        assert data_files_on_disk(table) == files_before
    assert not list((table / "_staging").glob("*"))


@pytest.mark.usefixtures("parquet_delta")  # injects into the staging/deltalake commit steps
@pytest.mark.slow
def test_error_after_the_log_entry_keeps_the_committed_files(
    spark, tmp_lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure *after* delta-rs wrote the version (e.g. a post-commit hook) must not delete its files."""
    table = tmp_lake / "post_commit_failure"
    write_delta(spark.createDataFrame([(1, "a")], SCHEMA), table)
    real_commit = writer_module._commit

    def commit_then_fail(*args, **kwargs):
        real_commit(*args, **kwargs)
        raise OSError("connection reset after the commit was written")

    monkeypatch.setattr(writer_module, "_commit", commit_then_fail)
    overwrite = spark.createDataFrame([(2, "b")], SCHEMA)
    with pytest.raises(OSError, match="after the commit"):
        write_delta(overwrite, table, mode="overwrite", app_transactions=[AppTransaction("job", 1)])
    assert table_version(table) == 1
    assert [r.id for r in read_spark(spark, table).collect()] == [2]  # every referenced file exists
    monkeypatch.setattr(writer_module, "_commit", real_commit)
    retry = write_delta(overwrite, table, mode="overwrite", app_transactions=[AppTransaction("job", 1)])
    assert retry.skipped and retry.version == 1

    def fail_before_commit(*args, **kwargs):
        raise OSError("network down before the commit")

    monkeypatch.setattr(writer_module, "_commit", fail_before_commit)
    files_before = data_files_on_disk(table)
    with pytest.raises(OSError, match="network down"):
        write_delta(spark.createDataFrame([(3, "c")], SCHEMA), table)
    assert data_files_on_disk(table) == files_before  # uncommitted files were removed
    assert table_version(table) == 1


@pytest.mark.usefixtures("parquet_delta")  # injects into the staging/deltalake commit steps
def test_two_writers_creating_the_same_table(spark, tmp_lake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_lake / "created_twice"
    competitor = spark.createDataFrame([(1, "a")], SCHEMA)
    _inject_concurrent_commit(monkeypatch, lambda: write_delta(competitor, table))
    with pytest.raises(CommitConflictError, match="retry"):
        write_delta(spark.createDataFrame([(2, "b")], SCHEMA), table, partition_by=["part"])
    assert table_version(table) == 0
    assert [r.id for r in read_spark(spark, table).collect()] == [1]
    assert len(data_files_on_disk(table)) == 1

"""Time travel, vacuum, optimize and checkpoints."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from assets.delta import (
    AppTransaction,
    DeltaLayerError,
    TableNotFoundError,
    app_transaction_versions,
    checkpoint,
    history,
    optimize,
    read_arrow,
    read_spark,
    table_version,
    vacuum,
    write_delta,
)
from assets.delta.native import native_setting
from tests.delta.helpers import data_files_on_disk, log_actions, spark_rows

pytestmark = [pytest.mark.spark]

SCHEMA = "id long, part string"


def test_time_travel_by_version_and_timestamp(spark, tmp_lake: Path) -> None:
    table = tmp_lake / "tt"
    write_delta(spark.createDataFrame([(1, "a")], SCHEMA), table)
    time.sleep(0.05)
    between = datetime.now(UTC)
    time.sleep(0.05)
    write_delta(spark.createDataFrame([(2, "b")], SCHEMA), table, mode="overwrite")

    assert [r.id for r in read_spark(spark, table, version=0).collect()] == [1]
    assert [r.id for r in read_spark(spark, table).collect()] == [2]
    assert [r.id for r in read_spark(spark, table, timestamp=between).collect()] == [1]
    assert read_arrow(table, version=0).column("id").to_pylist() == [1]
    assert read_arrow(table, timestamp=between.isoformat()).column("id").to_pylist() == [1]
    assert [h["version"] for h in history(table)] == [1, 0]
    with pytest.raises(TableNotFoundError, match="no version"):
        read_spark(spark, table, version=5)
    with pytest.raises(TableNotFoundError, match="write it first"):
        table_version(tmp_lake / "missing")


def test_vacuum_removes_unreferenced_files_after_overwrite(spark, tmp_lake: Path) -> None:
    table = tmp_lake / "vac"
    first = write_delta(spark.createDataFrame([(1, "a"), (2, "b")], SCHEMA), table, partition_by=["part"])
    old_files = data_files_on_disk(table)
    write_delta(spark.createDataFrame([(3, "a")], SCHEMA), table, mode="overwrite")
    assert len(old_files) == first.files_added

    with pytest.raises(DeltaLayerError, match="enforce_retention_duration=False"):
        vacuum(table, retention_hours=0)
    planned = vacuum(table, retention_hours=0, dry_run=True, enforce_retention_duration=False)
    assert data_files_on_disk(table) >= old_files  # dry run deletes nothing
    removed = vacuum(table, retention_hours=0, enforce_retention_duration=False)

    assert len(removed) == len(planned) == len(old_files)
    assert not (old_files & data_files_on_disk(table))
    assert [r.id for r in read_spark(spark, table).collect()] == [3]
    assert vacuum(table, retention_hours=168) == []


@pytest.mark.slow
def test_optimize_compacts_small_files_without_changing_data(spark, tmp_lake: Path) -> None:
    table = tmp_lake / "small_files"
    for batch in range(4):
        rows = [(batch * 10 + i, "a" if i % 2 else "b") for i in range(4)]
        write_delta(spark.createDataFrame(rows, SCHEMA).coalesce(1), table, partition_by=["part"])
    before = spark_rows(read_spark(spark, table))
    version_before = table_version(table)

    metrics = optimize(table, target_file_size=64 * 1024 * 1024, commit_metadata={"run_id": "opt-1"})

    assert metrics["numFilesRemoved"] == 8 and metrics["numFilesAdded"] == 2
    assert table_version(table) == version_before + 1
    assert history(table, limit=1)[0]["run_id"] == "opt-1"
    assert spark_rows(read_spark(spark, table)) == before
    adds = [a["add"] for a in log_actions(table)[-4:] if "add" in a]
    assert all(not a["dataChange"] for a in adds)
    # the compacted files are fully usable by our writer (merge reads them back with Spark)
    write_delta(spark.createDataFrame([(1, "a")], SCHEMA), table, mode="merge", merge_keys=["id"])
    assert read_spark(spark, table).count() == len(before)


@pytest.mark.slow
def test_checkpoint_is_written_and_app_transactions_survive_it(spark, tmp_lake: Path) -> None:
    table = tmp_lake / "cp"
    write_delta(spark.createDataFrame([(1, "a")], SCHEMA), table, app_transactions=[AppTransaction("j", 1)])
    write_delta(spark.createDataFrame([(2, "a")], SCHEMA), table, app_transactions=[AppTransaction("j", 2)])
    checkpoint(table)
    log = table / "_delta_log"
    assert (log / "_last_checkpoint").exists()
    assert (log / f"{1:020d}.checkpoint.parquet").exists()
    # Readers must now rely on the checkpoint. delta-spark also needs the checkpoint version's own
    # commit (log cleanup never removes it), so on native Delta only the older commits go.
    keep = {f"{1:020d}.json"} if native_setting(spark) != "false" else set()
    for commit in log.glob("*.json"):
        if commit.name not in keep:
            commit.unlink()
    assert app_transaction_versions(table) == {"j": 2}
    assert sorted(r.id for r in read_spark(spark, table).collect()) == [1, 2]
    skipped = write_delta(
        spark.createDataFrame([(2, "a")], SCHEMA), table, app_transactions=[AppTransaction("j", 2)]
    )
    assert skipped.skipped

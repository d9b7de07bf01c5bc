"""The demo says what its long steps are doing and separates this run's rows from the tables' totals
(``ingest_job`` used to print nothing for 47 s, and "version 1, 10,000 rows" did not say whose rows)."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pyarrow as pa
from dagster import (
    DagsterInstance,
    Definitions,
    MaterializeResult,
    asset,
    define_asset_job,
)
from rich.console import Console

from assets.bronze.ingest import IngestProgress
from assets.delta.arrow_writer import write_delta_arrow
from orchestration.demo import DemoSummary, RunProgress, TableRows, lake_tables, rows_written, tables_table
from orchestration.jobs import INGEST_JOB
from orchestration.pipeline import run_ingest


def _console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=200, highlight=False, color_system=None), out


@asset(key=["bronze", "orders"])
def _bronze_orders(context) -> MaterializeResult:  # unannotated: Dagster rejects a string annotation
    context.log.info(IngestProgress("orders", 4_000, 2.0).line())  # what ingest_topic reports running
    context.log.info(IngestProgress("orders", 10_000, 4.0, done=True).line())
    context.log.info("orders: committed 10,000 records as version 3")  # not progress: not printed
    meta = {
        "records": 10_000,
        "event_dates": ["2026-01-05"],
        "ingest_seconds": 4.0,
        "table_uri": "/l/bronze/orders",
    }
    return MaterializeResult(metadata=meta)


@asset(key=["quarantine", "customers_quarantine"], deps=[_bronze_orders])
def _quarantine_customers() -> MaterializeResult:
    time.sleep(0.05)
    # an asset whose key is not its table's name: the demo goes by the table's URI
    return MaterializeResult(metadata={"table_uri": "/l/quarantine/customers", "rows_written": 7})


def test_the_ingest_prints_bronze_records_per_second_and_the_steps_as_the_run_goes() -> None:
    defs = Definitions(
        assets=[_bronze_orders, _quarantine_customers], jobs=[define_asset_job(INGEST_JOB, selection="*")]
    )
    out, text = _console()
    instance = DagsterInstance.ephemeral()
    try:
        with RunProgress("ingest_job", out=out, min_step_s=0.0) as progress:
            summary = run_ingest(defs, instance, on_event=progress)
    finally:
        instance.dispose()
    assert summary.records == {"orders": 10_000}
    lines = text.getvalue().splitlines()
    assert lines[:2] == [
        "    bronze orders: 4,000 records in 2.0s (2,000 records/s, running)",
        "    bronze orders: 10,000 records in 4.0s (2,500 records/s, done)",
    ]
    # the other steps with their time (bronze steps report themselves)
    assert len(lines) == 3 and lines[2].startswith("    quarantine__customers_quarantine: "), lines
    # the rows each table got, for the summary's "rows this run", added to the earlier runs' of the demo
    assert rows_written([summary.result], {"bronze/orders": 5}) == {
        "bronze/orders": 10_005,
        "quarantine/customers": 7,
    }


def test_short_steps_are_not_printed() -> None:
    defs = Definitions(
        assets=[_bronze_orders, _quarantine_customers], jobs=[define_asset_job(INGEST_JOB, selection="*")]
    )
    out, text = _console()
    instance = DagsterInstance.ephemeral()
    try:
        with RunProgress("ingest_job", out=out, min_step_s=60.0) as progress:
            run_ingest(defs, instance, on_event=progress)
    finally:
        instance.dispose()
    assert [line for line in text.getvalue().splitlines() if "quarantine" in line] == []


def test_the_summary_separates_this_runs_rows_from_the_table_totals(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    write_delta_arrow(rows, str(lake / "bronze" / "orders"), mode="append")  # an earlier run
    write_delta_arrow(rows.slice(0, 2), str(lake / "bronze" / "orders"), mode="append")  # this run
    write_delta_arrow(rows, str(lake / "gold" / "revenue"), mode="append")  # not written this run

    tables = lake_tables(lake, {"bronze/orders": 2})
    assert tables == [TableRows("bronze/orders", 1, 2, 5), TableRows("gold/revenue", 0, 0, 3)]

    summary = DemoSummary()
    summary.add_tables(tables)
    assert dict(summary.rows)["bronze/orders"] == "version 1, 2 rows this run, 5 in the table"
    out, text = _console()
    out.print(tables_table(summary.tables))
    rendered = text.getvalue()
    assert "rows this run" in rendered and "rows in the table" in rendered
    line = next(line for line in rendered.splitlines() if "bronze/orders" in line)
    assert [cell.strip() for cell in line.split("│")[1:5]] == ["bronze/orders", "1", "2", "5"]
    gold = next(line for line in rendered.splitlines() if "gold/revenue" in line)
    assert [cell.strip() for cell in gold.split("│")[1:5]] == ["gold/revenue", "0", "-", "3"]


def test_a_topic_with_nothing_new_says_so() -> None:
    assert IngestProgress("edge_revenue_5m", 0, 1.1, done=True).line() == (
        "progress: bronze edge_revenue_5m: no new records (1.1s)"
    )

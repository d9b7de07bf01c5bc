"""Delta write throughput: `write_delta(mode="append")` of 1M rows from a cached Spark DataFrame.

The DataFrame is generated and cached before the clock starts, so the figure is the cost of our write
path: Spark writing Parquet to staging, footer stats, moving files into the table and the deltalake
commit. Measured unpartitioned and partitioned by day (10 partitions), each into a fresh table after a
small warm-up write (JIT, Python workers). Correctness is checked afterwards, untimed: the committed
row count (from the per-file stats) and a Spark count of the table.

Writes ``benchmarks/results/delta_write.json``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import machine_info, result, write_results

DEFAULT_ROWS = 1_000_000


def _frame(spark, rows: int):
    from pyspark.sql import functions as F

    return (
        spark.range(rows)
        .withColumn("key", F.concat(F.lit("k"), (F.col("id") % 10_000).cast("string")))
        .withColumn("amount", (F.col("id") % 1000) / F.lit(7.0))
        .withColumn("ts", F.timestamp_micros(F.lit(1_700_000_000_000_000) + F.col("id") * 1_000_003))
        .withColumn("day", F.date_add(F.lit("2024-01-01").cast("date"), (F.col("id") % 10).cast("int")))
    )


def run(rows: int, master: str) -> list[dict[str, Any]]:
    from assets.delta import read_spark, write_delta
    from assets.spark.session import build_spark_session

    spark = build_spark_session(
        master=master, app_name="bench-delta-write", extra_conf={"spark.ui.showConsoleProgress": "false"}
    )
    spark.sparkContext.setLogLevel("ERROR")
    workdir = Path(tempfile.mkdtemp(prefix="delta-bench-"))
    results = []
    try:
        df = _frame(spark, rows).cache()
        df.count()
        write_delta(_frame(spark, 1000), workdir / "warmup", partition_by=["day"])
        for workload, partition_by in (("append_unpartitioned", None), ("append_by_day", ["day"])):
            table = workdir / workload
            start = time.perf_counter()
            commit = write_delta(df, table, partition_by=partition_by)
            elapsed = time.perf_counter() - start
            counted = read_spark(spark, table).count()
            assert commit.rows_written == counted == rows, (commit, counted)
            size = sum(p.stat().st_size for p in table.rglob("*.parquet"))
            results.append(
                result(
                    "streamhouse-write_delta",
                    workload,
                    rows,
                    rows / elapsed,
                    seconds=round(elapsed, 3),
                    files_added=commit.files_added,
                    table_bytes=size,
                    master=master,
                    **machine_info(),
                )
            )
            print(
                f"{workload:>22}: {rows:,} rows in {elapsed:6.2f}s = {rows / elapsed:>10,.0f} rows/s "
                f"({commit.files_added} files, {size / 1e6:.1f} MB)"
            )
        df.unpersist()
    finally:
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args()
    path = write_results("delta_write", run(args.rows, args.master))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

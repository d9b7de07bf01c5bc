"""Native Delta (delta-spark) against Parquet staging + deltalake commit, per write mode the assets use.

`write_delta` is timed on both engines of the Delta layer on the same session (`delta_engine`:
"always" = native Delta for every write it can do, "false" = Parquet + deltalake), at 1M and 5M
rows of a cached DataFrame (id, key, amount, ts, day; 10 day partitions), for:

* ``append``: into a new table partitioned by day;
* ``append_txn``: the same with one app transaction (exactly-once: txnAppId/txnVersion natively);
* ``overwrite_where``: replace all 10 day partitions of an existing N-row table (``replaceWhere``);
* ``overwrite``: replace an existing N-row table.

The two engines alternate (which goes first flips per mode) so load on the machine hits both alike;
``--repeats`` runs each measurement that many times and keeps the median. Correctness is checked
untimed: the committed row count equals a deltalake count of the table. Writes
``benchmarks/results/delta_native.json``; ``assets.delta.native.FASTER_ENGINE`` records the choice.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from benchmarks.common import machine_info, result, write_results

SIZES = (1_000_000, 5_000_000)
MODES = ("append", "append_txn", "overwrite_where", "overwrite")
ENGINES = {"deltalake": "false", "native": "always"}
DAYS = [date(2024, 1, 1) + timedelta(days=i) for i in range(10)]


def _frame(spark, rows: int):
    from pyspark.sql import functions as F

    return (
        spark.range(rows)
        .withColumn("key", F.concat(F.lit("k"), (F.col("id") % 10_000).cast("string")))
        .withColumn("amount", (F.col("id") % 1000) / F.lit(7.0))
        .withColumn("ts", F.timestamp_micros(F.lit(1_700_000_000_000_000) + F.col("id") * 1_000_003))
        .withColumn("day", F.date_add(F.lit("2024-01-01").cast("date"), (F.col("id") % 10).cast("int")))
    )


def _write(spark, df, table: Path, mode: str, engine: str, rows: int) -> float:
    from assets.delta import AppTransaction, read_arrow, write_delta
    from assets.delta.native import delta_engine

    with delta_engine(spark, ENGINES[engine]):
        if mode in ("overwrite_where", "overwrite"):
            write_delta(df, table, partition_by=["day"])  # the N-row table to replace, untimed
        options: dict[str, Any] = {"partition_by": ["day"]}
        if mode == "append_txn":
            options["app_transactions"] = [AppTransaction("bench", 1)]
        elif mode == "overwrite_where":
            options = {"mode": "overwrite_where", "where": {"day": DAYS}}
        elif mode == "overwrite":
            options = {"mode": "overwrite"}
        start = time.perf_counter()
        commit = write_delta(df, table, **options)
        elapsed = time.perf_counter() - start
    counted = read_arrow(table, columns=["id"]).num_rows
    assert commit.rows_written == counted == rows and not commit.skipped, (engine, mode, commit, counted)
    return elapsed


def run(sizes: list[int], master: str, repeats: int, modes: tuple[str, ...] = MODES) -> list[dict[str, Any]]:
    from assets.spark.delta_jars import delta_jars, unavailable_reason
    from assets.spark.session import build_spark_session

    state = Path(__file__).resolve().parents[1] / ".state"
    jars = delta_jars(state)
    if not jars:
        reason = unavailable_reason(state)
        print(f"native Delta not available: {reason}")
        return [result("delta-spark", f"{mode}_{n}", n, None, reason=reason) for n in sizes for mode in MODES]
    spark = build_spark_session(
        master,
        app_name="bench-delta-native",
        extra_conf={"spark.ui.showConsoleProgress": "false", "spark.driver.memory": "3g"},
        delta_jars=jars,
    )
    spark.sparkContext.setLogLevel("ERROR")
    workdir = Path(tempfile.mkdtemp(prefix="delta-native-bench-"))
    results: list[dict[str, Any]] = []
    try:
        for engine in ENGINES:  # warm-up: JIT, Python workers, Delta's classes
            _write(spark, _frame(spark, 10_000), workdir / f"warmup-{engine}", "append", engine, 10_000)
        for rows in sizes:
            df = _frame(spark, rows).cache()
            df.count()
            for i, mode in enumerate(modes):
                order = list(ENGINES) if i % 2 == 0 else list(reversed(ENGINES))
                times: dict[str, list[float]] = {e: [] for e in ENGINES}
                for r in range(repeats):
                    for engine in order:
                        table = workdir / f"{mode}-{engine}-{rows}-{r}"
                        times[engine].append(_write(spark, df, table, mode, engine, rows))
                        shutil.rmtree(table, ignore_errors=True)
                medians = {e: statistics.median(t) for e, t in times.items()}
                faster = min(medians, key=medians.__getitem__)
                for engine, seconds in medians.items():
                    results.append(
                        result(
                            "streamhouse-write_delta-" + engine,
                            f"{mode}_{rows}",
                            rows,
                            rows / seconds,
                            mode=mode,
                            engine=engine,
                            seconds=round(seconds, 3),
                            runs=[round(t, 3) for t in times[engine]],
                            faster_engine=faster,
                            master=master,
                            **machine_info(),
                        )
                    )
                print(
                    f"{mode:>16} {rows:>9,} rows: deltalake {medians['deltalake']:6.2f}s "
                    f"({rows / medians['deltalake']:>9,.0f} rows/s)  native {medians['native']:6.2f}s "
                    f"({rows / medians['native']:>9,.0f} rows/s)  -> {faster} "
                    f"x{max(medians.values()) / min(medians.values()):.2f}",
                    flush=True,
                )
            df.unpersist()
    finally:
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--modes", nargs="*", choices=MODES, default=list(MODES))
    parser.add_argument("--name", default="delta_native", help="results file name (without .json)")
    args = parser.parse_args()
    path = write_results(args.name, run(args.rows, args.master, args.repeats, tuple(args.modes)))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Run the daily job (silver + gold) for some days in a fresh process: a Spark driver of its own.

``python -m tests.lakehouse.daily_run DAY... [--spark-writes]`` with the settings from the environment
(``STREAMHOUSE_LAKE_ROOT``, ``STREAMHOUSE_SPARK_MASTER``, ``STREAMHOUSE_CONFIG`` for ``spark_conf``...),
exactly as ``streamhouse demo`` builds its definitions. The test suite's own session is ``local[*]`` and a
process has one SparkContext, so a run against another master needs its own process.

``--spark-writes`` sends every table through Spark's writers (not the driver-side Arrow writer used for
small recomputes): on a cluster the executors then write the lake's files themselves, which proves they
see the same lake root as the driver. Prints one JSON line: the seconds the runs took and the master.
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("days", nargs="+")
    parser.add_argument("--spark-writes", action="store_true")
    args = parser.parse_args()

    from dagster import DagsterInstance

    from orchestration.definitions import build_definitions
    from orchestration.pipeline import QUIET_RUN_CONFIG, run_daily
    from orchestration.settings import load_settings
    from quality.checks import QualityResource

    if args.spark_writes:
        import assets.gold.assets as gold
        import assets.silver.assets as silver

        gold.SMALL_RESULT_ROWS = -1
        silver.SMALL_BATCH_ROWS = -1
    settings = load_settings()
    quality = QualityResource(docs_dir=str(settings.state_dir / "quality"))
    defs = build_definitions(settings, quality=quality)
    started = time.perf_counter()
    results = run_daily(defs, args.days, DagsterInstance.ephemeral(), run_config=QUIET_RUN_CONFIG)
    seconds = time.perf_counter() - started
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    master = session.sparkContext.master if session is not None else None
    print(
        json.dumps(
            {
                "seconds": round(seconds, 2),
                "master": master,
                "success": all(r.success for r in results),
            }
        )
    )


if __name__ == "__main__":
    main()

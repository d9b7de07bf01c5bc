"""What the quality checks cost: the daily job with and without the expectation suites' asset checks.

    .venv/bin/python benchmarks/quality_overhead.py --events 1000000 [--repeats 2]

Sample events are produced to an embedded broker and landed in bronze once (plus the silver dimension
tables); then, alternately, the ``daily_job`` over all days runs on a fresh copy of that lake with
Definitions *without* asset checks and with them (``orchestration.definitions.build_definitions``),
in-process, on one Spark session. Reported: each run's wall time, the medians, the overhead in
percent, the seconds spent in the check steps, and the one-off Great Expectations import (paid by the
first checked run of a process). Results: ``benchmarks/results/quality_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
warnings.filterwarnings("ignore")

from assets import sample_data  # noqa: E402
from assets.bronze.ingest import ingest_topic  # noqa: E402
from edge.broker import local_broker, profile_for  # noqa: E402
from edge.kafka import KafkaClientConfig  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "quality_overhead.json"


def _definitions(settings, prefix: str, checks: bool, docs_dir: Path):
    from dagster import Definitions

    from assets.resources import ExistingSparkResource
    from orchestration.definitions import ALL_ASSETS, build_definitions
    from orchestration.jobs import JOBS
    from orchestration.resources import build_resources
    from quality.checks import QualityResource

    overrides = {
        "topic_prefix": prefix,
        "spark": ExistingSparkResource(),
        "quality": QualityResource(docs_dir=str(docs_dir)),
    }
    if checks:
        return build_definitions(settings, **overrides)
    return Definitions(assets=ALL_ASSETS, jobs=JOBS, resources=build_resources(settings, **overrides))


def _daily(defs, days: list[str]) -> tuple[float, dict[str, float], int]:
    """Wall seconds of the daily job, seconds per check step, check evaluations.

    The Data Docs index is built once per run, in the background after the run's last check
    (``quality.gx.schedule_index``); its time is waited for here and billed to the run.
    """
    from dagster import DagsterInstance

    from orchestration.pipeline import run_daily

    t0 = time.perf_counter()
    results = run_daily(defs, days, DagsterInstance.ephemeral())
    if "great_expectations" in sys.modules:
        from quality.gx import flush_index

        flush_index()
    wall = time.perf_counter() - t0
    assert all(r.success for r in results), "daily job failed"
    steps: dict[str, float] = {}
    for r in results:
        for ev in r.all_events:
            if ev.event_type_value == "STEP_SUCCESS" and ev.step_key.startswith("quality_"):
                steps[ev.step_key] = steps.get(ev.step_key, 0.0) + ev.event_specific_data.duration_ms / 1000
    evaluations = sum(len(r.get_asset_check_evaluations()) for r in results)
    return wall, steps, evaluations


def run(events: int, repeats: int, master: str, workdir: Path) -> dict:
    from dagster import DagsterInstance

    from assets.partitions import affected_days
    from assets.spark.session import build_spark_session
    from orchestration.settings import Settings

    spark = build_spark_session(
        master,
        app_name="quality-overhead",
        extra_conf={"spark.driver.memory": "4g", "spark.ui.showConsoleProgress": "false"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    prefix = "qbench."
    base = workdir / "base"
    with local_broker(log_dir=workdir / "broker") as broker:
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(broker.kind))
        data = sample_data.generate(
            events, seed=3, customers=500, late_ratio=0.01, invalid_ratio=0.001, duplicate_ratio=0.001
        )
        sample_data.produce(client, data, prefix=prefix)
        del data
        dates: dict[str, list[str]] = {}
        for topic in sample_data.TOPICS:
            r = ingest_topic(client, prefix + topic, str(base / "bronze" / topic), show_progress=False)
            dates[topic] = sorted(r.event_dates)
        settings = Settings(
            broker_profile=client.profile, bootstrap_servers=client.bootstrap_servers, lake_root=base
        )
        # Without checks: Great Expectations stays unimported until the first checked run (measured).
        defs = _definitions(settings, prefix, False, workdir / "q")
        job = defs.resolve_job_def("ingest_job")
        dims = [k for k in job.asset_layer.executable_asset_keys if k.path[0] != "bronze"]
        assert job.execute_in_process(instance=DagsterInstance.ephemeral(), asset_selection=dims).success
    days = affected_days(dates)
    print(f"[{events:,}] bronze ready; daily job over {len(days)} day(s)", flush=True)

    # One unmeasured run first, so JIT compilation of the Spark paths is billed to neither variant.
    lake = workdir / "lake-warmup"
    shutil.copytree(base, lake)
    warm_s, _, _ = _daily(_definitions(Settings(lake_root=lake), prefix, False, workdir / "q"), days)
    shutil.rmtree(lake)
    print(f"[{events:,}] warm-up run (not measured): {warm_s:.1f}s", flush=True)
    gx_import_s = None
    runs: dict[str, list[dict]] = {"without_checks": [], "with_checks": []}
    for i in range(repeats):
        for checks in (False, True):
            lake = workdir / f"lake-{i}-{int(checks)}"
            shutil.copytree(base, lake)
            settings = Settings(lake_root=lake, state_dir=workdir / "state")
            defs = _definitions(settings, prefix, checks, workdir / "state" / "quality")
            if checks and gx_import_s is None:
                t0 = time.perf_counter()
                import great_expectations  # noqa: F401  (the one-off import, measured on its own)

                gx_import_s = time.perf_counter() - t0
            load = os.getloadavg()[0]
            wall, steps, evaluations = _daily(defs, days)
            check_s = sum(steps.values())
            name = "with_checks" if checks else "without_checks"
            runs[name].append(
                {
                    "seconds": round(wall, 2),
                    "check_steps_s": round(check_s, 2),
                    "check_step_s": {k: round(v, 2) for k, v in sorted(steps.items())},
                    "evaluations": evaluations,
                    "load_1m": [round(load, 1), round(os.getloadavg()[0], 1)],
                }
            )
            print(
                f"[{events:,}] {name} run {i + 1}: {wall:.1f}s (check steps {check_s:.1f}s; "
                f"load {load:.1f} -> {os.getloadavg()[0]:.1f})",
                flush=True,
            )
            shutil.rmtree(lake)
    spark.stop()
    without = statistics.median(r["seconds"] for r in runs["without_checks"])
    with_ = statistics.median(r["seconds"] for r in runs["with_checks"])
    return {
        "events": events,
        "days": len(days),
        "repeats": repeats,
        "runs": runs,
        "median_without_s": round(without, 2),
        "median_with_s": round(with_, 2),
        "overhead_pct": round(100 * (with_ - without) / without, 1),
        # The check steps against the run without checks: less exposed to the machine's load swings
        # than the difference of two wall times taken minutes apart.
        "check_steps_pct": round(
            100 * statistics.median(r["check_steps_s"] for r in runs["with_checks"]) / without, 1
        ),
        "pair_overhead_pct": [
            round(100 * (w["seconds"] - wo["seconds"]) / wo["seconds"], 1)
            for wo, w in zip(runs["without_checks"], runs["with_checks"], strict=True)
        ],
        "gx_import_s": round(gx_import_s or 0.0, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where to write the JSON record")
    args = parser.parse_args()
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    with tempfile.TemporaryDirectory(prefix="quality-overhead-") as tmp:
        result = run(args.events, args.repeats, args.master, Path(tmp))
    payload = {
        "benchmark": "quality_overhead",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "spark_master": args.master},
        "note": "2 shared cores with other work running concurrently; in-process Dagster runs on one Spark "
        "session after one unmeasured warm-up run; the GX import is paid once per process, before the "
        "first checked run, and listed apart",
        **result,
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(payload, indent=2))
    print(
        json.dumps(
            {
                k: payload[k]
                for k in ("events", "median_without_s", "median_with_s", "overhead_pct", "check_steps_pct")
            }
        )
    )


if __name__ == "__main__":
    main()

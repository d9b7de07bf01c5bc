"""What the runs started by the sensors and declarative automation cost against the same work in-process.

    .venv/bin/python -m benchmarks.dagster_automation [--events 20000] [--quiet-s 75]

Runs from the UI, sensors and schedules must cost what the in-process pipeline costs (<= 1.3x its
time, one Spark JVM per run; docs/benchmarks.md). ``benchmarks.dagster_ui_run`` measures a job
launched from the UI; this measures the path nobody launches by hand: new records in Kafka →
``kafka_lag_sensor`` → ``ingest_job`` → ``daily_automation`` (the silver and gold assets'
``AutomationCondition``, emitted as a backfill when several days are affected) → the runs the
backfill daemon launches.

Sample events (three days) are produced to an embedded broker. Then, each into a fresh lake:

* **in-process**: one new Python process runs ``ingest_job`` and ``daily_job`` over the affected days
  with ``execute_in_process`` (what ``streamhouse demo`` does), timed from process start to exit; once
  before and once after the automation, into fresh lakes, and the mean compared (the load drifts);
* **automation**: ``dagster dev -w workspace.yaml`` (webserver + daemon, temporary ``DAGSTER_HOME``,
  sensors on by default) is started and nothing is launched by hand. Every run the sensors and the
  backfill daemon start is read back through GraphQL once the instance has been idle (no run queued or
  running, no backfill in progress) for ``--quiet-s`` seconds.

Reported for the automation: each run (job, partition range, steps, start→end), the sum of the runs'
times (what the work cost: the figure compared with in-process), the wall time from the first run's start
to the last run's end (which also contains the sensors' 30 s tick intervals: latency, not cost), and the
Spark driver JVMs, each attributed to the run during which it started. Both lakes must end with the same
rows in every silver and gold table, or the benchmark fails.
Results: ``benchmarks/results/dagster_automation.json``; docs/benchmarks.md, "Runs started by sensors and
automation".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.dagster_ui_run import (
    ROOT,
    TreeSampler,
    bench_env,
    dagster_dev,
    graphql,
    run_child,
    wait_for_location,
)

RESULTS = ROOT / "benchmarks" / "results" / "dagster_automation.json"
TARGET = "sum of automation-launched run times <= 1.3x the in-process pipeline, one Spark JVM per run"

RUNS = """{ runsOrError(limit: 200) { __typename ... on Runs { results { runId jobName status startTime
  endTime tags { key value } stepStats { stepKey status } } } } }"""
BACKFILLS = """{ partitionBackfillsOrError(limit: 50) { __typename ... on PartitionBackfills { results {
  id status numPartitions } } } }"""
UNFINISHED_RUNS = {"QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING", "MANAGED"}
FINISHED_BACKFILLS = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}


def _child_pipeline() -> None:
    """ingest_job, then daily_job over the affected days, in one process (the demo's path)."""
    from dagster import DagsterInstance

    from orchestration.definitions import build_definitions
    from orchestration.pipeline import QUIET_RUN_CONFIG, run_daily, run_ingest
    from orchestration.settings import load_settings

    defs = build_definitions(load_settings())
    instance = DagsterInstance.ephemeral()
    started = time.perf_counter()
    ingest = run_ingest(defs, instance, QUIET_RUN_CONFIG)
    assert ingest.result.success
    ingest_s = time.perf_counter() - started
    days = ingest.affected_days
    started = time.perf_counter()
    results = run_daily(defs, days, instance, QUIET_RUN_CONFIG)
    assert all(r.success for r in results)
    daily_s = time.perf_counter() - started
    print(
        json.dumps(
            {
                "days": days,
                "daily_runs": len(results),
                "records": ingest.records,
                "ingest_run_s": round(ingest_s, 2),  # includes the Spark session's start
                "daily_runs_s": round(daily_s, 2),  # reuses that session
            }
        )
    )


def _in_process(env: dict[str, str]) -> dict[str, Any]:
    wall, inner, sampler = run_child(["benchmarks.dagster_automation", "--child"], env)
    return {
        "seconds": round(wall, 2),
        "days": inner["days"],
        "daily_runs": inner["daily_runs"],
        "records": inner["records"],
        "ingest_run_s": inner["ingest_run_s"],
        "daily_runs_s": inner["daily_runs_s"],
        "java_processes": len(sampler.java),
        "peak_rss_mb": round(sampler.peak_rss / 2**20),
    }


def _tags(run: dict[str, Any]) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["tags"]}


def _idle(port: int) -> tuple[bool, list[dict[str, Any]]]:
    """Whether no run is queued or running and no backfill is in progress; and the runs so far."""
    runs = graphql(port, RUNS)["runsOrError"]["results"]
    backfills = graphql(port, BACKFILLS)["partitionBackfillsOrError"]["results"]
    busy = any(r["status"] in UNFINISHED_RUNS for r in runs) or any(
        b["status"] not in FINISHED_BACKFILLS for b in backfills
    )
    return not busy, runs


def _describe(run: dict[str, Any], jvm_starts: list[float]) -> dict[str, Any]:
    tags = _tags(run)
    start, end = run["startTime"], run["endTime"]
    partition = tags.get("dagster/partition") or (
        f"{tags['dagster/asset_partition_range_start']}..{tags['dagster/asset_partition_range_end']}"
        if "dagster/asset_partition_range_start" in tags
        else None
    )
    return {
        "run_id": run["runId"],
        "job": run["jobName"],
        "status": run["status"],
        "started_by": tags.get("dagster/sensor_name") or ("backfill" if "dagster/backfill" in tags else "?"),
        "backfill": tags.get("dagster/backfill"),
        "partition": partition,
        "steps": len(run["stepStats"]),
        "seconds": round(end - start, 2) if start and end else None,
        "spark_jvms": sum(1 for t in jvm_starts if start and end and start - 1 <= t <= end),
    }


def _automation(env: dict[str, str], workdir: Path, quiet_s: float, timeout_s: float) -> dict[str, Any]:
    home = workdir / "dagster-home"
    home.mkdir()
    env = {**env, "DAGSTER_HOME": str(home)}
    with dagster_dev(env, workdir / "dagster-dev.log") as (proc, port):
        with TreeSampler(proc.pid) as sampler:
            started = time.time()
            wait_for_location(port, proc)
            print(f"dagster dev up on port {port} after {time.time() - started:.0f}s; waiting for runs")
            deadline = time.monotonic() + timeout_s
            idle_since: float | None = None
            seen = 0
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"dagster dev exited with {proc.returncode}; see {workdir}")
                idle, runs = _idle(port)
                if len(runs) != seen:
                    seen = len(runs)
                    print(f"  {seen} run(s): " + ", ".join(f"{r['jobName']}={r['status']}" for r in runs))
                finished = runs and all(r["status"] not in UNFINISHED_RUNS for r in runs)
                daily_done = any(r["jobName"] != "ingest_job" for r in runs)
                if idle and finished and daily_done:
                    idle_since = idle_since or time.monotonic()
                    if time.monotonic() - idle_since >= quiet_s:
                        break
                else:
                    idle_since = None
                if time.monotonic() > deadline:
                    raise TimeoutError(f"automation did not settle within {timeout_s:.0f}s; see {workdir}")
                time.sleep(2)
        jvm_starts = sorted(sampler.java_seen.values())
        described = [_describe(r, jvm_starts) for r in sorted(runs, key=lambda r: r["startTime"] or 0)]
        failed = [r for r in described if r["status"] != "SUCCESS"]
        if failed:
            raise RuntimeError(f"automation runs did not succeed: {failed}; see {home}")
        starts = [r["startTime"] for r in runs if r["startTime"]]
        ends = [r["endTime"] for r in runs if r["endTime"]]
        return {
            "runs": described,
            "run_seconds_sum": round(sum(r["seconds"] or 0 for r in described), 2),
            "first_start_to_last_end_s": round(max(ends) - min(starts), 2),
            "spark_jvms": len(sampler.java),
            "max_spark_jvms_per_run": max((r["spark_jvms"] for r in described), default=0),
            "peak_rss_mb_of_new_processes": round(sampler.peak_rss / 2**20),
        }


def table_rows(lake: Path) -> dict[str, int]:
    """Rows per silver and gold Delta table (the two lakes must agree)."""
    from deltalake import DeltaTable

    rows: dict[str, int] = {}
    for layer in ("silver", "gold"):
        for path in sorted((lake / layer).glob("*")):
            if (path / "_delta_log").is_dir():
                rows[f"{layer}/{path.name}"] = DeltaTable(str(path)).to_pyarrow_dataset().count_rows()
    return rows


def run(events: int, quiet_s: float, timeout_s: float, workdir: Path) -> dict[str, Any]:
    from assets import sample_data
    from edge.broker import local_broker, profile_for
    from edge.kafka import KafkaClientConfig

    with local_broker(log_dir=workdir / "broker") as broker:
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(broker.kind))
        data = sample_data.generate(events, seed=5, late_ratio=0.01, invalid_ratio=0.002)
        counts = sample_data.produce(client, data)
        print(f"produced {sum(counts.values()):,} records to {', '.join(counts)}", flush=True)

        # In-process before and after the automation (the machine's load drifts; the mean is compared).
        bootstrap = broker.bootstrap_servers
        before = _in_process(bench_env(workdir, workdir / "lake-in-process-before", bootstrap))
        print(f"in-process (before): {before}", flush=True)
        lake_automation = workdir / "lake-automation"
        automation = _automation(bench_env(workdir, lake_automation, bootstrap), workdir, quiet_s, timeout_s)
        after = _in_process(bench_env(workdir, workdir / "lake-in-process-after", bootstrap))
        print(f"in-process (after): {after}", flush=True)
        in_process_runs = [before, after]
    expected, got = table_rows(workdir / "lake-in-process-before"), table_rows(lake_automation)
    if expected != got:
        raise RuntimeError(f"the lakes differ: in-process {expected}, automation {got}")
    in_process = {
        "seconds": round(sum(r["seconds"] for r in in_process_runs) / len(in_process_runs), 2),
        "attempts": in_process_runs,
    }
    ratio = automation["run_seconds_sum"] / in_process["seconds"]
    for r in automation["runs"]:
        print(f"  {r['job']:<28} {r['started_by']:<18} {r['partition'] or '-':<24} {r['steps']:>3} steps "
              f"{r['seconds']:>7.1f}s  {r['spark_jvms']} JVM")  # fmt: skip
    print(
        f"automation: {len(automation['runs'])} runs, {automation['run_seconds_sum']:.1f}s of runs "
        f"({ratio:.2f}x the in-process {in_process['seconds']:.1f}s), {automation['spark_jvms']} Spark JVMs, "
        f"first start to last end {automation['first_start_to_last_end_s']:.1f}s"
    )
    return {
        "events": events,
        "machine": {"cpus": os.cpu_count(), "load_avg_at_end": os.getloadavg()},
        "in_process": in_process,
        "automation": automation,
        "ratio_run_seconds_to_in_process": round(ratio, 2),
        "tables": got,
        "target": TARGET,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--quiet-s", type=float, default=75.0, help="idle time that ends the automation run")
    parser.add_argument("--timeout-s", type=float, default=1800.0)
    parser.add_argument("--workdir", type=Path, help="keep the lakes and logs here (default: a temp dir)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child_pipeline()
        return 0
    if args.workdir:
        shutil.rmtree(args.workdir, ignore_errors=True)
        args.workdir.mkdir(parents=True)
        result = run(args.events, args.quiet_s, args.timeout_s, args.workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="dagster-automation-") as tmp:
            result = run(args.events, args.quiet_s, args.timeout_s, Path(tmp))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

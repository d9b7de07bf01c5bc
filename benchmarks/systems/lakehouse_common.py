"""Shared plumbing of the lakehouse benchmark hooks (bronze, gold, incremental).

The hooks run the *real* lakehouse code: the Dagster definitions of ``orchestration.definitions`` with
the benchmark's own Spark session handed in (``ExistingSparkResource``), so what is timed is what
``streamhouse`` runs, minus the JVM start. Everything here is deliberately small:

* ``spark_session()`` — the one Spark session of a benchmark process (``local[2]``, 4 GB driver).
* ``lake_definitions()`` — Definitions for a lake root (and a broker/topic prefix when Kafka is used).
* ``run_selection()`` / ``step_seconds()`` / ``layer_seconds()`` — run part of a job over day ranges
  and attribute the time to layers from Dagster's own step durations.
* ``run_reference_pipeline()`` — a small end-to-end run (sample data → Kafka → bronze → silver) whose
  silver tables are the reference schema for synthetic inputs, and which warms the JVM up.
* ``linear_fit()`` — least squares ``t = a + b·n`` (fixed overhead ``a`` separated from the slope).
"""

from __future__ import annotations

import os
import time
import uuid
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dagster import DagsterInstance, Definitions, ExecuteInProcessResult
    from pyspark.sql import SparkSession

    from edge.kafka import KafkaClientConfig

SYSTEM = "streamhouse-lakehouse"
#: Benchmark Spark: 2 local cores (the machine's), a driver big enough for 20M-event gold runs.
SPARK_MASTER = "local[2]"
DRIVER_MEMORY = "4g"
#: In-process Dagster runs log warnings only (the per-step INFO lines would dominate the output).
QUIET_RUN_CONFIG: Mapping[str, Any] = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
#: Silver tables the gold assets read (layer, name).
SILVER_INPUTS = ("orders", "clicks", "customers", "products")


class LakehouseBenchError(RuntimeError):
    """A lakehouse benchmark could not produce a trustworthy figure (failed run, wrong output, ...)."""


def quiet() -> None:
    """Silence Dagster's beta/superseded warnings, which otherwise flood every benchmark run."""
    warnings.filterwarnings("ignore", message=".*is currently in beta.*")
    warnings.filterwarnings("ignore", message=".*is superseded.*")
    warnings.filterwarnings("ignore", category=DeprecationWarning)


def skipped_for_budget(ctx: Any, workload: str, need_s: float, what: str) -> list[dict[str, Any]] | None:
    """A `not_available` result when the quick set's remaining budget is below ``need_s``, else None."""
    from benchmarks.common import not_available

    if not need_s or ctx.remaining_s() >= need_s:
        return None
    reason = (
        f"skipped: needs ~{need_s:.0f} s (Spark, {what}), {ctx.remaining_s():.0f} s left in the quick "
        "set's budget; `make bench-lakehouse` runs it at full size"
    )
    return [not_available(SYSTEM, workload, 0, reason)]


def spark_session(master: str = SPARK_MASTER, driver_memory: str = DRIVER_MEMORY) -> SparkSession:
    """The benchmark's Spark session (started once per process, reused by every hook).

    Built by ``assets.spark.session.build_spark_session`` so it has the lakehouse's defaults (UTC,
    microsecond timestamps, ...). If a session already runs in this process (the test suite's), that
    one is returned unchanged: static settings such as the driver memory cannot change after start.
    """
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    if existing is not None:
        return existing
    from assets.spark.session import build_spark_session

    spark = build_spark_session(
        master,
        app_name="streamhouse-bench",
        extra_conf={"spark.driver.memory": driver_memory, "spark.ui.showConsoleProgress": "false"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def stop_spark() -> None:
    """Stop the session ``spark_session()`` started (no-op when none runs)."""
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is not None:
        session.stop()


def load_avg() -> float:
    """1-minute load average: the machine is shared, so every figure records how busy it was."""
    return round(os.getloadavg()[0], 2)


def lake_definitions(
    lake_root: Path, client: KafkaClientConfig | None = None, topic_prefix: str = ""
) -> Definitions:
    """The real Definitions for ``lake_root``, using the running Spark session (no second JVM)."""
    from assets.resources import ExistingSparkResource
    from orchestration.definitions import build_definitions
    from orchestration.settings import Settings

    kwargs: dict[str, Any] = {"lake_root": lake_root}
    overrides: dict[str, Any] = {"spark": ExistingSparkResource(), "topic_prefix": topic_prefix}
    if client is not None:
        kwargs.update(broker_profile=client.profile, bootstrap_servers=client.bootstrap_servers)
        overrides["bootstrap_servers"] = client.bootstrap_servers
    return build_definitions(Settings(**kwargs), **overrides)


def asset_keys(defs: Definitions, job: str, layers: Iterable[str]) -> list[Any]:
    """The executable asset keys of ``job`` whose first path element is one of ``layers``."""
    wanted = set(layers)
    if "silver" in wanted:
        wanted.add("quarantine")  # silver multi-assets write silver/<t> and quarantine/<t>_quarantine
    keys = defs.resolve_job_def(job).asset_layer.executable_asset_keys
    return sorted((k for k in keys if k.path[0] in wanted), key=lambda k: k.to_user_string())


def run_selection(
    defs: Definitions,
    days: Sequence[str],
    instance: DagsterInstance,
    layers: Iterable[str],
) -> list[ExecuteInProcessResult]:
    """``daily_job`` restricted to the assets of ``layers``, one run per contiguous range of ``days``
    (as ``orchestration.pipeline.run_daily`` does for the whole job). Raises if a run fails."""
    from assets.partitions import contiguous_ranges
    from orchestration.jobs import DAILY_JOB
    from orchestration.runs import range_tags

    job = defs.resolve_job_def(DAILY_JOB)
    selection = asset_keys(defs, DAILY_JOB, layers)
    results = []
    for start, end in contiguous_ranges(list(days)):
        res = job.execute_in_process(
            instance=instance,
            tags=range_tags(start, end),
            asset_selection=selection,
            run_config=QUIET_RUN_CONFIG,
            raise_on_error=False,
        )
        check_success(res, f"daily_job[{','.join(layers)}] {start}..{end}")
        results.append(res)
    return results


def check_success(result: ExecuteInProcessResult, what: str) -> None:
    """Raise with the failing step's error (Dagster's own message names only the run)."""
    if result.success:
        return
    failures = [
        f"{ev.step_key}: {ev.event_specific_data.error.message.strip()[:600]}"  # type: ignore[union-attr]
        for ev in result.all_events
        if ev.event_type_value == "STEP_FAILURE"
    ]
    raise LakehouseBenchError(f"{what} failed: {'; '.join(failures) or 'no step failure recorded'}")


def step_seconds(results: Iterable[ExecuteInProcessResult]) -> dict[str, float]:
    """Seconds per Dagster step (asset op), summed over ``results``, from Dagster's STEP_SUCCESS events."""
    out: dict[str, float] = {}
    for res in results:
        for ev in res.all_events:
            if ev.event_type_value == "STEP_SUCCESS":
                ms = ev.event_specific_data.duration_ms  # type: ignore[union-attr]
                out[ev.step_key or "?"] = out.get(ev.step_key or "?", 0.0) + ms / 1000
    return {k: round(v, 3) for k, v in sorted(out.items())}


def layer_of(step_key: str) -> str:
    """``bronze__orders`` → bronze, ``silver_orders`` → silver, ``gold__click_sessions`` → gold."""
    for layer in ("bronze", "silver", "gold", "maintenance"):
        if step_key.startswith(layer):
            return layer
    return "other"


def layer_seconds(steps: Mapping[str, float]) -> dict[str, float]:
    out = {"bronze": 0.0, "silver": 0.0, "gold": 0.0}
    for key, seconds in steps.items():
        layer = layer_of(key)
        out[layer] = out.get(layer, 0.0) + seconds
    return {k: round(v, 3) for k, v in out.items()}


@dataclass
class ReferenceLake:
    """A lake the real pipeline wrote from sample data: silver tables to compare synthetic ones with."""

    lake: Path
    seconds: float
    records: dict[str, int]
    days: list[str]


def run_reference_pipeline(
    client: KafkaClientConfig, workdir: Path, events: int = 2_000, layers: Sequence[str] = ("silver",)
) -> ReferenceLake:
    """Sample data → Kafka → ``run_ingest`` (bronze + dimensions) → ``daily_job`` for ``layers``.

    Small on purpose: its job is to show what the real silver assets write today (the bronze and silver
    code change under the benchmarks' feet) and to compile Spark's code paths before anything is timed.
    """
    from dagster import DagsterInstance

    from assets import sample_data
    from orchestration.pipeline import run_ingest

    started = time.perf_counter()
    prefix = f"ref{uuid.uuid4().hex[:8]}."
    data = sample_data.generate(events, seed=11, days=2, customers=20, id_prefix="ref-")
    sample_data.produce(client, data, prefix=prefix)
    lake = workdir / f"reference-{prefix.rstrip('.')}"
    defs = lake_definitions(lake, client, prefix)
    instance = DagsterInstance.ephemeral()
    ingest = run_ingest(defs, instance, run_config=QUIET_RUN_CONFIG)
    check_success(ingest.result, "reference ingest_job")
    days = ingest.affected_days
    if not days:
        raise LakehouseBenchError(f"reference pipeline: bronze recorded no event dates ({ingest.records})")
    run_selection(defs, days, instance, layers)
    return ReferenceLake(lake, round(time.perf_counter() - started, 2), dict(ingest.records), days)


@dataclass(frozen=True)
class LinearFit:
    """``seconds = intercept_s + slope_s_per_m · millions``, with R² and the marginal cost per step."""

    intercept_s: float
    slope_s_per_m: float
    r2: float
    #: seconds per million events between successive sizes: (t[i+1] - t[i]) / (n[i+1] - n[i])
    marginal_s_per_m: list[float]

    def as_dict(self) -> dict[str, Any]:
        return {
            "intercept_s": round(self.intercept_s, 2),
            "slope_s_per_million": round(self.slope_s_per_m, 3),
            "r2": round(self.r2, 4),
            "marginal_s_per_million": [round(m, 3) for m in self.marginal_s_per_m],
        }


def linear_fit(events: Sequence[int], seconds: Sequence[float]) -> LinearFit:
    """Least squares over (events, seconds); needs at least two distinct sizes."""
    if len(events) != len(seconds) or len(set(events)) < 2:
        raise ValueError(f"linear_fit needs >= 2 distinct sizes, got events={list(events)}")
    pairs = sorted(zip(events, seconds, strict=True))
    xs = [n / 1e6 for n, _ in pairs]
    ys = [t for _, t in pairs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    intercept = my - slope * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    r2 = 1.0 - ss_res / ss_tot if ss_tot else 1.0
    marginal = [(ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i]) for i in range(len(xs) - 1)]
    return LinearFit(intercept, slope, r2, marginal)

"""The main pipeline in-process: sample data → Kafka → bronze → silver → gold, through Dagster.

``run_main_job`` is what ``streamhouse demo`` calls; ``run_ingest`` and ``run_daily`` are the two
halves, usable on their own (tests, notebooks). Daily runs cover contiguous partition ranges, so a
backfill of N days is one run whose Spark jobs replace all N partitions in one commit per table.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dagster import DagsterInstance, Definitions, ExecuteInProcessResult

from orchestration.definitions import build_definitions
from orchestration.jobs import DAILY_JOB, INGEST_JOB
from orchestration.partitions import affected_days, contiguous_ranges
from orchestration.runs import materializations, range_tags
from orchestration.settings import Settings


@dataclass
class IngestSummary:
    result: ExecuteInProcessResult
    #: logical topic -> event dates that received records
    event_dates: dict[str, list[str]] = field(default_factory=dict)
    records: dict[str, int] = field(default_factory=dict)
    #: time inside the Kafka → Delta loop per topic (excludes Spark start-up and Dagster overhead)
    ingest_seconds: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def affected_days(self) -> list[str]:
        return affected_days(self.event_dates)


def bronze_summary(ingest: IngestSummary, bronze_dir: Any) -> str:
    """One summary line for an ingest run (the demo's and ``run_main_job``'s)."""
    total = sum(ingest.records.values())
    loop_s = sum(ingest.ingest_seconds.values())
    return (
        f"{total:,} new records, exactly once, Kafka → Delta {loop_s:.1f}s "
        f"({total / max(loop_s, 1e-9):,.0f}/s; run incl. Spark start {ingest.seconds:.1f}s) → {bronze_dir}"
    )


def daily_summary(
    days: list[str], results: list[ExecuteInProcessResult], seconds: float
) -> list[tuple[str, str]]:
    """Summary rows for the daily runs: the days, then each silver, quarantine and gold table written."""
    span = f"{days[0]}..{days[-1]}" if days else "-..-"
    rows = [("Silver + gold", f"{len(days)} day(s) {span} in {seconds:.1f}s ({len(results)} run(s))")]
    mats: dict[str, dict[str, Any]] = {}
    for res in results:
        mats.update(materializations(res))
    for key in sorted(mats):
        if key.startswith(("silver/", "quarantine/", "gold/")):
            meta = mats[key]
            rows.append((key, f"version {meta.get('delta_version')}, {meta.get('rows_written', 0):,} rows"))
    return rows


#: Called with every event of an in-process run as it is stored (step starts and ends, log lines).
EventListener = Callable[[Any], None]


def _listened(instance: DagsterInstance | None, on_event: EventListener | None) -> dict[str, Any]:
    """``execute_in_process`` keyword arguments that make ``on_event`` see the run's events live: the run
    id chosen here, so the listener is registered on the instance before the run starts (the demo prints
    what a long run is doing instead of nothing until it ends)."""
    if on_event is None or instance is None:
        return {"instance": instance}
    run_id = str(uuid.uuid4())  # what Dagster's own run ids are
    instance.add_event_listener(run_id, on_event)
    return {"instance": instance, "run_id": run_id}


def run_ingest(
    defs: Definitions,
    instance: DagsterInstance | None = None,
    run_config: Mapping[str, Any] | None = None,
    on_event: EventListener | None = None,
) -> IngestSummary:
    started = time.perf_counter()
    result = defs.resolve_job_def(INGEST_JOB).execute_in_process(
        run_config=run_config, **_listened(instance, on_event)
    )
    summary = IngestSummary(result=result, seconds=time.perf_counter() - started)
    for key, meta in materializations(result).items():
        layer, _, topic = key.partition("/")
        if layer == "bronze":
            summary.event_dates[topic] = list(meta.get("event_dates", []))
            summary.records[topic] = int(meta.get("records", 0))
            summary.ingest_seconds[topic] = float(meta.get("ingest_seconds", 0.0))
    return summary


def run_daily(
    defs: Definitions,
    days: list[str],
    instance: DagsterInstance | None = None,
    run_config: Mapping[str, Any] | None = None,
    on_event: EventListener | None = None,
) -> list[ExecuteInProcessResult]:
    """One ``daily_job`` run per contiguous range of ``days``."""
    job = defs.resolve_job_def(DAILY_JOB)
    return [
        job.execute_in_process(
            tags=range_tags(start, end), run_config=run_config, **_listened(instance, on_event)
        )
        for start, end in contiguous_ranges(days)
    ]


#: In-process runs started from the command line log warnings only; the summary says what happened.
QUIET_RUN_CONFIG: Mapping[str, Any] = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def run_main_job(
    settings: Settings,
    *,
    bootstrap_servers: str,
    events: int,
    topic_prefix: str = "",
    spark: Any = None,
    seed: int | None = None,
) -> list[tuple[str, str]]:
    """Produce ``events`` sample events, then bronze → silver → gold in-process; returns summary rows.

    Each call produces new events (fresh ids unless ``seed`` is given); bronze picks up only records
    it has not committed yet, and only the affected days are recomputed.
    """
    import uuid

    from assets import sample_data
    from edge.kafka import KafkaClientConfig

    rows: list[tuple[str, str]] = []
    client = KafkaClientConfig(bootstrap_servers, settings.broker_profile, dict(settings.kafka))
    started = time.perf_counter()
    run_id = uuid.uuid4().hex[:6]
    data = sample_data.generate(
        events,
        seed=seed if seed is not None else 7,
        id_prefix="" if seed is not None else f"{run_id}-",
        invalid_ratio=0.002,
        duplicate_ratio=0.002,
        late_ratio=0.01,
    )
    counts = sample_data.produce(client, data, prefix=topic_prefix)
    rows.append(
        (
            "Produce",
            f"{sum(counts.values()):,} records to {', '.join(counts)} "
            f"in {time.perf_counter() - started:.1f}s",
        )
    )
    overrides: dict[str, Any] = {"bootstrap_servers": bootstrap_servers, "topic_prefix": topic_prefix}
    if spark is not None:
        overrides["spark"] = spark
    defs = build_definitions(settings, **overrides)
    instance = DagsterInstance.ephemeral()
    ingest = run_ingest(defs, instance, run_config=QUIET_RUN_CONFIG)
    rows.append(("Bronze", bronze_summary(ingest, settings.lake_root / "bronze")))
    days = ingest.affected_days
    started = time.perf_counter()
    results = run_daily(defs, days, instance, run_config=QUIET_RUN_CONFIG)
    rows.extend(daily_summary(days, results, time.perf_counter() - started))
    return rows

"""The end-to-end demo: sample events → Kafka → Dagster lakehouse + edge apps → one summary, in the UI.

The demo works on the project's own things so that ``make dagster`` afterwards shows it: the recorded
local broker (started if none runs, and left running), unprefixed topics, the lake under ``lake_root``
and the Dagster instance in ``dagster_home``. Its runs, materializations, checks and plots are then in
the UI, and an ingest launched there finds the topics.

Steps, each printed as it starts and ends: produce three days of sample events ending last midnight
(so they land in the most recent daily partitions), ``ingest_job`` (Kafka → bronze, exactly once),
the edge apps ``revenue``, ``sessions`` and ``revenue-windows`` (application ids from
``assets.edge_apps``) over the same topics, a second ingest that picks up only the edge output,
``daily_job`` for the affected days (silver, quarantine, gold and its checks, among them the edge's
windows against gold's), and the comparisons edge vs gold.

Running it again adds a new batch: bronze resumes from the offsets in its Delta commits, the edge
apps resume from their consumer groups. Only when the lake has read further into a topic than the
topic holds (a memory-only Tansu broker was restarted, Kafka's data dir was deleted, a topic was
recreated) do the lake and the topics disagree. The demo then stops before changing anything, with
one line naming the topic, partition and offsets it found and what ``--reset`` would delete
(``reset_targets``); it never deletes on its own, since the lake and the history in the Dagster
instance may be all that is left of the data. ``--reset`` starts over on what it owns (``reset_demo``:
the lake's tables, their history in the Dagster instance, the edge apps' local state).

This module runs the steps in order; each part has a module of its own: the broker
(``orchestration.demo_kafka``), topic ends and stale offsets (``demo_offsets``), ``--reset``
(``demo_reset``), the edge apps (``demo_edge_runs``), gold read back and compared with the edge
(``demo_edge_vs_gold``), live progress (``demo_progress``) and the summary (``demo_report``).
"""

from __future__ import annotations

import time
import uuid
import warnings
from datetime import date
from pathlib import Path
from typing import Any

from edge.errors import StreamhouseError
from orchestration.demo_edge_runs import (
    EdgeSessions,
    run_edge_revenue,
    run_edge_revenue_windows,
    run_edge_sessions,
    wait_caught_up,
)
from orchestration.demo_edge_vs_gold import compare_edge_with_gold, gold_revenue, gold_sessions
from orchestration.demo_kafka import KafkaUse, use_kafka
from orchestration.demo_offsets import count_records, group_offsets, read_to_end, stale_topics
from orchestration.demo_progress import RunProgress, console, step
from orchestration.demo_report import (
    DemoSummary,
    TableRows,
    lake_tables,
    print_summary,
    rows_written,
    tables_table,
)
from orchestration.demo_reset import LAYERS, reset_demo, reset_targets
from orchestration.settings import Settings

#: The demo's parts live in modules of their own (``orchestration.demo_*``); these names stay
#: importable from here, where the CLI and the tests import them.
__all__ = [
    "DAYS",
    "LAYERS",
    "DemoError",
    "DemoSummary",
    "EdgeSessions",
    "KafkaUse",
    "RunProgress",
    "TableRows",
    "console",
    "count_records",
    "gold_revenue",
    "gold_sessions",
    "group_offsets",
    "lake_tables",
    "open_instance",
    "read_to_end",
    "reset_demo",
    "reset_targets",
    "rows_written",
    "run_demo",
    "run_edge_revenue",
    "run_edge_revenue_windows",
    "run_edge_sessions",
    "stale_topics",
    "step",
    "tables_table",
    "wait_caught_up",
]

#: Days of sample data, ending last midnight (UTC).
DAYS = 3
#: Shares of the deliberately bad records in the demo's batch (see the summary's explanation).
LATE_RATIO, INVALID_RATIO, DUPLICATE_RATIO = 0.01, 0.002, 0.002


class DemoError(StreamhouseError):
    """The demo cannot go on as asked; the message says what to do (``--reset``, a broker, ...)."""


def _quiet_spark(settings: Settings) -> object:
    """The demo's Spark session, with Spark's own WARN chatter and progress bars off (the summary speaks)."""
    from assets.spark.session import build_spark_session

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        spark = build_spark_session(
            settings.spark_master,
            app_name="streamhouse-demo",
            extra_conf={"spark.ui.showConsoleProgress": "false", **settings.spark_conf},
            delta_jars_available=settings.native_delta(),
            delta_jars=settings.spark_delta_jars(),
        )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def open_instance(dagster_home: Path) -> Any:
    """The project's Dagster instance (what ``make dagster`` opens with DAGSTER_HOME=dagster_home)."""
    from dagster import DagsterInstance

    from orchestration.instance import ensure_instance_dir

    ensure_instance_dir(dagster_home)  # with a dagster.yaml: no warning, no telemetry banner
    return DagsterInstance.from_config(str(dagster_home))


def run_demo(
    settings: Settings,
    *,
    events: int = 20_000,
    spark: object = None,
    topic_prefix: str = "",
    instance: Any = None,
    reset: bool = False,
    stop_broker: bool = False,
    today: date | None = None,
) -> DemoSummary:
    """Run the demo; returns the summary rows (also printed). Tests pass a ``topic_prefix`` (the shared
    broker), a tmp ``dagster_home``/lake in ``settings`` and a fixed ``today`` (deterministic dates)."""
    from assets import sample_data
    from orchestration.definitions import build_definitions
    from orchestration.partitions import DAILY
    from orchestration.pipeline import QUIET_RUN_CONFIG, bronze_summary, daily_summary, run_daily, run_ingest
    from orchestration.resources import ExistingSparkResource

    summary = DemoSummary()
    own_instance = instance is None
    instance = instance if instance is not None else open_instance(settings.dagster_home)
    where = settings.dagster_home if own_instance else "the given instance"
    try:
        with use_kafka(settings, stop_broker) as kafka:
            client = kafka.client
            broker = {
                "configured": "the configured cluster",
                "recorded": f"the recorded local {kafka.kind} broker (reused)",
                "started": f"a local {kafka.kind} broker, started and recorded (left running)",
            }[kafka.origin]
            # The topics' names only when they carry a prefix (tests); `topics (no prefix)*` was noise.
            prefixed = f", topics {topic_prefix}*" if topic_prefix else ""
            summary.add("Kafka", f"{broker} at {client.bootstrap_servers}{prefixed}")
            with step("checking the lake against the topics"):
                stale = stale_topics(settings, client, topic_prefix)
            if stale and not reset:
                # Never delete on our own: the lake and the instance's history may be all that is left.
                raise DemoError(
                    f"the lake at {settings.lake_root} has read further than the topics at "
                    f"{client.bootstrap_servers} hold: {'; '.join(stale)}; the broker lost or recreated "
                    "them, so nothing was changed. `streamhouse demo --reset` starts over from the topics "
                    f"(deleting {reset_targets(settings, instance, topic_prefix)})"
                )
            if reset:
                removed = reset_demo(settings, instance, topic_prefix)
                summary.add("Reset", f"--reset: starting over; removed {', '.join(removed) or 'nothing'}")

            if spark is None:
                with step("starting Spark"):
                    _quiet_spark(settings)  # started here so its logging is quiet; the runs pick it up
                spark = ExistingSparkResource()
            defs = build_definitions(
                settings, bootstrap_servers=client.bootstrap_servers, topic_prefix=topic_prefix, spark=spark
            )
            start = sample_data.recent_start(DAYS, today)
            with step(f"producing {events:,} sample events over {DAYS} days from {start.date()}"):
                started = time.perf_counter()
                data = sample_data.generate(
                    events,
                    start=start,
                    days=DAYS,
                    id_prefix=f"{uuid.uuid4().hex[:6]}-",
                    late_ratio=LATE_RATIO,
                    invalid_ratio=INVALID_RATIO,
                    duplicate_ratio=DUPLICATE_RATIO,
                )
                counts = sample_data.produce(client, data, prefix=topic_prefix)
            summary.add(
                "Produce",
                f"{sum(counts.values()):,} records to {', '.join(counts)} "
                f"in {time.perf_counter() - started:.1f}s",
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                with (
                    step("ingest_job: Kafka → bronze (and the silver dimension tables)"),
                    RunProgress("ingest_job") as progress,
                ):
                    ingest = run_ingest(defs, instance, run_config=QUIET_RUN_CONFIG, on_event=progress)
                summary.add("Bronze", bronze_summary(ingest, settings.lake_root / "bronze"))
                written = rows_written([ingest.result])
            with step("edge app revenue (examples.revenue) over the orders"):
                edge = run_edge_revenue(settings, client, topic_prefix, summary)
            with step("edge app sessions (examples.click_sessions) over the clicks"):
                sessions = run_edge_sessions(settings, client, topic_prefix, summary)
            with step("edge app revenue-windows (examples.revenue_windows) over the orders"):
                run_edge_revenue_windows(settings, client, topic_prefix, summary)
            with step("ingest_job again: only the edge output is new"), RunProgress("ingest_job") as progress:
                again = run_ingest(defs, instance, run_config=QUIET_RUN_CONFIG, on_event=progress)
            written = rows_written([again.result], written)
            edge_topics = (sample_data.EDGE_REVENUE, sample_data.EDGE_REVENUE_5M)
            others = sum(n for t, n in again.records.items() if t not in edge_topics)
            summary.add(
                "Bronze, edge output",
                "; ".join(
                    f"{again.records.get(t, 0):,} records of {topic_prefix}{t} → bronze/{t}"
                    for t in edge_topics
                )
                + f" ({others} new raw records: the rerun resumed exactly where the first stopped)",
            )
            # The daily job after the edge apps' output is in bronze: gold's check edge_windows_match_gold
            # compares the revenue-windows app's windows with gold's (it has nothing to compare before).
            # A daily partition exists once its day is over: today's (sessions reach D+1) is not one yet.
            affected = sorted({*ingest.affected_days, *again.affected_days})
            days = [d for d in affected if DAILY.has_partition_key(d)]
            with (
                warnings.catch_warnings(),
                step(f"daily_job: silver, quarantine and gold for {len(days)} day(s)"),
            ):
                warnings.simplefilter("ignore", FutureWarning)
                started = time.perf_counter()
                with RunProgress("daily_job") as progress:
                    results = run_daily(defs, days, instance, run_config=QUIET_RUN_CONFIG, on_event=progress)
            # the tables' rows go to the summary's table of this run vs the totals (lake_tables)
            rows = daily_summary(days, results, time.perf_counter() - started)
            summary.add(*rows[0])
            written = rows_written(results, written)
    finally:
        if own_instance:
            instance.dispose()
    compare_edge_with_gold(settings, summary, edge, sessions, data)
    summary.add_tables(lake_tables(settings.lake_root, written))
    print_summary(summary, settings, where, kafka)
    return summary

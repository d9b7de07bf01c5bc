"""``streamhouse demo --pipeline DIR``: any declared pipeline end to end, the way the demo runs its own.

The broker (the configured cluster, else the recorded local one, else one started and left running),
the declared topics created where missing, the pipeline's own sample generator (``generator:``), the
ingest job, the daily job for every day the new records dirty, and a summary of every table. The
edge apps and the edge-vs-gold comparison are the demo's own (``orchestration.demo``).

A generator is ``module:function`` in the pipeline's folder, called as ``function(client, prefix,
start=..., days=...)``: it sends sample records to ``<prefix><source>`` topics (each record's timestamp
its event time) and returns what it sent as ``{name: count}``.
"""

from __future__ import annotations

import importlib
import time
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from typing import Any

from edge.errors import StreamhouseError
from orchestration.demo_kafka import use_kafka
from orchestration.demo_progress import RunProgress, step
from orchestration.demo_report import DemoSummary, lake_tables, print_summary, rows_written
from orchestration.settings import Settings

#: Days of sample events a run produces, ending at the last midnight (a daily partition exists once
#: its day is over).
DAYS = 2


class PipelineDemoError(StreamhouseError):
    pass


def generator_of(pipeline: Any) -> Any:
    """The declared generator, from the pipeline's folder (``active_pipeline`` put it on the path)."""
    if not pipeline.generator:
        raise PipelineDemoError(
            f"pipeline {pipeline.name!r} declares no generator (`generator: module:function`), so there is "
            "no sample data to run it with; produce to its topics yourself and open `make dagster`"
        )
    module, _, function = pipeline.generator.partition(":")
    return getattr(importlib.import_module(module), function)


def run_pipeline_demo(
    settings: Settings,
    *,
    days: int = DAYS,
    topic_prefix: str = "",
    spark: object = None,
    instance: Any = None,
    today: date | None = None,
) -> DemoSummary:
    """Run the configured pipeline end to end; returns the summary (also printed)."""
    from assets.pipeline.active import active_pipeline
    from assets.pipeline.topics import source_topic_specs
    from edge.kafka import create_topics
    from orchestration.definitions import build_definitions
    from orchestration.demo import _quiet_spark, open_instance
    from orchestration.partitions import DAILY
    from orchestration.pipeline import QUIET_RUN_CONFIG, bronze_summary, daily_summary, run_daily, run_ingest
    from orchestration.resources import ExistingSparkResource

    pipeline = active_pipeline()
    generate = generator_of(pipeline)
    summary = DemoSummary()
    own_instance = instance is None
    instance = instance if instance is not None else open_instance(settings.dagster_home)
    where = settings.dagster_home if own_instance else "the given instance"
    try:
        with use_kafka(settings, False) as kafka:
            client = kafka.client
            summary.add("Pipeline", f"{pipeline.name} ({len(pipeline.sources)} topics, {_tables(pipeline)})")
            summary.add("Kafka", f"{kafka.origin} broker at {client.bootstrap_servers}")
            create_topics(client, source_topic_specs(pipeline, topic_prefix))
            if spark is None:
                with step("starting Spark"):
                    _quiet_spark(settings)
                spark = ExistingSparkResource()
            defs = build_definitions(
                settings, bootstrap_servers=client.bootstrap_servers, topic_prefix=topic_prefix, spark=spark
            )
            day = today or datetime.now(UTC).date()
            start = datetime(day.year, day.month, day.day, tzinfo=UTC) - timedelta(days=days)
            with step(f"{pipeline.generator}: sample events over {days} day(s) from {start.date()}"):
                sent: Mapping[str, int] = generate(client, topic_prefix, start=start, days=days)
            summary.add("Produce", ", ".join(f"{n:,} {what}" for what, n in sent.items()))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                with (
                    step("ingest_job: Kafka → bronze (and the tables kept whole)"),
                    RunProgress("ingest_job") as p,
                    _failure_as_error(),
                ):
                    ingest = run_ingest(defs, instance, run_config=QUIET_RUN_CONFIG, on_event=p)
                summary.add("Bronze", bronze_summary(ingest, settings.lake_root / "bronze"))
                written = rows_written([ingest.result])
                affected = [d for d in ingest.affected_days if DAILY.has_partition_key(d)]
                with step(f"daily_job: silver, quarantine and gold for {len(affected)} day(s)"):
                    started = time.perf_counter()
                    with RunProgress("daily_job") as progress, _failure_as_error():
                        results = run_daily(
                            defs, affected, instance, run_config=QUIET_RUN_CONFIG, on_event=progress
                        )
                summary.add(*daily_summary(affected, results, time.perf_counter() - started)[0])
                written = rows_written(results, written)
                failed = [r.run_id for r in [ingest.result, *results] if not r.success]
                if failed:
                    summary.warn(
                        "Runs", f"{len(failed)} run(s) failed: {', '.join(failed)} (see `make dagster`)"
                    )
    finally:
        if own_instance:
            instance.dispose()
    summary.add_tables(lake_tables(settings.lake_root, written))
    print_summary(summary, settings, where, kafka)
    return summary


@contextmanager
def _failure_as_error() -> Iterator[None]:
    """A step that failed on purpose (``dagster.Failure``: a table built by other logic, a blocking
    check) ends the run with its reason as one line, not a traceback."""
    from dagster import DagsterExecutionStepExecutionError, Failure

    try:
        yield
    except Failure as exc:  # in-process runs raise the step's Failure itself
        raise PipelineDemoError(str(exc.description)) from None
    except DagsterExecutionStepExecutionError as exc:
        cause = exc.user_exception
        if isinstance(cause, Failure):
            raise PipelineDemoError(f"{exc.step_key}: {cause.description}") from None
        raise


def _tables(pipeline: Any) -> str:
    silver = len(pipeline.event_tables) + len(pipeline.change_tables)
    return f"{silver} silver and {len(pipeline.gold_tables)} gold tables"

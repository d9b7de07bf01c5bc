"""Declarative automation of the daily assets: silver events and gold follow bronze by event day.

Bronze is not partitioned (it follows Kafka offsets) while silver and gold are daily, so Dagster's
``eager()`` can only request their *latest* day after a bronze update; late events would never be
recomputed. Each bronze materialization records the ``event_dates`` its records fell on, and
``assets.partitions.affected_days`` turns those into the days whose silver rows, windows, sessions
and enriched orders change. ``BronzeEventDays`` is that rule as an ``AutomationCondition``: true for
exactly those partitions, for bronze materializations newer than the previous evaluation. It is
custom Python, so the sensor evaluating it runs in the code location (``use_user_code_server``).

``daily_condition()`` adds the usual guards: a requested day stays pending until it is requested or
updated (the trigger survives a tick on which a dependency was still running), and nothing is
requested while the asset or one of its dependencies is in progress, nor while an ingest run is
unfinished. The last one is ``IngestFinished``: Dagster's ``in_progress`` is per asset, so a tick
between an ingest run's bronze steps and its dimension steps requested silver and three gold tables
at once but ``orders_enriched`` (whose dimension deps were still running) a tick later -- two backfills,
two runs and two Spark JVMs for one ingest (``benchmarks/dagster_automation.py`` measured it).
Waiting for the whole ingest run puts every daily asset of an ingest into one backfill, and so one run.
"""

from __future__ import annotations

from collections.abc import Sequence

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    AutomationCondition,
    AutomationContext,
    AutomationResult,
    DagsterRunStatus,
)

from assets.bronze.assets import bronze_key
from assets.partitions import affected_days
from assets.pipeline.active import active_pipeline

#: Bronze materializations read per topic and evaluation (a tick follows a few ingest runs at most).
MAX_RECORDS_PER_TICK = 1000


class BronzeEventDays(AutomationCondition[AssetKey]):
    """True for the daily partitions affected by bronze materializations since the previous tick."""

    def __init__(self, topics: Sequence[str]) -> None:
        self.topics = tuple(topics)

    @property
    def name(self) -> str:
        return "bronze_event_days"

    @property
    def description(self) -> str:
        return f"days affected by events bronze ingested ({', '.join(self.topics)}) since the previous tick"

    def evaluate(self, context: AutomationContext) -> AutomationResult:  # type: ignore[override]
        if context.previous_temporal_context is None or context.partitions_def is None:
            # First evaluation: like ``newly_updated``, history before automation was on is not replayed.
            return AutomationResult(context, context.get_empty_subset())
        previous = context.previous_max_storage_id or 0  # None: the event log was empty then
        newest = context.max_storage_id
        if newest is None or newest <= previous:
            return AutomationResult(context, context.get_empty_subset())
        days = affected_days(bronze_event_dates(context, self.topics, previous, newest))
        partitions_def = context.partitions_def
        valid = {d for d in days if partitions_def.has_partition_key(d)}
        subset = context.asset_graph_view.compute_intersection_with_partition_keys(
            valid, context.candidate_subset
        )
        return AutomationResult(context, subset)


def bronze_event_dates(
    context: AutomationContext, topics: Sequence[str], after: int, up_to: int
) -> dict[str, set[str]]:
    """``{topic: event dates}`` recorded by bronze materializations with storage id in (after, up_to]."""
    instance = context.asset_graph_view.instance
    dates: dict[str, set[str]] = {}
    for topic in topics:
        result = instance.fetch_materializations(
            AssetRecordsFilter(
                asset_key=bronze_key(topic), after_storage_id=after, before_storage_id=up_to + 1
            ),
            limit=MAX_RECORDS_PER_TICK,
        )
        for record in result.records:
            mat = record.asset_materialization
            entry = mat.metadata.get("event_dates") if mat is not None else None
            if entry is not None and entry.value:
                dates.setdefault(topic, set()).update(entry.value)  # type: ignore[arg-type]
    return dates


#: Run states in which a run may still write what it planned (also the lag sensor's "ingest in progress").
UNFINISHED = {
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
}


class IngestFinished(AutomationCondition[AssetKey]):
    """True for every candidate unless a run that planned a bronze materialization is unfinished.

    The run that last planned each bronze asset is read from the event log, so an ``ingest_job`` and
    a bronze materialization launched from the UI both count, whatever the job is called.
    """

    def __init__(self, topics: Sequence[str]) -> None:
        self.topics = tuple(topics)

    @property
    def name(self) -> str:
        return "ingest_finished"

    @property
    def description(self) -> str:
        return "no run that ingests bronze is queued or running"

    def evaluate(self, context: AutomationContext) -> AutomationResult:  # type: ignore[override]
        instance = context.asset_graph_view.instance
        planned = (instance.get_latest_planned_materialization_info(bronze_key(t)) for t in self.topics)
        run_ids = {info.run_id for info in planned if info is not None}
        for run_id in run_ids:
            run = instance.get_run_by_id(run_id)
            if run is not None and run.status in UNFINISHED:
                return AutomationResult(context, context.get_empty_subset())
        return AutomationResult(context, context.candidate_subset)


def daily_condition(topics: Sequence[str]) -> AutomationCondition:
    """When a daily asset runs: days bronze events touched, once, never while it, a dep or an ingest
    is running."""
    handled = AutomationCondition.newly_requested() | AutomationCondition.newly_updated()
    return (
        BronzeEventDays(topics).since(handled).with_label("bronze events touched the day")
        & ~AutomationCondition.in_progress()
        & ~AutomationCondition.any_deps_in_progress()
        & IngestFinished(topics)
    ).with_label("daily: follows bronze event days")


#: Every daily asset follows the topics silver reads (a change to a dimension changes the gold tables
#: joined to it): the configured pipeline's event and change tables.
DAILY_TOPICS = tuple(active_pipeline().silver_tables())
DAILY_AUTOMATION = daily_condition(DAILY_TOPICS)

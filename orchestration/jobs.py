"""Jobs of the lakehouse.

* ``ingest_job`` — Kafka → bronze for every topic, plus the small silver dimension tables.
* ``daily_job`` — silver events and every gold table, for one day or a range (backfills).
* ``maintenance_job`` — compaction, checkpoints and vacuum of every table.
* ``observe_job`` — observes every Kafka topic (offsets, records, lag per group) and edge app.
* ``generate_sample_events`` — more sample events (late and malformed ones included) to the topics,
  what ``streamhouse generate`` does, so a user can watch ingest and the sensor react from the UI.
* ``replay_job`` — rebuild chosen tables and everything downstream (``streamhouse replay lake``'s
  config, ``orchestration/replay``).
"""

from __future__ import annotations

from dagster import AssetSelection, Failure, Field, define_asset_job, job, op

from assets.edge_apps.registry import EDGE_APPS
from assets.kafka.assets import KAFKA_TOPICS
from assets.kafka.keys import edge_app_key, topic_key
from assets.silver.keys import quarantine_key, silver_key
from assets.silver.transform import SPECS
from orchestration.replay.job import replay_job

INGEST_JOB = "ingest_job"
DAILY_JOB = "daily_job"
MAINTENANCE_JOB = "maintenance_job"
OBSERVE_JOB = "observe_job"


def _silver_pairs(partitioned: bool) -> AssetSelection:
    """Silver tables and their quarantine: the daily (event) ones, or those rebuilt whole."""
    keys = [
        k
        for name, spec in SPECS.items()
        if (spec.time_col is not None) == partitioned
        for k in (silver_key(name), quarantine_key(name))
    ]
    return AssetSelection.assets(*keys)


ingest_job = define_asset_job(
    INGEST_JOB,
    selection=AssetSelection.groups("bronze") | _silver_pairs(partitioned=False),
    description="Kafka → bronze (exactly once) for every topic, then the silver dimension tables.",
)

daily_job = define_asset_job(
    DAILY_JOB,
    selection=_silver_pairs(partitioned=True) | AssetSelection.groups("gold"),
    # Daily partitions come from the selected assets (``partitions_def`` here is deprecated: a warning on
    # every load of the code location).
    description="Silver events and gold tables for the selected day(s); replaces those partitions.",
)

maintenance_job = define_asset_job(
    MAINTENANCE_JOB,
    selection=AssetSelection.groups("maintenance"),
    description="Compacts small files, writes checkpoints and vacuums every lake table.",
)

#: Observes every Kafka topic and edge app of the lineage graph (offsets, lag, topology, /metrics).
observe_job = define_asset_job(
    OBSERVE_JOB,
    selection=AssetSelection.assets(
        *(topic_key(t) for t in KAFKA_TOPICS), *(edge_app_key(a.application_id) for a in EDGE_APPS)
    ),
    description="Observes every Kafka topic (end offsets, records, lag per group) and edge app.",
)

GENERATE_JOB = "generate_sample_events"


#: The options of ``streamhouse generate`` (a plain schema: this module's annotations are strings).
GENERATE_CONFIG = {
    "events": Field(int, default_value=1_000, description="orders and clicks, half each (1..10,000,000)"),
    "rate": Field(float, default_value=0.0, description="records per second; 0 = as fast as possible"),
}


@op(
    config_schema=GENERATE_CONFIG,
    required_resource_keys={"kafka"},
    description="Produces sample events over yesterday: ~5% late orders, 2% malformed, 1% duplicates.",
)
def produce_sample_events(context) -> int:  # type: ignore[no-untyped-def]
    """``context`` is an ``OpExecutionContext``; unannotated since this module's annotations are strings."""
    from assets import sample_data
    from edge.kafka.delivery import DeliveryError

    events, rate = int(context.op_config["events"]), float(context.op_config["rate"])
    if not 1 <= events <= 10_000_000 or rate < 0:
        raise Failure(f"events must be 1..10,000,000 and rate >= 0 (got events={events}, rate={rate})")
    kafka = context.resources.kafka

    def progress(sent: int, total: int) -> None:
        if sent == total or sent % max(1, total // 10) == 0:
            context.log.info(f"produced {sent:,} of {total:,} records")

    try:
        batch = sample_data.produce_live(
            kafka.client(), events, prefix=kafka.topic_prefix, rate=rate or None, progress=progress
        )
    except DeliveryError as exc:  # records lost: the run fails, its reason (topic, partition, error) shown
        raise Failure(description=str(exc)) from exc
    context.log.info(f"{batch.total:,} records to {', '.join(sorted(batch.produced))}; bad: {batch.injected}")
    return batch.total


@job(name=GENERATE_JOB, description="More sample events to the topics (streamhouse generate), bad ones too.")
def generate_sample_events() -> None:
    produce_sample_events()


JOBS = [ingest_job, daily_job, maintenance_job, observe_job, generate_sample_events, replay_job]

"""Jobs of the lakehouse.

* ``ingest_job`` — Kafka → bronze for every topic, plus the small silver dimension tables.
* ``daily_job`` — silver events and every gold table, for one day or a range (backfills).
* ``maintenance_job`` — compaction, checkpoints and vacuum of every table.
"""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

from orchestration.partitions import DAILY

INGEST_JOB = "ingest_job"
DAILY_JOB = "daily_job"
MAINTENANCE_JOB = "maintenance_job"

ingest_job = define_asset_job(
    INGEST_JOB,
    selection=AssetSelection.groups("bronze")
    | AssetSelection.assets(["silver", "customers"], ["silver", "products"])
    | AssetSelection.assets(["quarantine", "customers"], ["quarantine", "products"]),
    description="Kafka → bronze (exactly once) for every topic, then the silver dimension tables.",
)

daily_job = define_asset_job(
    DAILY_JOB,
    selection=AssetSelection.assets(
        ["silver", "orders"], ["quarantine", "orders"], ["silver", "clicks"], ["quarantine", "clicks"]
    )
    | AssetSelection.groups("gold"),
    partitions_def=DAILY,
    description="Silver events and gold tables for the selected day(s); replaces those partitions.",
)

maintenance_job = define_asset_job(
    MAINTENANCE_JOB,
    selection=AssetSelection.groups("maintenance"),
    description="Compacts small files, writes checkpoints and vacuums every lake table.",
)

JOBS = [ingest_job, daily_job, maintenance_job]

"""Schedules: lake maintenance nightly at 02:30 UTC, on by default (``make dagster`` runs the daemon).

Compaction and vacuum are the lake's housekeeping: run at night they keep readers off thousands of
small files without competing with daytime ingestion.

Ingestion is started by ``kafka_lag_sensor`` when records wait (``orchestration/sensors.py``) and the
daily assets follow by declarative automation, so neither needs a schedule any more.
"""

from __future__ import annotations

from dagster import DefaultScheduleStatus, ScheduleDefinition

from orchestration.jobs import maintenance_job

maintenance_schedule = ScheduleDefinition(
    name="maintenance_nightly",
    job=maintenance_job,
    cron_schedule="30 2 * * *",
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.RUNNING,
)

SCHEDULES = [maintenance_schedule]

"""Schedules: ingest every 5 minutes, maintenance nightly (both off until turned on in the UI)."""

from __future__ import annotations

from dagster import DefaultScheduleStatus, ScheduleDefinition

from orchestration.jobs import ingest_job, maintenance_job

ingest_schedule = ScheduleDefinition(
    name="ingest_every_5_minutes",
    job=ingest_job,
    cron_schedule="*/5 * * * *",
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.STOPPED,
)

maintenance_schedule = ScheduleDefinition(
    name="maintenance_nightly",
    job=maintenance_job,
    cron_schedule="30 2 * * *",
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.STOPPED,
)

SCHEDULES = [ingest_schedule, maintenance_schedule]

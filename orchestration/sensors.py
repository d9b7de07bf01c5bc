"""Bronze → daily: when bronze receives events, recompute exactly the affected days.

The sensor reads the ``event_dates`` each bronze materialization recorded, derives the affected
daily partitions (late events included) and requests one ``daily_job`` run per contiguous range.
"""

from __future__ import annotations

from dagster import (
    DefaultSensorStatus,
    MultiAssetSensorEvaluationContext,
    RunRequest,
    multi_asset_sensor,
)

from assets.bronze.assets import BRONZE_TOPICS, bronze_key
from orchestration.jobs import daily_job
from orchestration.partitions import affected_days, contiguous_ranges

RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def range_tags(start: str, end: str) -> dict[str, str]:
    return {RANGE_START_TAG: start, RANGE_END_TAG: end}


@multi_asset_sensor(
    monitored_assets=[bronze_key(t) for t in BRONZE_TOPICS],
    job=daily_job,
    name="bronze_to_daily",
    minimum_interval_seconds=60,
    default_status=DefaultSensorStatus.STOPPED,
)
def bronze_to_daily(context: MultiAssetSensorEvaluationContext):
    dates: dict[str, set[str]] = {}
    cursor_ids: list[int] = []
    for key in context.asset_keys:
        records = context.materialization_records_for_key(asset_key=key, limit=1000)
        for record in records:
            mat = record.event_log_entry.asset_materialization
            entry = mat.metadata.get("event_dates") if mat is not None else None
            if entry is not None:
                dates.setdefault(key.path[-1], set()).update(entry.value)
            cursor_ids.append(record.storage_id)
        if records:
            context.advance_cursor({key: records[-1]})
    for start, end in contiguous_ranges(affected_days({k: sorted(v) for k, v in dates.items()})):
        yield RunRequest(run_key=f"{start}:{end}:{max(cursor_ids, default=0)}", tags=range_tags(start, end))

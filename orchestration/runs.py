"""How in-process Dagster runs are tagged and read back, the same way wherever runs are made.

The pipeline (``orchestration.pipeline``) and the lake replay (``orchestration.replay.lake``) both run
jobs in process: a run over several days carries Dagster's partition-range tags, and each reports the
metadata of every table it wrote. These helpers sit below both (and below the sensors and the job
list), so the replay, which is one of the jobs, imports neither the pipeline nor the sensors.
"""

from __future__ import annotations

from typing import Any

from dagster import ExecuteInProcessResult

RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def range_tags(start: str, end: str) -> dict[str, str]:
    """Tags of one run over a range of daily partitions (``orchestration.pipeline.run_daily``)."""
    return {RANGE_START_TAG: start, RANGE_END_TAG: end}


def materializations(result: ExecuteInProcessResult) -> dict[str, dict[str, Any]]:
    """Asset key (``a/b``) -> its materialization's metadata values, for every asset the run wrote."""
    out: dict[str, dict[str, Any]] = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization  # type: ignore[union-attr]
        out[mat.asset_key.to_user_string()] = {k: v.value for k, v in mat.metadata.items()}
    return out

"""The Dagster code location of the lakehouse (``dagster dev`` / workspace.yaml load this module).

Resources are built from ``Settings`` (STREAMHOUSE_* environment / streamhouse.yaml); see
``orchestration/resources.py``.
"""

from __future__ import annotations

from typing import Any

from dagster import Definitions

from assets.bronze.assets import BRONZE_ASSETS
from assets.gold.assets import GOLD_ASSETS
from assets.maintenance import lake_maintenance
from assets.silver.assets import DIMENSION_ASSETS, SILVER_ASSETS
from orchestration.jobs import JOBS
from orchestration.resources import build_resources
from orchestration.schedules import SCHEDULES
from orchestration.sensors import bronze_to_daily
from orchestration.settings import Settings, load_settings

ALL_ASSETS = [*BRONZE_ASSETS, *DIMENSION_ASSETS, *SILVER_ASSETS, *GOLD_ASSETS, lake_maintenance]


def build_definitions(settings: Settings, **resource_overrides: Any) -> Definitions:
    """Definitions with resources from ``settings`` (overrides: bootstrap_servers, topic_prefix, spark)."""
    return Definitions(
        assets=ALL_ASSETS,
        jobs=JOBS,
        schedules=SCHEDULES,
        sensors=[bronze_to_daily],
        resources=build_resources(settings, **resource_overrides),
    )


defs = build_definitions(load_settings())

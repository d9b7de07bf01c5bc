"""The Dagster code location of the lakehouse (``dagster dev`` / workspace.yaml load this module).

One lineage graph: Kafka topics → edge apps → their output topics → bronze → silver → gold, plus
maintenance. Topics and edge apps are observed (``assets/kafka``, ``assets/edge_apps``); ingestion is
started by the Kafka lag sensor, the daily assets follow by declarative automation, maintenance runs
on a schedule. Resources are built from ``Settings`` (STREAMHOUSE_* environment / streamhouse.yaml);
see ``orchestration/resources.py``. The assets are listed in ``orchestration/all_assets.py``.
"""

from __future__ import annotations

from typing import Any

from dagster import Definitions, ExecutorDefinition, in_process_executor, multiprocess_executor

from assets.partitions import PARTITION_START
from orchestration.all_assets import ALL_ASSETS
from orchestration.jobs import JOBS
from orchestration.resources import build_resources
from orchestration.schedules import SCHEDULES
from orchestration.sensors import build_sensors
from orchestration.settings import Settings, SettingsError, load_settings
from quality.checks import QUALITY_CHECKS


def _guard_pyspark_connect_import() -> None:
    """Keep ``import pyspark.sql.connect`` from ending a Dagster run worker with ``SystemExit: 0``.

    Run workers are spawned from ``python -m dagster ...``, whose ``__main__`` has neither ``__file__``
    nor ``__spec__``; pyspark.sql.connect takes that for its own doctest run and calls ``sys.exit(0)``
    when a Spark Connect dependency is missing (great_expectations imports it, so every quality check
    of a run launched from the UI failed). Imported here once as an interactive session would; when a
    dependency is missing the module is marked absent, so later imports raise ImportError, as they do
    in any other process.
    """
    import sys

    main = sys.modules.get("__main__")
    bare = main is not None and getattr(main, "__spec__", None) is None and not hasattr(main, "__file__")
    if not bare or hasattr(sys, "ps1") or "pyspark.sql.connect" in sys.modules:
        return
    sys.ps1 = ""
    try:
        import pyspark.sql.connect  # noqa: F401
    except ImportError:
        sys.modules["pyspark.sql.connect"] = None  # type: ignore[assignment]
    finally:
        del sys.ps1


_guard_pyspark_connect_import()


def check_partitions_start(settings: Settings) -> None:
    """The daily partitions were built when ``assets.partitions`` was imported, from the same sources
    as the settings; settings made another way (a different environment, a Settings object) must not
    silently disagree with the partitions the UI shows. Unset, the partitions chose their own start
    (``assets.partitions.default_start``): nothing to disagree with."""
    if settings.partitions_start is not None and settings.partitions_start.isoformat() != PARTITION_START:
        raise SettingsError(
            f"partitions_start is {settings.partitions_start} but the daily partitions start on "
            f"{PARTITION_START} (set STREAMHOUSE_PARTITIONS_START before the definitions are imported)"
        )


def check_pipeline_setting(settings: Settings) -> None:
    """The assets were built when their modules were imported, from the pipeline ``STREAMHOUSE_PIPELINE``
    or streamhouse.yaml names; settings made another way must not name a different one."""
    from assets.pipeline.active import DEFAULT_PIPELINE, pipeline_folder
    from edge.home import resolve_path

    wanted = resolve_path(settings.pipeline) if settings.pipeline is not None else DEFAULT_PIPELINE
    if wanted != pipeline_folder():
        raise SettingsError(
            f"pipeline is {wanted} but the assets were built from {pipeline_folder()} "
            "(set STREAMHOUSE_PIPELINE before the definitions are imported)"
        )


def executor_for(settings: Settings) -> ExecutorDefinition:
    """The executor of every job (``dagster_executor``): runs from the UI, sensors and schedules.

    ``in_process`` (default): the steps of a run share one process, so one Spark session and JVM per
    run, as in ``streamhouse demo``. ``multiprocess``: one process (and Spark driver) per step, steps in
    parallel; worth it only when ``spark_master`` is a remote cluster that does the work.
    """
    return multiprocess_executor if settings.dagster_executor == "multiprocess" else in_process_executor


def build_definitions(settings: Settings, **resource_overrides: Any) -> Definitions:
    """Definitions with resources from ``settings`` (overrides: bootstrap_servers, topic_prefix, spark)."""
    check_partitions_start(settings)
    check_pipeline_setting(settings)
    return Definitions(
        executor=executor_for(settings),
        assets=ALL_ASSETS,
        asset_checks=QUALITY_CHECKS,
        jobs=JOBS,
        schedules=SCHEDULES,
        sensors=build_sensors(min_records=settings.lag_min_records, max_wait_s=settings.lag_max_wait_s),
        resources=build_resources(settings, **resource_overrides),
    )


defs = build_definitions(load_settings())

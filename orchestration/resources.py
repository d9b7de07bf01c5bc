"""Dagster resources of the lakehouse (Kafka, the lake location, Spark, quality), built from ``Settings``.

The resource classes live in ``assets/resources.py`` (the assets name them, and ``assets/`` must not
import this layer); this module is where settings meet them. The classes are re-exported for the
callers that know them from here.
"""

from __future__ import annotations

from typing import Any

from dagster_pyspark import PySparkResource

from assets.resources import (
    LAKEHOUSE_SPARK_DEFAULTS,
    ExistingSparkResource,
    KafkaResource,
    LakehouseSparkResource,
    LakeResource,
    ResourceError,
)
from orchestration.settings import Settings

__all__ = [
    "LAKEHOUSE_SPARK_DEFAULTS",
    "ExistingSparkResource",
    "KafkaResource",
    "LakeResource",
    "LakehouseSparkResource",
    "ResourceError",
    "build_resources",
    "spark_config_from_settings",
]


def spark_config_from_settings(settings: Settings) -> dict[str, str]:
    return {**LAKEHOUSE_SPARK_DEFAULTS, "spark.master": settings.spark_master, **settings.spark_conf}


def build_resources(
    settings: Settings,
    *,
    bootstrap_servers: str | None = None,
    topic_prefix: str = "",
    spark: PySparkResource | None = None,
    quality: Any = None,
) -> dict[str, Any]:
    """The resource dict every lakehouse asset needs: ``kafka``, ``lake`` and ``pyspark``; and the
    quality checks' ``quality`` (Data Docs under ``state_dir/quality``)."""
    from quality.checks import QualityResource

    return {
        "kafka": KafkaResource(
            bootstrap_servers=bootstrap_servers or settings.bootstrap_servers or "",
            profile=settings.broker_profile.value,
            extra=dict(settings.kafka),
            topic_prefix=topic_prefix,
            state_dir=str(settings.state_dir),
        ),
        "lake": LakeResource(lake_root=str(settings.lake_root)),
        "quality": quality or QualityResource(docs_dir=str(settings.state_dir / "quality")),
        "pyspark": spark
        or LakehouseSparkResource(
            spark_config=spark_config_from_settings(settings),
            delta_jars_available=settings.native_delta(),
            delta_jars=settings.spark_delta_jars(),
        ),
    }

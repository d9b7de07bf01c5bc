"""Lakehouse fixtures: Dagster definitions wired to the shared broker, the shared Spark session and a
fresh lake per test (unique topic prefix, so tests never see each other's records)."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from dagster import DagsterInstance, Definitions

from edge.kafka import KafkaClientConfig

warnings.filterwarnings("ignore", message=".*is currently in beta.*")
warnings.filterwarnings("ignore", message=".*is superseded.*")


@dataclass
class Lakehouse:
    defs: Definitions
    client: KafkaClientConfig
    prefix: str
    lake: Path
    instance: DagsterInstance
    resources: dict

    def uri(self, layer: str, name: str) -> str:
        return f"{self.lake}/{layer}/{name}"

    def topic(self, logical: str) -> str:
        return f"{self.prefix}{logical}"


@pytest.fixture
def lakehouse(kafka_broker: KafkaClientConfig, spark, tmp_lake: Path) -> Callable[..., Lakehouse]:
    from assets.resources import ExistingSparkResource
    from orchestration.definitions import build_definitions
    from orchestration.resources import build_resources
    from orchestration.settings import Settings
    from quality.checks import QualityResource

    def _make(**resource_overrides) -> Lakehouse:
        prefix = f"lh{uuid.uuid4().hex[:8]}."
        settings = Settings(
            broker_profile=kafka_broker.profile,
            bootstrap_servers=kafka_broker.bootstrap_servers,
            lake_root=tmp_lake,
        )
        # the test's own GX project: the default (state_dir/quality, under the checkout) is shared with
        # the Parquet pass that `make test` runs beside the main one, and GX's file stores are not safe
        # to write from two processes at once (a suite read back as None while the other rewrote it)
        quality = QualityResource(docs_dir=str(tmp_lake.parent / "quality"))
        overrides = {
            "topic_prefix": prefix,
            "spark": ExistingSparkResource(),
            "quality": quality,
            **resource_overrides,
        }
        defs = build_definitions(settings, **overrides)
        resources = build_resources(settings, **overrides)
        return Lakehouse(defs, kafka_broker, prefix, tmp_lake, DagsterInstance.ephemeral(), resources)

    return _make

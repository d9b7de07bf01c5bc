"""Quality fixtures: Dagster definitions on the shared broker and Spark session, a fresh lake and state
dir per test, and the freshness reference time pinned right after the sample data."""

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
class QualityLake:
    defs: Definitions
    client: KafkaClientConfig
    prefix: str
    lake: Path
    state: Path
    instance: DagsterInstance

    def uri(self, layer: str, name: str) -> str:
        return f"{self.lake}/{layer}/{name}"

    @property
    def docs(self) -> Path:
        return self.state / "quality"


@pytest.fixture
def quality_lake(kafka_broker: KafkaClientConfig, spark, tmp_lake: Path, tmp_path: Path) -> Callable:
    from assets.resources import ExistingSparkResource
    from orchestration.definitions import build_definitions
    from orchestration.settings import Settings
    from quality.checks import QualityResource

    def _make(as_of: str, data_docs: bool = True) -> QualityLake:
        prefix = f"q{uuid.uuid4().hex[:8]}."
        state = tmp_path / "state"
        settings = Settings(
            broker_profile=kafka_broker.profile,
            bootstrap_servers=kafka_broker.bootstrap_servers,
            lake_root=tmp_lake,
            state_dir=state,
        )
        quality = QualityResource(docs_dir=str(state / "quality"), as_of=as_of, data_docs=data_docs)
        defs = build_definitions(
            settings, topic_prefix=prefix, spark=ExistingSparkResource(), quality=quality
        )
        return QualityLake(defs, kafka_broker, prefix, tmp_lake, state, DagsterInstance.ephemeral())

    return _make

"""The environment a user's own shell has when a test runs `streamhouse` as a subprocess on the session
broker: a lake, Dagster instance and state of its own, and no pipeline named (each command says)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from edge.kafka import KafkaClientConfig


@pytest.fixture
def user_env(kafka_broker: KafkaClientConfig, tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "STREAMHOUSE_LAKE_ROOT": str(tmp_path / "lake"),
        "STREAMHOUSE_DAGSTER_HOME": str(tmp_path / "dagster"),
        # its own Great Expectations project and demo lock: never the checkout's, which other passes use
        "STREAMHOUSE_STATE_DIR": str(tmp_path / "state"),
        "STREAMHOUSE_BOOTSTRAP_SERVERS": kafka_broker.bootstrap_servers,
        "STREAMHOUSE_BROKER_PROFILE": kafka_broker.profile.value,
    }
    env.pop("STREAMHOUSE_PIPELINE", None)
    return env

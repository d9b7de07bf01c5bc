from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from edge.kafka import KafkaClientConfig
from tests.edge.runtime.harness import Instance


@pytest.fixture
def spawn(kafka_broker: KafkaClientConfig, tmp_path: Path) -> Iterator[Callable[..., Instance]]:
    """``spawn(app_id, in_topic, out_topic, name="a", **config)`` starts an instance; all stop at teardown."""
    started: list[Instance] = []

    def _spawn(
        app_id: str,
        in_topic: str,
        out_topic: str,
        *,
        name: str = "a",
        attr: str = "counts",
        state_dir: Path | None = None,
        **config: object,
    ) -> Instance:
        config = {k.replace("_", "."): v for k, v in config.items()}
        config.setdefault("commit.interval.ms", 200)
        inst = Instance(
            kafka_broker,
            app_id=app_id,
            state_dir=state_dir or tmp_path / f"state-{name}",
            in_topic=in_topic,
            out_topic=out_topic,
            attr=attr,
            config=config,
            log_dir=tmp_path,
            name=name,
        )
        started.append(inst)
        return inst

    yield _spawn
    for inst in started:
        inst.stop()

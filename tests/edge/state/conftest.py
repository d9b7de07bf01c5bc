"""Fixtures for state store tests: contexts, a recording changelog sink, a store factory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from edge.serde import Serde, Serdes
from edge.state import StoreContext, StoreMetrics, changelog_topic_name, key_value_store_builder
from edge.state.metered import MeteredKeyValueStore

APP = "app"
STRING = Serdes.string()


class RecordingSink:
    """ChangelogSink that keeps every record in memory."""

    def __init__(self) -> None:
        self.records: list[tuple[str, int, bytes, bytes | None, int]] = []

    def send(self, topic: str, partition: int, key: bytes, value: bytes | None, timestamp: int) -> None:
        self.records.append((topic, partition, key, value, timestamp))

    def latest(self) -> dict[bytes, bytes | None]:
        out: dict[bytes, bytes | None] = {}
        for _, _, k, v, _ in self.records:
            out[k] = v
        return out


class Clock:
    """Settable record-timestamp accessor, like the one a StreamTask provides."""

    def __init__(self, now: int = 1000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=[True, False], ids=["rocksdb", "memory"])
def persistent(request: pytest.FixtureRequest) -> bool:
    return request.param


StoreFactory = Callable[..., MeteredKeyValueStore]


@pytest.fixture
def make_store(tmp_path: Path, sink: RecordingSink, clock: Clock):
    opened: list[MeteredKeyValueStore] = []

    def factory(
        name: str = "store",
        *,
        persistent: bool = True,
        caching: bool = True,
        logging: bool = True,
        cache_max_bytes: int = 1 << 20,
        key_serde: Serde = STRING,
        value_serde: Serde = STRING,
        task_id: str = "0_0",
        partition: int = 0,
        metrics: StoreMetrics | None = None,
        state_dir: Path | None = None,
    ) -> MeteredKeyValueStore:
        builder = key_value_store_builder(
            name, key_serde, value_serde, persistent=persistent, logging=logging, caching=caching
        )
        store = builder.build()
        ctx = StoreContext(
            application_id=APP,
            task_id=task_id,
            partition=partition,
            state_dir=state_dir or tmp_path,
            changelog_topic=changelog_topic_name(APP, name) if logging else None,
            changelog_sink=sink if logging else None,
            cache_max_bytes=cache_max_bytes if caching else 0,
            metrics=metrics,
            record_timestamp=clock,
        )
        store.init(ctx)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        if store.is_open:
            store.close()

"""The stream-stream join store's in-memory index (``edge.state.join_window``): a fetch answered from the
index must equal the same fetch answered by the store below it, whatever was written, evicted, expired,
persisted, restored or reopened."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from edge.serde import Serdes
from edge.state import StoreContext, window_store_builder
from edge.state.join_window import IndexedJoinWindowStore

STRING = Serdes.string()


class Sink:
    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None, int]] = []

    def send(self, topic: str, partition: int, key: bytes, value: bytes | None, timestamp: int) -> None:
        self.records.append((key, value, timestamp))


def _store(state_dir: Path, *, budget: int | None, retention: int = 300, sink: Sink | None = None):
    store = window_store_builder(
        "join-this", STRING, STRING, window_size_ms=50, retention_ms=retention, retain_duplicates=True
    ).build()
    assert isinstance(store, IndexedJoinWindowStore)
    if budget is not None:
        store = IndexedJoinWindowStore(
            store.wrapped,
            STRING,
            STRING,
            window_size_ms=50,
            retention_ms=retention,
            retain_duplicates=True,
            index_max_bytes=budget,
        )
    store.init(
        StoreContext(
            "app",
            "0_0",
            0,
            state_dir,
            changelog_topic="app-join-this-changelog",
            changelog_sink=sink or Sink(),
        )
    )
    store.inner_most().defer_writes = True  # as the runtime: RocksDB gets the writes after each commit
    return store


def _fetches(store: IndexedJoinWindowStore, key: str, t: int) -> list:
    return store.fetch_list(key, t - 50, t + 50)


@pytest.mark.parametrize(
    ("budget", "min_hits", "key_count"),
    [
        (1 << 20, 2_000, 12),
        (30_000, 1_000, 12),
        (1_000, 0, 12),
        (1 << 20, 2_000, 1_500),
        (30_000, 1_000, 1_500),
    ],
)
def test_fetches_equal_the_stores_own_under_random_writes(
    tmp_path: Path, budget: int, min_hits: int, key_count: int
) -> None:
    """Out-of-order times, duplicate (key, time) pairs, expiry by retention and eviction by budget: the
    indexed store answers every fetch as the store does with the index off. With 12 keys most keys hold
    several records; with 1,500 most hold one (the index keeps those as a bare entry, not a list) and
    keys go from one record to several and back."""
    rng = random.Random(budget + key_count)
    indexed = _store(tmp_path / "indexed", budget=budget)
    plain = _store(tmp_path / "plain", budget=0)
    keys = [f"k{i}" for i in range(key_count)]
    t = 1_000
    for step in range(4_000):
        t += rng.choice([0, 1, 2, 5])
        ts = t - rng.choice([0, 0, 0, 3, 40, 120, 400])  # some late, some behind the retention
        key = rng.choice(keys)
        value = f"v{step}"
        for store in (indexed, plain):
            store.put(key, value, ts, ts)
        probe = rng.choice(keys)
        at = t - rng.choice([0, 10, 60, 200])
        assert _fetches(indexed, probe, at) == _fetches(plain, probe, at), (step, probe, at)
        with indexed.fetch(probe, at - 50, at + 50) as it:
            assert list(it) == _fetches(plain, probe, at)
        if step % 500 == 499:
            for store in (indexed, plain):
                store.flush()
                store.inner_most().persist()
    assert indexed.index_hits >= min_hits, (indexed.index_hits, indexed.index_misses)
    assert indexed.indexed_bytes <= budget
    if budget <= 1_000:
        assert indexed.index_misses > 100  # the budget holds too little: fetches fall back to RocksDB
    indexed.close()
    plain.close()


def test_a_reopened_store_reads_what_it_held_before_from_rocksdb(tmp_path: Path) -> None:
    """The index starts empty: what an earlier run (or a restore) wrote is fetched from the store, and
    the index takes over past the newest segment on disk (the store cannot know its newest time)."""
    store = _store(tmp_path, budget=None)
    for i in range(100):
        store.put("a", f"old{i}", 1_000 + i, 1_000 + i)
    store.flush()
    store.inner_most().persist()
    store.close()

    store = _store(tmp_path, budget=None)
    segment = store.inner_most().segment_interval_ms
    assert store.horizon == segment  # records 1000..1099 are in segment 0
    misses = store.index_misses
    assert [v for _, v in _fetches(store, "a", 1_090)] == [f"old{i}" for i in range(40, 100)]
    store.put("a", "new", 1_120, 1_120)
    assert [v for _, v in store.fetch_list("a", 1_099, 1_200)] == ["old99", "new"]
    assert store.index_misses == misses + 2 and store.index_hits == 0
    store.put("a", "later", segment + 10, segment + 10)
    assert store.fetch_list("a", segment, segment + 100) == [(segment + 10, "later")]
    assert store.index_hits == 1
    store.close()


def test_records_restored_into_an_open_store_are_read_from_it(tmp_path: Path) -> None:
    sink = Sink()
    source = _store(tmp_path / "source", budget=None, sink=sink)
    for i in range(20):
        source.put("a", f"v{i}", 2_000 + i, 2_000 + i)
    source.flush()
    source.close()

    target = _store(tmp_path / "target", budget=None)
    target.put("a", "before", 1_990, 1_990)
    target.restore_batch([(k, v) for k, v, _ in sink.records])
    assert target.horizon == 2_020
    assert [v for _, v in target.fetch_list("a", 1_990, 2_100)] == ["before"] + [f"v{i}" for i in range(20)]
    target.close()


def test_a_dirty_close_forgets_the_indexed_writes(tmp_path: Path) -> None:
    store = _store(tmp_path, budget=None)
    store.put("a", "committed", 1_000, 1_000)
    store.flush()
    store.inner_most().persist()
    store.put("a", "aborted", 1_010, 1_010)
    store.discard_unflushed()
    assert store.indexed_records == 0
    assert store.horizon == store.inner_most().segment_interval_ms  # past every segment on disk
    store.inner_most().discard_unflushed()
    store.close()
    store = _store(tmp_path, budget=None)
    assert store.fetch_list("a", 900, 1_100) == [(1_000, "committed")]
    store.close()


def test_a_zero_budget_turns_the_index_off(tmp_path: Path) -> None:
    store = _store(tmp_path, budget=0)
    store.put("a", "x", 1_000, 1_000)
    assert store.fetch_list("a", 900, 1_100) == [(1_000, "x")]
    assert store.index_hits == 0 and store.indexed_records == 0
    store.close()

"""Window and session stores: Kafka's key schemas, segments and retention, cache, changelog, restore."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from edge.serde import Serdes
from edge.serde.windowed import (
    SessionWindow,
    SessionWindowedSerde,
    TimeWindow,
    TimeWindowedSerde,
    Windowed,
    WindowedSerdes,
)
from edge.state import StoreContext, session_store_builder, window_store_builder
from edge.state.segments import SegmentedBytesStore

STRING, LONG = Serdes.string(), Serdes.long()


class Sink:
    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None, int]] = []

    def send(self, topic: str, partition: int, key: bytes, value: bytes | None, timestamp: int) -> None:
        self.records.append((key, value, timestamp))


def _context(tmp_path: Path, sink: Sink, name: str, now: list[int]) -> StoreContext:
    return StoreContext(
        "app",
        "0_0",
        0,
        tmp_path,
        changelog_topic=f"app-{name}-changelog",
        changelog_sink=sink,
        record_timestamp=lambda: now[0],
    )


def _window_store(tmp_path, sink, *, retention=1000, size=10, caching=False, persistent=True, dups=False):
    builder = window_store_builder(
        "ws",
        STRING,
        LONG,
        window_size_ms=size,
        retention_ms=retention,
        retain_duplicates=dups,
        persistent=persistent,
        caching=caching,
    )
    store = builder.build()
    now = [7]
    store.init(_context(tmp_path, sink, "ws", now))
    return store, now


def _session_store(tmp_path, sink, *, retention=1000, caching=False, persistent=True):
    store = session_store_builder(
        "ss", STRING, LONG, retention_ms=retention, persistent=persistent, caching=caching
    ).build()
    now = [7]
    store.init(_context(tmp_path, sink, "ss", now))
    return store, now


def test_windowed_serdes_write_kafka_bytes() -> None:
    key = Windowed("k", TimeWindow(100, 110))
    raw = TimeWindowedSerde(STRING, 10).serialize("t", key)
    assert raw == b"k" + struct.pack(">q", 100)
    assert TimeWindowedSerde(STRING, 10).deserialize("t", raw) == key
    assert WindowedSerdes.time_windowed_serde_from(STRING, 10).deserialize("t", raw) == key
    session = Windowed("k", SessionWindow(5, 9))
    raw = SessionWindowedSerde(STRING).serialize("t", session)
    assert raw == b"k" + struct.pack(">qq", 9, 5)
    assert SessionWindowedSerde(STRING).deserialize("t", raw) == session
    assert str(key) == "[k@100/110]"


@pytest.mark.parametrize("persistent", [True, False])
@pytest.mark.parametrize("caching", [True, False])
def test_window_store_fetches_by_key_and_time(tmp_path, persistent, caching) -> None:
    store, _ = _window_store(tmp_path, Sink(), caching=caching, persistent=persistent)
    store.put("a", 1, 0)
    store.put("a", 2, 10)
    store.put("b", 3, 0)
    store.put("ab", 4, 10)  # shares a's key-bytes prefix: must not leak into fetch("a", ...)
    assert store.fetch("a", 10) == 2
    assert store.fetch("a", 20) is None
    with store.fetch("a", 0, 100) as it:
        assert list(it) == [(0, 1), (10, 2)]
    assert list(store.fetch("a", 5, 100)) == [(10, 2)]
    assert list(store.backward_fetch("a", 0, 100)) == [(10, 2), (0, 1)]
    assert [(w.key, w.window.start, w.window.end, v) for w, v in store.fetch("a", "ab", 0, 10)] == [
        ("a", 0, 10, 1),
        ("a", 10, 20, 2),
        ("ab", 10, 20, 4),
    ]
    assert [(w.key, w.window.start) for w, _ in store.fetch_all(10, 10)] == [("a", 10), ("ab", 10)]
    store.put("a", None, 0)  # delete
    assert list(store.fetch("a", 0, 100)) == [(10, 2)]
    store.close()


def test_window_changelog_keys_are_kafkas_and_restore_rebuilds(tmp_path) -> None:
    sink = Sink()
    store, now = _window_store(tmp_path, sink)
    now[0] = 42
    store.put("a", 1, 100)
    store.flush()
    assert sink.records == [(b"a" + struct.pack(">qi", 100, 0), struct.pack(">q", 1), 42)]
    store.close()

    other = tmp_path / "other"
    restored, _ = _window_store(other, Sink())
    restored.restore_batch([(k, v) for k, v, _ in sink.records])
    assert restored.fetch("a", 100) == 1
    restored.close()


def test_retain_duplicates_keeps_every_put_with_its_own_seqnum(tmp_path) -> None:
    sink = Sink()
    store, _ = _window_store(tmp_path, sink, dups=True)
    store.put("k", 1, 5)
    store.put("k", 2, 5)
    store.put("k", None, 5)  # ignored with duplicates, as in Kafka
    assert list(store.fetch("k", 0, 10)) == [(5, 1), (5, 2)]
    store.flush()
    assert [struct.unpack(">qi", k[-12:]) for k, _, _ in sink.records] == [(5, 1), (5, 2)]
    store.close()


@pytest.mark.parametrize("persistent", [True, False])
def test_retention_drops_whole_segments_and_hides_expired_records(tmp_path, persistent) -> None:
    # retention 200 000 ms -> segment interval 100 000 ms (Kafka: max(retention / 2, 60 000))
    store, _ = _window_store(tmp_path, Sink(), retention=200_000, size=1000, persistent=persistent)
    segmented = store.inner_most()
    assert isinstance(segmented, SegmentedBytesStore)
    assert segmented.segment_interval_ms == 100_000
    store.put("k", 1, 0)
    store.put("k", 2, 150_000)
    store.flush()
    assert segmented.segment_ids == [0, 1]
    if persistent:
        assert segmented.store_path().name == "ws"  # one RocksDB holds every segment
    store.put("k", 3, 250_000)  # stream time 250 000: records older than 50 001 expire
    assert store.fetch("k", 0) is None
    assert list(store.fetch("k", 0, 300_000)) == [(150_000, 2), (250_000, 3)]
    store.put("k", 4, 310_000)  # segment 0 ([0, 100 000)) now lies wholly before 110 000: dropped
    assert segmented.segment_ids == [1, 2, 3]
    with segmented._shared.all() as it:  # segment 0 was dropped whole: no key under its prefix
        assert {k[:8] for k, _ in it} == {struct.pack(">q", s) for s in (1, 2, 3)}
    store.put("k", 5, 1000)  # into an expired segment: skipped, counted
    assert segmented.expired_records == 1
    assert store.fetch("k", 1000) is None
    store.close()


def test_persistent_segments_reopen_with_their_data(tmp_path) -> None:
    store, _ = _window_store(tmp_path, Sink(), retention=200_000, size=1000)
    store.put("k", 1, 0)
    store.put("k", 2, 150_000)
    store.close()
    again, _ = _window_store(tmp_path, Sink(), retention=200_000, size=1000)
    assert list(again.fetch("k", 0, 200_000)) == [(0, 1), (150_000, 2)]
    again.close()


def test_cached_window_store_forwards_windowed_keys_on_flush(tmp_path) -> None:
    store, now = _window_store(tmp_path, Sink(), caching=True)
    seen = []
    assert store.set_flush_listener(lambda k, new, old, ts: seen.append((k, new, old, ts)), True) is True
    now[0] = 3
    store.put("a", 1, 0)
    now[0] = 4
    store.put("a", 2, 0)  # collapses with the first write
    assert seen == []
    store.flush()
    assert seen == [(Windowed("a", TimeWindow(0, 10)), 2, None, 4)]
    store.put("a", 3, 0)
    store.flush()
    assert seen[-1] == (Windowed("a", TimeWindow(0, 10)), 3, 2, 4)
    store.close()


@pytest.mark.parametrize("caching", [True, False])
def test_session_store_finds_overlapping_sessions(tmp_path, caching) -> None:
    sink = Sink()
    store, _ = _session_store(tmp_path, sink, caching=caching)
    store.put(Windowed("a", SessionWindow(0, 5)), 1)
    store.put(Windowed("a", SessionWindow(10, 20)), 2)
    store.put(Windowed("a", SessionWindow(30, 30)), 3)
    store.put(Windowed("b", SessionWindow(3, 4)), 9)
    found = [(w.window.start, w.window.end, v) for w, v in store.find_sessions("a", 5, 25)]
    assert found == [(0, 5, 1), (10, 20, 2)]  # end >= 5 and start <= 25
    assert store.fetch_session("a", 10, 20) == 2
    # a bound below 0 (a record less than one gap after time 0) must not hide sessions
    assert [v for _, v in store.find_sessions("a", -1_000, 7)] == [1]
    assert [w.key for w, _ in store.all()] == ["a", "a", "a", "b"]
    assert [w.key for w, _ in store.find_sessions("a", "b", 0, 100)] == ["a", "a", "a", "b"]
    store.remove(Windowed("a", SessionWindow(10, 20)))
    assert [v for _, v in store.fetch("a")] == [1, 3]
    store.flush()
    key, value, _ = sink.records[-1]
    assert key == b"a" + struct.pack(">qq", 20, 10) and value is None  # Kafka's session key: end, start
    store.close()


def test_builders_declare_windowed_changelog_topics() -> None:
    builder = window_store_builder("w", STRING, LONG, window_size_ms=10, retention_ms=100)
    assert builder.changelog_config == {
        "cleanup.policy": "compact,delete",
        "retention.ms": str(100 + 86_400_000),
    }
    assert builder.with_logging_disabled().changelog_config == {}
    standby = builder.with_caching_disabled().with_logging_disabled().build()
    assert standby.window_size_ms == 10
    from edge.errors import TopologyError

    with pytest.raises(TopologyError, match="retention"):
        window_store_builder("w", STRING, LONG, window_size_ms=100, retention_ms=10)
    with pytest.raises(TopologyError, match="path separators"):
        session_store_builder("a/b", STRING, LONG, retention_ms=10)

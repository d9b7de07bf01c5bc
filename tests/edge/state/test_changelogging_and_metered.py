"""Change-logging layer, metered layer (timestamps, metrics, serde errors) and the builder."""

from __future__ import annotations

import pytest

from edge.errors import SerdeError, StateStoreError, TopologyError
from edge.serde import Serdes
from edge.state import StoreBuilder, StoreContext, StoreMetrics, key_value_store_builder


def test_changelog_receives_puts_and_tombstones_without_cache(make_store, sink, clock) -> None:
    store = make_store(caching=False, partition=4, task_id="0_4")
    clock.now = 77
    store.put("a", "1")
    store.put("a", "2", timestamp=78)
    store.delete("a")
    store.put("b", None, timestamp=79)
    store.put_all([("c", "3"), ("d", None)], timestamp=80)
    assert store.put_if_absent("c", "x") == "3"  # exists: not logged
    assert store.put_if_absent("e", "5", timestamp=81) is None
    assert sink.records == [
        ("app-store-changelog", 4, b"a", b"1", 77),
        ("app-store-changelog", 4, b"a", b"2", 78),
        ("app-store-changelog", 4, b"a", None, 77),
        ("app-store-changelog", 4, b"b", None, 79),
        ("app-store-changelog", 4, b"c", b"3", 80),
        ("app-store-changelog", 4, b"d", None, 80),
        ("app-store-changelog", 4, b"e", b"5", 81),
    ]


def test_changelog_replay_rebuilds_state(make_store, sink) -> None:
    store = make_store("src", persistent=False)
    for i in range(20):
        store.put(f"k{i % 5}", str(i))
    store.delete("k3")
    store.flush()
    replica = make_store("replica", persistent=True, logging=False)
    replica.restore_batch([(k, v) for _, _, k, v, _ in sink.records])
    with store.all() as a, replica.all() as b:
        assert list(a) == list(b)


def test_logging_disabled_sends_nothing(make_store, sink) -> None:
    store = make_store(logging=False, caching=False)
    store.put("a", "1")
    store.delete("a")
    store.flush()
    assert sink.records == []


def test_changelog_topic_without_sink_is_an_error(tmp_path) -> None:
    store = key_value_store_builder("s", Serdes.string(), Serdes.string()).build()
    ctx = StoreContext("app", "0_0", 0, tmp_path, changelog_topic="app-s-changelog", changelog_sink=None)
    with pytest.raises(StateStoreError, match="changelog_sink"):
        store.init(ctx)
    # the failed init released the RocksDB lock
    ok = key_value_store_builder("s", Serdes.string(), Serdes.string()).build()
    ok.init(StoreContext("app", "0_0", 0, tmp_path))
    ok.close()


def test_default_timestamp_comes_from_context_accessor(make_store, sink, clock) -> None:
    store = make_store(caching=False)
    clock.now = 123
    store.put("a", "1")
    clock.now = 456
    store.put("b", "2")
    store.put("c", "3", timestamp=9)
    assert [r[4] for r in sink.records] == [123, 456, 9]


def test_wall_clock_default_timestamp(tmp_path) -> None:
    import time

    store = key_value_store_builder("s", Serdes.string(), Serdes.string(), caching=False).build()
    records = []

    class Sink:
        def send(self, *a):
            records.append(a)

    store.init(StoreContext("app", "0_0", 0, tmp_path, changelog_topic="t", changelog_sink=Sink()))
    before = time.time_ns() // 1_000_000
    store.put("a", "1")
    assert records[0][4] >= before
    store.close()


def test_metrics_counts_and_latency(make_store) -> None:
    metrics = StoreMetrics()
    store = make_store(metrics=metrics)
    store.put("a", "1")
    store.put("b", "2")
    store.get("a")
    store.delete("b")
    store.put_if_absent("c", "3")
    store.put_all([("d", "4")])
    with store.range("a", "z") as it:
        list(it)
    with store.prefix_scan("a") as it:
        list(it)
    with store.all() as it:
        list(it)
    store.flush()
    d = metrics.as_dict()
    assert d["put_count"] == 2 and d["get_count"] == 1 and d["delete_count"] == 1
    assert d["put_if_absent_count"] == 1 and d["put_all_count"] == 1
    assert d["range_count"] == d["prefix_scan_count"] == d["all_count"] == d["flush_count"] == 1
    assert d["put_ns"] > 0 and d["put_avg_ns"] > 0
    assert store.metrics is metrics


def test_no_metrics_means_untimed_methods(make_store) -> None:
    store = make_store()
    assert "put" not in store.__dict__  # class method, no timing wrapper


def test_serde_errors_propagate_from_store(make_store) -> None:
    store = make_store(value_serde=Serdes.int())
    with pytest.raises(SerdeError):
        store.put("a", "not-an-int")
    store.restore_batch([(b"bad", b"\x01")])  # bytes the value serde cannot read
    with pytest.raises(SerdeError):
        store.get("bad")


def test_store_keyed_by_changelog_topic_for_serdes(make_store) -> None:
    seen = []

    class TopicSpy:
        def serialize(self, topic, value):
            seen.append(topic)
            return None if value is None else value.encode()

        def deserialize(self, topic, data):
            return None if data is None else data.decode()

    store = make_store("spy", key_serde=TopicSpy())
    store.put("a", "1")
    assert seen == ["app-spy-changelog"]


def test_builder_is_immutable_and_builds_fresh_stacks() -> None:
    b = key_value_store_builder(
        "s", Serdes.string(), Serdes.long(), changelog_config={"cleanup.policy": "compact"}
    )
    assert isinstance(b, StoreBuilder)
    assert (b.logging_enabled, b.caching_enabled, b.persistent) == (True, True, True)
    nolog = b.with_logging_disabled()
    nocache = b.with_caching_disabled()
    assert nolog.logging_enabled is False and b.logging_enabled is True
    assert nocache.caching_enabled is False and b.caching_enabled is True
    assert nocache.with_caching_enabled().caching_enabled is True
    assert nolog.with_logging_enabled({"x": "y"}).changelog_config == {"x": "y"}
    assert b.changelog_config == {"cleanup.policy": "compact"}
    s1, s2 = b.build(), b.build()
    assert s1 is not s2 and s1.wrapped is not s2.wrapped
    assert repr(s1) == (
        "<MeteredKeyValueStore -> CachingKeyValueStore -> ChangeLoggingKeyValueStore"
        " -> RocksDBKeyValueStore 's'>"
    )
    mem = key_value_store_builder(
        "m", Serdes.string(), Serdes.long(), persistent=False, caching=False, logging=False
    )
    assert repr(mem.build()) == "<MeteredKeyValueStore -> InMemoryKeyValueStore 'm'>"
    assert mem.persistent is False and mem.build().persistent is False


@pytest.mark.parametrize("name", ["", "a/b", "..", "x\\y"])
def test_builder_rejects_bad_names(name) -> None:
    with pytest.raises(TopologyError):
        key_value_store_builder(name, Serdes.string(), Serdes.string())


def test_double_init_rejected(make_store, tmp_path) -> None:
    store = make_store()
    with pytest.raises(StateStoreError):
        store.init(StoreContext("app", "0_0", 0, tmp_path))


def test_reinit_after_close(make_store, tmp_path, sink) -> None:
    store = make_store(persistent=True)
    store.put("a", "1")
    store.close()
    store.init(StoreContext("app", "0_0", 0, tmp_path, changelog_topic="t", changelog_sink=sink))
    assert store.get("a") == "1"
    store.put("b", "2")
    assert store.get("b") == "2"
    store.close()


@pytest.mark.parametrize("persistent", [True, False])
def test_collapsed_changelog_sends_last_value_per_key_on_flush(tmp_path, persistent) -> None:
    from edge.state import changelog_topic_name

    from .conftest import RecordingSink

    sink = RecordingSink()
    store = key_value_store_builder(
        "s", Serdes.string(), Serdes.string(), persistent=persistent, caching=False
    ).build()
    topic = changelog_topic_name("app", "s")
    store.init(
        StoreContext(
            "app", "0_2", 2, tmp_path, changelog_topic=topic, changelog_sink=sink, changelog_collapse=True
        )
    )
    store.put("a", "1", timestamp=10)
    store.put("b", "1", timestamp=11)
    store.put("a", "2", timestamp=12)
    store.delete("b", timestamp=13)
    assert store.put_if_absent("c", "3", timestamp=14) is None
    store.put_all([("d", "4"), ("a", "5")], timestamp=15)
    assert sink.records == []  # nothing before the commit's flush ...
    assert store.get("a") == "5" and store.get("b") is None  # ... but reads see every write
    store.flush()
    assert sorted(sink.records) == [
        (topic, 2, b"a", b"5", 15),
        (topic, 2, b"b", None, 13),
        (topic, 2, b"c", b"3", 14),
        (topic, 2, b"d", b"4", 15),
    ]
    sink.records.clear()
    store.put("e", "6", timestamp=16)
    store.close()  # close sends what is pending, like the record cache flushes on close
    assert sink.records == [(topic, 2, b"e", b"6", 16)]


def test_close_releases_the_inner_store_when_sending_pending_records_fails(tmp_path) -> None:
    class FailingSink:
        def send(self, *a) -> None:
            raise RuntimeError("no transaction open")

    store = key_value_store_builder("s", Serdes.string(), Serdes.string(), caching=False).build()
    store.init(
        StoreContext(
            "app",
            "0_0",
            0,
            tmp_path,
            changelog_topic="t",
            changelog_sink=FailingSink(),
            changelog_collapse=True,
        )
    )
    store.put("a", "1", timestamp=1)
    with pytest.raises(RuntimeError, match="no transaction"):
        store.close()
    assert not store.is_open
    again = key_value_store_builder(
        "s", Serdes.string(), Serdes.string(), caching=False, logging=False
    ).build()
    again.init(StoreContext("app", "0_0", 0, tmp_path))  # the RocksDB lock was released
    again.close()

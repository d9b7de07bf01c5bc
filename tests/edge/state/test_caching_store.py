"""Write-back cache semantics: collapsing, flush listener, eviction, merged scans, write-through mode."""

from __future__ import annotations

import pytest

from edge.serde import Serdes, ValueAndTimestamp, ValueAndTimestampSerde
from edge.state.caching import ENTRY_OVERHEAD, CachingKeyValueStore


def _layer(store, cls):
    layer = store
    while not isinstance(layer, cls):
        layer = layer.wrapped
    return layer


@pytest.mark.parametrize("persistent", [True, False], ids=["rocksdb", "memory"])
def test_repeated_updates_collapse_into_one_changelog_record_and_one_listener_call(
    make_store, sink, clock, persistent
) -> None:
    store = make_store(persistent=persistent, value_serde=Serdes.long())
    calls = []
    assert store.set_flush_listener(lambda *a: calls.append(a)) is True
    for i in range(100):
        clock.now = 1000 + i
        store.put("k", i)
    store.put("other", 7, timestamp=5)
    assert sink.records == [] and calls == []  # nothing leaves the cache before flush
    assert store.get("k") == 99
    store.flush()
    assert [(r[2], r[3], r[4]) for r in sink.records] == [
        (b"k", Serdes.long().serialize("", 99), 1099),
        (b"other", Serdes.long().serialize("", 7), 5),
    ]
    assert calls == [("k", 99, None, 1099), ("other", 7, None, 5)]
    # second round: old value is the previously flushed one
    store.put("k", 100, timestamp=2000)
    store.put("k", 101, timestamp=2001)
    store.flush()
    assert calls[-1] == ("k", 101, 99, 2001)
    assert len(sink.records) == 3
    store.flush()  # nothing dirty: no new records / calls
    assert len(sink.records) == 3 and len(calls) == 3


def test_deletes_flush_as_tombstones_and_listener_sees_old(make_store, sink) -> None:
    store = make_store()
    calls = []
    store.set_flush_listener(lambda *a: calls.append(a))
    store.put("a", "1", timestamp=1)
    store.flush()
    store.delete("a", timestamp=2)
    store.flush()
    assert sink.records[-1] == ("app-store-changelog", 0, b"a", None, 2)
    assert calls[-1] == ("a", None, "1", 2)
    # put + delete of a key that never reached the inner store: nothing written, nothing forwarded
    store.put("b", "x", timestamp=3)
    store.delete("b", timestamp=4)
    n = len(sink.records)
    store.flush()
    assert len(sink.records) == n
    assert calls[-1] == ("a", None, "1", 2)


def test_send_old_values_false(make_store) -> None:
    store = make_store()
    calls = []
    store.set_flush_listener(lambda *a: calls.append(a), send_old_values=False)
    store.put("a", "1", timestamp=1)
    store.flush()
    store.put("a", "2", timestamp=2)
    store.flush()
    assert calls == [("a", "1", None, 1), ("a", "2", None, 2)]


def test_without_listener_cache_still_collapses_writes(make_store, sink) -> None:
    store = make_store()
    for i in range(10):
        store.put("a", str(i))
    store.flush()
    assert len(sink.records) == 1


def test_eviction_on_byte_budget_writes_through_and_calls_listener(make_store, sink) -> None:
    entry = ENTRY_OVERHEAD + 2 + 2  # key "kN" + value "vN"
    store = make_store(cache_max_bytes=entry * 3)
    calls = []
    store.set_flush_listener(lambda *a: calls.append(a))
    cache = _layer(store, CachingKeyValueStore)
    for i in range(3):
        store.put(f"k{i}", f"v{i}", timestamp=i)
    assert cache.cache_entries() == 3 and sink.records == []
    store.put("k3", "v3", timestamp=3)  # over budget: the LRU entry (dirty) forces a flush of dirty ones
    assert cache.cache_size_bytes() <= entry * 3
    assert [r[2] for r in sink.records] == [b"k0", b"k1", b"k2", b"k3"]
    assert [c[0] for c in calls] == ["k0", "k1", "k2", "k3"]
    assert cache.evictions >= 1
    # evicted entries are still readable from the inner store
    assert [store.get(f"k{i}") for i in range(4)] == ["v0", "v1", "v2", "v3"]


def test_lru_order_respects_reads(make_store) -> None:
    entry = ENTRY_OVERHEAD + 2 + 2
    store = make_store(cache_max_bytes=entry * 2)
    cache = _layer(store, CachingKeyValueStore)
    store.put("k0", "v0")
    store.put("k1", "v1")
    store.flush()  # all clean
    store.get("k0")  # k0 becomes most recently used
    store.put("k2", "v2")  # evicts k1 (clean: no write)
    assert set(cache._cache) == {b"k0", b"k2"}


def test_hits_and_misses_counted(make_store) -> None:
    from edge.state import StoreMetrics

    metrics = StoreMetrics()
    store = make_store(metrics=metrics)
    store.put("a", "1")
    store.get("a")
    store.get("zz")
    store.flush()
    d = metrics.as_dict()
    assert d["cache_hits"] == 1 and d["cache_misses"] == 1
    assert d["cache_hit_ratio"] == 0.5


@pytest.mark.parametrize("persistent", [True, False], ids=["rocksdb", "memory"])
def test_range_merges_cache_and_inner_with_deletes(make_store, persistent) -> None:
    store = make_store(persistent=persistent)
    for k in ["a", "c", "e", "g"]:
        store.put(k, "inner-" + k)
    store.flush()  # a c e g now in the inner store (and cached clean)
    store.put("b", "cache-b")  # new in cache only
    store.put("c", "cache-c")  # overrides inner
    store.delete("e")  # deleted in cache, still in inner
    store.put("h", "cache-h")
    expected = [("a", "inner-a"), ("b", "cache-b"), ("c", "cache-c"), ("g", "inner-g"), ("h", "cache-h")]
    with store.all() as it:
        assert list(it) == expected
    with store.range("b", "g") as it:
        assert list(it) == expected[1:4]
    with store.range("d", "f") as it:
        assert list(it) == []
    # after an eviction-free flush the inner store alone gives the same view
    store.flush()
    inner = store.wrapped.wrapped
    with inner.all() as it:
        assert [(k.decode(), v.decode()) for k, v in it] == expected


def test_range_merge_when_cache_only_holds_some_keys(make_store) -> None:
    entry = ENTRY_OVERHEAD + 2 + 2
    store = make_store(cache_max_bytes=entry * 2)
    for i in range(10):
        store.put(f"k{i}", f"v{i}")
    store.delete("k5")
    store.put("k9", "new")
    with store.all() as it:
        got = list(it)
    assert got == [(f"k{i}", "new" if i == 9 else f"v{i}") for i in range(10) if i != 5]
    with store.prefix_scan("k") as it:
        assert list(it) == got


def test_zero_budget_is_write_through_with_synchronous_listener(make_store, sink) -> None:
    store = make_store(cache_max_bytes=0)
    calls = []
    assert store.set_flush_listener(lambda *a: calls.append(a)) is True
    store.put("a", "1", timestamp=1)
    assert calls == [("a", "1", None, 1)]
    assert len(sink.records) == 1
    store.put("a", "2", timestamp=2)
    assert calls[-1] == ("a", "2", "1", 2)
    assert store.put_if_absent("a", "3") == "2"
    assert store.delete("a", timestamp=3) == "2"
    assert calls[-1] == ("a", None, "2", 3)
    assert sink.records[-1][3] is None
    store.delete("never", timestamp=4)  # absent key: nothing forwarded
    assert len(calls) == 3


def test_listener_not_available_without_caching(make_store) -> None:
    store = make_store(caching=False)
    assert store.set_flush_listener(lambda *a: None) is False


def test_flush_listener_with_timestamped_values(make_store) -> None:
    store = make_store(value_serde=ValueAndTimestampSerde(Serdes.long()))
    calls = []
    store.set_flush_listener(lambda *a: calls.append(a))
    store.put("k", ValueAndTimestamp(1, 10), timestamp=10)
    store.put("k", ValueAndTimestamp(2, 11), timestamp=11)
    store.flush()
    assert calls == [("k", ValueAndTimestamp(2, 11), None, 11)]
    assert store.get("k").timestamp == 11


def test_listener_writing_back_into_same_store_is_safe(make_store, sink) -> None:
    store = make_store()
    seen = []

    def listener(key, new, old, ts):
        seen.append(key)
        if key == "a":
            store.put("derived", new, timestamp=ts)  # lands in a fresh dirty set

    store.set_flush_listener(listener)
    store.put("a", "1")
    store.flush()
    assert seen == ["a"]
    store.flush()
    assert seen == ["a", "derived"]


def test_close_flushes_dirty_entries(make_store, sink) -> None:
    store = make_store()
    store.put("a", "1")
    store.close()
    assert [r[2] for r in sink.records] == [b"a"]


def test_restore_batch_bypasses_cache_and_logging(make_store, sink) -> None:
    store = make_store()
    store.put("a", "local")
    store.get("a")
    store.restore_batch([(b"a", b"restored"), (b"b", b"restored-b"), (b"c", None)])
    assert sink.records == []
    assert store.get("a") == "local"  # pending local write is newer
    assert store.get("b") == "restored-b"


def test_listener_rewriting_evicted_key_keeps_it_cached(make_store, sink) -> None:
    entry = ENTRY_OVERHEAD + 2 + 2
    store = make_store(cache_max_bytes=entry * 2)
    rewrites = []

    def listener(key, new, old, ts):
        if key == "k0" and not rewrites:
            rewrites.append(key)
            store.put("k0", "v9", timestamp=ts)

    store.set_flush_listener(listener)
    store.put("k0", "v0")
    store.put("k1", "v1")
    store.put("k2", "v2")  # evicts k0 -> flush -> listener re-dirties k0
    store.flush()
    assert store.get("k0") == "v9"
    assert sink.latest()[b"k0"] == b"v9"

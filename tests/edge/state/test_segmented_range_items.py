"""``range_items`` (the list a window fetch reads per record) equals ``list(range(...))`` of the same
segmented store: same rows, same order, with buffered writes, deletes, expired segments, deferred writes
and persists in between (RocksDB's reused seek iterator must see every persisted write), with and
without a fetch's time bounds -- on RocksDB and in memory."""

from __future__ import annotations

import random

import pytest

from edge.serde.windowed import window_store_key, window_store_key_timestamp
from edge.state import StoreContext
from edge.state.segments import SegmentedBytesStore


@pytest.mark.parametrize("persistent", [True, False])
@pytest.mark.parametrize("seed", [7, 8])
def test_range_items_equals_the_iterator_scan(tmp_path, persistent: bool, seed: int) -> None:
    rnd = random.Random(seed)
    store = SegmentedBytesStore(
        "w", retention_ms=11 * 60_000, time_of=window_store_key_timestamp, persistent=persistent
    )
    store.defer_writes = rnd.random() < 0.5
    store.init(StoreContext("app", "0_0", 0, tmp_path))
    now = 0
    keys = [b"order-%03d" % i for i in range(40)]
    checked = 0
    for step in range(3000):
        roll = rnd.random()
        now += rnd.randrange(0, 4000)
        if roll < 0.5:
            t = max(0, now - rnd.randrange(0, 8 * 60_000))
            store.put(window_store_key(rnd.choice(keys), t, step), b"v%d" % step)
        elif roll < 0.55:
            t = max(0, now - rnd.randrange(0, 8 * 60_000))
            store.put(window_store_key(rnd.choice(keys), t, 0), None)
        elif roll < 0.57 and store.defer_writes:
            store.persist()
        else:
            key = rnd.choice(keys)
            t1 = max(0, now - rnd.randrange(0, 12 * 60_000))
            t2 = t1 + rnd.randrange(0, 10 * 60_000)
            lo, hi = window_store_key(key, t1, 0), window_store_key(key, t2, 2**31 - 1)
            with store.range(lo, hi) as it:
                expected = list(it)
            assert store.range_items(lo, hi) == expected, step
            # with the time bounds (one key's window fetch): only the segments of those times are read
            assert store.range_items(lo, hi, t1, t2) == expected, step
            # point reads agree (a segment opened since the last persist is read from the buffer alone)
            assert all(store.get(k) == v for k, v in expected), step
            assert store.get(window_store_key(key, t1, 2**31 - 2)) is None, step
            checked += len(expected)
    assert checked > 500  # the scans found rows, across segments
    store.close()


def test_segments_restored_under_deferred_writes_are_read_from_rocksdb(tmp_path) -> None:
    """A restore writes straight to RocksDB: a segment it opens is not the write buffer's alone."""
    store = SegmentedBytesStore("w", retention_ms=11 * 60_000, time_of=window_store_key_timestamp)
    store.defer_writes = True
    store.init(StoreContext("app", "0_0", 0, tmp_path))
    store.put(window_store_key(b"a", 0, 1), b"buffered")  # segment 0 opened by a write: buffer only
    key = window_store_key(b"b", 7 * 60_000, 1)  # segment 1 opened by the restore
    store.restore_batch([(key, b"restored")])
    assert store.get(key) == b"restored"
    assert store.range_items(key, key) == [(key, b"restored")]
    assert store.get(window_store_key(b"a", 0, 1)) == b"buffered"
    store.close()

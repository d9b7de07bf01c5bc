"""RocksDB-specific behaviour: layout, persistence, restore, locks, corruption, iterator lifetime."""

from __future__ import annotations

import gc

import pytest

from edge.errors import StateStoreError
from edge.serde import Serdes
from edge.state import StoreContext
from edge.state.rocksdb import RocksDBKeyValueStore, destroy_store_dir


def _ctx(tmp_path, task_id="0_0", partition=0) -> StoreContext:
    return StoreContext("app", task_id, partition, tmp_path)


def test_directory_layout(make_store, tmp_path) -> None:
    store = make_store("counts", task_id="1_3", partition=3)
    assert store.inner_most().path == tmp_path / "app" / "1_3" / "rocksdb" / "counts"
    assert (tmp_path / "app" / "1_3" / "rocksdb" / "counts" / "CURRENT").exists()


def test_restore_batch_and_reopen_persist(tmp_path) -> None:
    store = RocksDBKeyValueStore("s")
    store.init(_ctx(tmp_path))
    store.restore_batch((f"k{i:05}".encode(), f"v{i}".encode()) for i in range(25_000))  # > 1 batch
    store.restore_batch([(b"k00001", None), (b"extra", b"x")])
    store.close()

    again = RocksDBKeyValueStore("s")
    again.init(_ctx(tmp_path))
    assert again.get(b"k00000") == b"v0"
    assert again.get(b"k00001") is None
    assert again.get(b"k24999") == b"v24999"
    assert again.get(b"extra") == b"x"
    assert 20_000 <= again.approximate_num_entries() <= 30_000
    again.close()


def test_full_stack_reopen_after_flush(make_store, tmp_path) -> None:
    store = make_store("s", value_serde=Serdes.long())
    store.put("a", 1)
    store.put("b", 2)
    store.delete("b")
    store.close()
    again = make_store("s", value_serde=Serdes.long())
    assert again.get("a") == 1 and again.get("b") is None


def test_lock_released_on_close_and_double_open_detected(tmp_path) -> None:
    first = RocksDBKeyValueStore("s")
    first.init(_ctx(tmp_path))
    second = RocksDBKeyValueStore("s")
    with pytest.raises(StateStoreError) as info:
        second.init(_ctx(tmp_path))
    assert info.value.corrupt is False
    assert info.value.store == "s" and info.value.task_id == "0_0"
    assert "locked" in str(info.value)
    first.close()
    second.init(_ctx(tmp_path))  # same process, lock released
    second.close()


def test_open_iterator_does_not_keep_lock_after_close(tmp_path) -> None:
    store = RocksDBKeyValueStore("s")
    store.init(_ctx(tmp_path))
    store.put(b"a", b"1")
    store.put(b"b", b"2")
    it = store.all()  # deliberately left open and referenced
    assert next(it) == (b"a", b"1")
    store.close()
    reopened = RocksDBKeyValueStore("s")
    reopened.init(_ctx(tmp_path))
    assert reopened.get(b"b") == b"2"
    with pytest.raises(StateStoreError):
        next(it)
    reopened.close()


def test_abandoned_exhausted_iterators_release_resources(tmp_path) -> None:
    store = RocksDBKeyValueStore("s")
    store.init(_ctx(tmp_path))
    store.put(b"a", b"1")
    for _ in range(3):
        assert list(store.all()) == [(b"a", b"1")]  # exhausted -> auto-released, no close() call
    assert store._iters == set()
    store.close()


def test_range_bounds_survive_garbage_collection(tmp_path) -> None:
    store = RocksDBKeyValueStore("s")
    store.init(_ctx(tmp_path))
    for i in range(200):
        store.put(b"k%03d" % i, b"v")
    its = [store.range(b"k%03d" % i, b"k%03d" % (i + 4)) for i in range(0, 100, 10)]
    gc.collect()
    junk = [bytes(64) for _ in range(10_000)]  # reuse freed memory
    for i, it in zip(range(0, 100, 10), its, strict=True):
        assert [k for k, _ in it] == [b"k%03d" % j for j in range(i, i + 5)]
    del junk
    store.close()


def test_two_tasks_do_not_collide(make_store) -> None:
    t0 = make_store("shared", task_id="0_0", partition=0)
    t1 = make_store("shared", task_id="0_1", partition=1)
    t0.put("k", "from-0")
    t1.put("k", "from-1")
    t0.flush()
    t1.flush()
    assert t0.get("k") == "from-0" and t1.get("k") == "from-1"
    assert t0.inner_most().path != t1.inner_most().path


def test_corrupt_directory_is_reported_and_can_be_wiped(tmp_path) -> None:
    store = RocksDBKeyValueStore("s")
    store.init(_ctx(tmp_path))
    store.put(b"a", b"1")
    store.close()
    path = store.path
    (path / "CURRENT").write_text("garbage\n")
    broken = RocksDBKeyValueStore("s")
    with pytest.raises(StateStoreError) as info:
        broken.init(_ctx(tmp_path))
    assert info.value.corrupt is True
    assert info.value.path == str(path)
    destroy_store_dir(path)
    assert not path.exists()
    fresh = RocksDBKeyValueStore("s")
    fresh.init(_ctx(tmp_path))
    assert fresh.get(b"a") is None
    fresh.close()


def test_flush_tracks_what_needs_persisting(tmp_path) -> None:
    store = RocksDBKeyValueStore("s")
    store.init(_ctx(tmp_path))
    store.flush()  # clean: no-op
    store.put(b"a", b"1")
    assert store._wal_dirty and not store._mem_dirty
    store.flush()
    assert not store._wal_dirty
    store.restore_batch([(b"b", b"2")])
    assert store._mem_dirty
    store.flush()
    assert not store._mem_dirty and not store._wal_dirty
    store.close()


_CRASH_SCRIPT = """
import os, sys
from pathlib import Path
from edge.state import StoreContext
from edge.state.rocksdb import RocksDBKeyValueStore
store = RocksDBKeyValueStore("s")
store.init(StoreContext("app", "0_0", 0, Path(sys.argv[1])))
store.put(b"single", b"1")
store.put_all([(b"batched", b"2", 0), (b"single-deleted", b"x", 0)])
store.delete(b"single-deleted")
store.restore_batch([(b"restored", b"3")])
store.flush()
store.put(b"after-flush", b"lost-or-not")
os._exit(0)  # crash: no close(), no memtable flush at shutdown
"""


def test_flushed_writes_survive_a_crash(tmp_path) -> None:
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", _CRASH_SCRIPT, str(tmp_path)], check=True, timeout=60)
    store = RocksDBKeyValueStore("s")
    store.init(_ctx(tmp_path))
    assert store.get(b"single") == b"1"
    assert store.get(b"batched") == b"2"
    assert store.get(b"single-deleted") is None
    assert store.get(b"restored") == b"3"
    store.close()


def test_approximate_count_uses_rocksdb_estimate(tmp_path) -> None:
    store = RocksDBKeyValueStore("s")
    store.init(_ctx(tmp_path))
    store.put_all((b"%d" % i, b"v", 0) for i in range(1000))
    store.flush()
    assert 900 <= store.approximate_num_entries() <= 1100
    store.close()


def test_shared_memory_bounds_are_configurable(tmp_path) -> None:
    from edge.state import rocksdb

    rocksdb.configure_rocksdb_memory(block_cache_bytes=8 << 20, write_buffer_bytes=32 << 20)
    try:
        stores = []
        for i in range(3):
            store = RocksDBKeyValueStore(f"s{i}")
            store.init(_ctx(tmp_path))
            store.put(b"k", b"v")
            stores.append(store)
        assert rocksdb._shared_write_buffers().get_buffer_size() == 32 << 20
        for store in stores:
            assert store.get(b"k") == b"v"
            store.close()
    finally:
        rocksdb.configure_rocksdb_memory(block_cache_bytes=64 << 20, write_buffer_bytes=128 << 20)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_scans_over_the_write_buffer_match_a_model_as_keys_arrive_between_scans(tmp_path, seed) -> None:
    """A window fetch per record with a put between fetches (a stream-stream join): the buffer's sorted
    key list is brought up to date in place between scans, one key or many at a time, and after a
    range delete or a persist. Range deletions wait for the persist (deferred writes) but are not read
    back, and a key written into a deleted range afterwards survives the persist. Every scan, get and
    multi-get must equal a plain model of the store."""
    import random

    rnd = random.Random(seed)
    store = RocksDBKeyValueStore("s")
    store.init(_ctx(tmp_path / str(seed)))
    store.defer_writes = True
    model: dict[bytes, bytes] = {}

    def key() -> bytes:
        return b"k%04d" % rnd.randrange(3000)

    for step in range(4000):
        roll = rnd.random()
        if roll < 0.45:
            k, v = key(), b"v%d" % step
            store.put(k, v)
            model[k] = v
        elif roll < 0.50:
            for _ in range(rnd.choice([2, 65, 200])):  # several keys between two scans
                k, v = key(), b"w%d" % step
                store.put(k, v)
                model[k] = v
        elif roll < 0.55:
            k = key()
            store.delete(k)
            model.pop(k, None)
        elif roll < 0.57:
            lo, hi = sorted((key(), key()))
            store.delete_range(lo, hi)
            for k in [k for k in model if lo <= k < hi]:
                del model[k]
        elif roll < 0.58:
            store.persist()
        else:
            lo, hi = sorted((key(), key()))
            with store.range(lo, hi) as it:
                got = list(it)
            assert got == sorted((k, v) for k, v in model.items() if lo <= k <= hi), step
            probe = [key() for _ in range(5)]
            assert [store.get(k) for k in probe] == [model.get(k) for k in probe], step
            assert store.get_many(probe) == [model.get(k) for k in probe], step
    with store.all() as it:
        assert list(it) == sorted(model.items())
    store.close()

"""Deferred writes: an active task's store never publishes uncommitted writes.

Writes wait in the store's buffer until ``persist()`` (the runtime calls it after the commit); reads,
scans and the size metric see them without writing them; a close without a commit drops them.
"""

from __future__ import annotations

from edge.state import StoreContext
from edge.state import rocksdb as rocksdb_module
from edge.state.rocksdb import RocksDBKeyValueStore
from edge.state.segments import SegmentedBytesStore


def _open(tmp_path, requests: list | None = None) -> RocksDBKeyValueStore:
    store = RocksDBKeyValueStore("s")
    ctx = StoreContext("app", "0_0", 0, tmp_path)
    if requests is not None:
        ctx.request_commit = lambda: requests.append(1)
    store.init(ctx)
    store.defer_writes = True
    return store


def _reopened(tmp_path) -> dict[bytes, bytes]:
    store = RocksDBKeyValueStore("s")
    store.init(StoreContext("app", "0_0", 0, tmp_path))
    try:
        with store.all() as it:
            return dict(it)
    finally:
        store.close()


def test_reads_metrics_and_flush_never_publish_uncommitted_writes(tmp_path) -> None:
    store = _open(tmp_path)
    store.put(b"a", b"1")
    store.put(b"b", b"2")
    assert store.get(b"a") == b"1"
    assert store.approximate_num_entries() == 2  # counted from the buffer, not drained into RocksDB
    with store.range(b"a", b"z") as it:
        assert list(it) == [(b"a", b"1"), (b"b", b"2")]
    store.flush()  # the layers above flush while the commit is still in flight: nothing is written
    store.close()  # no commit happened: the writes are dropped, as after a kill -9
    assert _reopened(tmp_path) == {}


def test_persist_writes_the_buffer_and_scans_merge_it_with_rocksdb(tmp_path) -> None:
    store = _open(tmp_path)
    for k in (b"a", b"c", b"e"):
        store.put(k, b"old")
    store.persist()
    store.put(b"b", b"new")  # a new key between persisted ones
    store.put(b"c", None)  # a buffered delete hides the persisted key
    store.put(b"e", b"new")  # a buffered update wins
    with store.all() as it:
        assert list(it) == [(b"a", b"old"), (b"b", b"new"), (b"e", b"new")]
    with store.prefix_scan(b"e") as it:
        assert list(it) == [(b"e", b"new")]
    with store.range(b"b", b"d") as it:
        assert list(it) == [(b"b", b"new")]
    store.close()
    assert _reopened(tmp_path) == {b"a": b"old", b"c": b"old", b"e": b"old"}


def test_a_full_buffer_requests_a_commit_instead_of_draining(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(rocksdb_module, "PENDING_MAX", 10)
    requests: list = []
    store = _open(tmp_path, requests)
    for i in range(25):
        store.put(b"k%02d" % i, b"v")
    assert requests == [1]  # asked once, not once per write
    store.discard_unflushed()
    store.close()
    assert _reopened(tmp_path) == {}


def test_expired_segments_are_dropped_only_by_persist(tmp_path) -> None:
    ctx = StoreContext("app", "0_0", 0, tmp_path)
    store = SegmentedBytesStore(
        "w", retention_ms=100, segment_interval_ms=100, time_of=lambda k: int.from_bytes(k[:8], "big")
    )
    store.init(ctx)
    store.defer_writes = True
    old = (50).to_bytes(8, "big") + b"x"
    store.put(old, b"v")
    store.persist()

    def on_disk() -> set[bytes]:  # the keys RocksDB itself holds (segment prefix + key), no buffer
        return set(store._shared._db.keys())

    first = on_disk()
    assert first == {(0).to_bytes(8, "big") + old}
    store.put((1_000).to_bytes(8, "big") + b"y", b"v")  # stream time jumps: the old segment expires
    assert store.get(old) is None
    assert on_disk() == first  # hidden, not dropped: the jump is not committed yet
    store.persist()
    assert on_disk() == {(10).to_bytes(8, "big") + (1_000).to_bytes(8, "big") + b"y"}  # dropped whole
    store.close()

"""Versioned stores under the at-least-once commit rule: deferred writes and compensations.

An active task's versioned store keeps its writes (latest values and history) in memory until the
runtime persists them after the commit, and a restore undoes orphan changelog records (written after the
last valid commit marker) with the record ``changelog_value`` gives: a snapshot of every version of the
key, which a plain versioned write could not express.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from edge.state.versioned import VersionedRecord
from tests.edge.state.conftest import RecordingSink
from tests.edge.state.test_versioned_store import open_store


def _inner(store):  # type: ignore[no-untyped-def]
    return store.wrapped


def _reads(store, key: str, times: range) -> list[VersionedRecord | None]:  # type: ignore[no-untyped-def]
    return [store.get(key)] + [store.get(key, t) for t in times]


def test_deferred_writes_reach_disk_only_on_persist(tmp_path: Path) -> None:
    store = open_store(tmp_path, True)
    store.put("k", "v1", 10)
    store.flush()
    store.close()
    store = open_store(tmp_path, True)
    _inner(store).defer_writes = True
    store.put("k", "v2", 20)  # v1 moves into the history: both layers change
    store.put("j", "w", 15)
    assert store.get("k") == VersionedRecord("v2", 20, None)  # reads see the buffered writes
    assert store.get("k", 12) == VersionedRecord("v1", 10, 20)
    store.flush()  # the commit is still in flight: nothing is written
    store.close()  # a kill before the commit: the writes are dropped
    store = open_store(tmp_path, True)
    assert store.get("k") == VersionedRecord("v1", 10, None)
    assert store.get("j") is None
    _inner(store).defer_writes = True
    store.put("k", "v2", 20)
    _inner(store).persist()  # the runtime's post-commit step
    store.close()
    store = open_store(tmp_path, True)
    assert store.get("k") == VersionedRecord("v2", 20, None)
    assert store.get("k", 12) == VersionedRecord("v1", 10, 20)
    store.close()


@pytest.mark.parametrize("persistent", [True, False], ids=["rocksdb", "memory"])
def test_a_snapshot_record_undoes_orphan_writes(tmp_path: Path, persistent: bool) -> None:
    committed_writes = [("k", "v1", 100), ("k", "v3", 300), ("k", "v2", 200), ("j", "x", 150)]
    orphan_writes = [
        ("k", "new", 400),  # newer than the latest: v3 would become history
        ("k", "mid", 250),  # splits v2's validity in the history
        ("k", None, 120),  # a delete inside v1's validity
        ("n", "only-orphans", 50),  # a key the committed state never had
    ]
    sink = RecordingSink()
    committed = open_store(tmp_path / "committed", persistent)
    follower = open_store(tmp_path / "follower", persistent, sink)  # applies orphans, like a standby
    for key, value, ts in committed_writes:
        committed.put(key, value, ts)
        follower.put(key, value, ts)
    for key, value, ts in orphan_writes:
        follower.put(key, value, ts)
    times = range(40, 460, 10)
    assert _reads(follower, "k", times) != _reads(committed, "k", times)
    # the restored (committed) store sends one compensation per orphan key; the follower applies them
    compensations = [(key.encode(), _inner(committed).changelog_value(key.encode())) for key in ("k", "n")]
    _inner(follower).restore_batch(compensations)
    for key in ("k", "j", "n"):
        assert _reads(follower, key, times) == _reads(committed, key, times), key
    # and a restore that replays everything -- committed writes, orphans, compensations -- agrees too
    replayed = open_store(tmp_path / "replayed", persistent)
    _inner(replayed).restore_batch([(k, v) for _t, _p, k, v, _ts in sink.records] + compensations)
    for key in ("k", "j", "n"):
        assert _reads(replayed, key, times) == _reads(committed, key, times), key
    for store in (committed, follower, replayed):
        store.close()

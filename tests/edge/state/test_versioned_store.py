"""Versioned key-value store (KIP-889): latest and as-of reads, out-of-order writes into history,
history retention, tombstones, the changelog and restoring from it (RocksDBVersionedStoreTest ideas)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from edge.errors import StateStoreError, TopologyError
from edge.serde import Serdes
from edge.state import StoreContext, changelog_topic_name
from edge.state.versioned import (
    PUT_RETURN_CODE_NOT_PUT,
    PUT_RETURN_CODE_VALID_TO_UNDEFINED,
    Stores,
    VersionedRecord,
    default_segment_interval,
)
from tests.edge.state.conftest import APP, RecordingSink

S = Serdes.string()
HISTORY = 10_000


def open_store(tmp_path: Path, persistent: bool, sink: RecordingSink | None = None, name: str = "vs"):
    supplier = Stores.persistent_versioned_key_value_store(name, HISTORY)
    builder = Stores.versioned_key_value_store_builder(supplier, S, S)
    if not persistent:
        builder = type(builder)(name, S, S, HISTORY, persistent=False)
    store = builder.build()
    store.init(
        StoreContext(
            APP,
            "0_0",
            0,
            tmp_path,
            changelog_topic=changelog_topic_name(APP, name) if sink is not None else None,
            changelog_sink=sink,
        )
    )
    return store


@pytest.fixture(params=[True, False], ids=["rocksdb", "memory"])
def persistent(request: pytest.FixtureRequest) -> bool:
    return request.param


def test_latest_and_as_of_reads(tmp_path, persistent):
    store = open_store(tmp_path, persistent)
    assert store.put("k", "v1", 10) == PUT_RETURN_CODE_VALID_TO_UNDEFINED
    assert store.put("k", "v2", 20) == PUT_RETURN_CODE_VALID_TO_UNDEFINED
    assert store.get("k") == VersionedRecord("v2", 20, None)
    assert store.get("k", 25) == VersionedRecord("v2", 20, None)
    assert store.get("k", 20) == VersionedRecord("v2", 20, None)
    assert store.get("k", 19) == VersionedRecord("v1", 10, 20)
    assert store.get("k", 10) == VersionedRecord("v1", 10, 20)
    assert store.get("k", 9) is None
    assert store.get("other") is None
    store.close()


def test_same_timestamp_replaces(tmp_path, persistent):
    store = open_store(tmp_path, persistent)
    store.put("k", "a", 10)
    store.put("k", "b", 10)
    assert store.get("k") == VersionedRecord("b", 10, None)
    assert store.get("k", 10) == VersionedRecord("b", 10, None)
    store.close()


def test_out_of_order_writes_go_into_history(tmp_path, persistent):
    store = open_store(tmp_path, persistent)
    store.put("k", "v10", 10)
    store.put("k", "v30", 30)
    # older than the latest: splits [10, 30) and returns the new record's valid_to
    assert store.put("k", "v20", 20) == 30
    assert store.get("k") == VersionedRecord("v30", 30, None)  # the latest is unchanged
    assert store.get("k", 15) == VersionedRecord("v10", 10, 20)
    assert store.get("k", 25) == VersionedRecord("v20", 20, 30)
    # before everything: valid until the first record
    assert store.put("k", "v5", 5) == 10
    assert store.get("k", 7) == VersionedRecord("v5", 5, 10)
    # replacing a history record in place keeps its range
    assert store.put("k", "v20b", 20) == 30
    assert store.get("k", 29) == VersionedRecord("v20b", 20, 30)
    store.close()


def test_tombstones(tmp_path, persistent):
    store = open_store(tmp_path, persistent)
    store.put("k", "v1", 10)
    assert store.delete("k", 20) == VersionedRecord("v1", 10, None)
    assert store.get("k") is None
    assert store.get("k", 25) is None
    assert store.get("k", 15) == VersionedRecord("v1", 10, 20)
    # an out-of-order value into the deleted period, then one after it
    assert store.put("k", "v15", 15) == 20
    assert store.get("k", 17) == VersionedRecord("v15", 15, 20)
    assert store.get("k", 12) == VersionedRecord("v1", 10, 15)
    store.put("k", "v30", 30)
    assert store.get("k", 25) is None  # the tombstone period stays empty
    assert store.get("k") == VersionedRecord("v30", 30, None)
    # an out-of-order delete splits a record
    store.put("k", None, 12)
    assert store.get("k", 13) is None
    assert store.get("k", 11) == VersionedRecord("v1", 10, 12)
    store.close()


def test_history_retention(tmp_path, persistent):
    store = open_store(tmp_path, persistent)
    store.put("k", "old", 0)
    store.put("k", "new", 5_000)
    assert store.get("k", 100) == VersionedRecord("old", 0, 5_000)
    store.put("other", "x", 20_000)  # stream time 20s: history before 10s is gone
    assert store.get("k", 100) is None
    assert store.get("k", 9_999) is None  # as-of older than the retention is not answered
    assert store.get("k", 10_000) == VersionedRecord("new", 5_000, None)
    assert store.get("k") == VersionedRecord("new", 5_000, None)  # the latest is always readable
    assert store.put("k", "late", 9_999) == PUT_RETURN_CODE_NOT_PUT  # too old to apply
    assert store.put("k", "ok", 10_000) == PUT_RETURN_CODE_VALID_TO_UNDEFINED  # at the edge: applied
    assert store.get("k", 10_000) == VersionedRecord("ok", 10_000, None)
    store.close()


def test_changelog_and_restore(tmp_path, persistent):
    sink = RecordingSink()
    store = open_store(tmp_path / "a", persistent, sink)
    store.put("k", "v1", 10)
    store.put("k", "v3", 30)
    store.put("k", "v2", 20)
    store.delete("k", 40)
    topic = changelog_topic_name(APP, "vs")
    assert [(t, k, ts) for t, _p, k, _v, ts in sink.records] == [
        (topic, b"k", 10),
        (topic, b"k", 30),
        (topic, b"k", 20),
        (topic, b"k", 40),
    ]
    store.close()
    restored = open_store(tmp_path / "b", persistent)
    restored.restore_batch([(k, v) for _t, _p, k, v, _ts in sink.records])
    assert restored.get("k") is None
    assert restored.get("k", 35) == VersionedRecord("v3", 30, 40)
    assert restored.get("k", 25) == VersionedRecord("v2", 20, 30)
    assert restored.get("k", 15) == VersionedRecord("v1", 10, 20)
    with pytest.raises(StateStoreError, match="not a versioned write"):
        restored.restore_batch([(b"k", b"x")])
    restored.close()


def test_persistent_store_survives_reopen(tmp_path):
    store = open_store(tmp_path, True)
    store.put("k", "v1", 10)
    store.put("k", "v2", 20)
    store.flush()
    store.close()
    again = open_store(tmp_path, True)
    assert again.get("k") == VersionedRecord("v2", 20, None)
    assert again.get("k", 15) == VersionedRecord("v1", 10, 20)
    assert again.observed_stream_time == 20
    again.close()


def test_builder_rules():
    supplier = Stores.persistent_versioned_key_value_store("vs", timedelta(minutes=5))
    assert supplier.history_retention_ms == 300_000
    builder = Stores.versioned_key_value_store_builder(supplier, S, S)
    assert builder.caching_enabled is False
    assert builder.with_caching_enabled().caching_enabled is False
    assert builder.changelog_config == {"min.compaction.lag.ms": str(300_000 + 86_400_000)}
    assert builder.with_logging_disabled().logging_enabled is False
    with pytest.raises(TopologyError, match="history retention must not be negative"):
        Stores.versioned_key_value_store_builder(Stores.persistent_versioned_key_value_store("vs", -1), S, S)
    with pytest.raises(TopologyError, match=r"milliseconds \(int\) or a timedelta"):
        Stores.persistent_versioned_key_value_store("vs", "5m")
    assert default_segment_interval(60_000) == 20_000
    assert default_segment_interval(300_000) == 60_000


def test_history_retention_is_converted_exactly():
    """A ``timedelta`` becomes milliseconds in integer arithmetic (through float seconds 1001 ms
    truncates to 1000), and a fraction of a millisecond is refused rather than dropped."""
    retention = timedelta(milliseconds=1001)
    assert int(retention.total_seconds() * 1000) == 1000  # what a float round trip gives
    assert Stores.persistent_versioned_key_value_store("vs", retention).history_retention_ms == 1001
    supplier = Stores.persistent_versioned_key_value_store("vs", 5_000, timedelta(seconds=1))
    assert supplier.segment_interval_ms == 1_000
    with pytest.raises(TopologyError, match="whole number of milliseconds"):
        Stores.persistent_versioned_key_value_store("vs", timedelta(microseconds=1500))
    with pytest.raises(TopologyError, match=r"milliseconds \(int\) or a timedelta"):
        Stores.persistent_versioned_key_value_store("vs", True)

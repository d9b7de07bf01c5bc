"""State stores: typed key-value stores backed by RocksDB or memory, cached and changelogged.

See :mod:`edge.state.api` for the contract and the decisions processors/runtime rely on.
"""

from __future__ import annotations

from edge.state.api import (
    BytesKeyValueStore,
    ChangelogSink,
    FlushListener,
    KeyValueIterator,
    KeyValueStore,
    StateStore,
    StoreBuilder,
    StoreContext,
    StoreMetrics,
    changelog_topic_name,
    task_dir,
)
from edge.state.builder import KeyValueStoreBuilder, key_value_store_builder
from edge.state.caching import CachingKeyValueStore
from edge.state.changelogging import ChangeLoggingKeyValueStore
from edge.state.checkpoint import checkpoint_path, delete_checkpoint, read_checkpoint, write_checkpoint
from edge.state.memory import InMemoryKeyValueStore
from edge.state.metered import MeteredKeyValueStore
from edge.state.rocksdb import RocksDBKeyValueStore, destroy_store_dir
from edge.state.segments import SegmentedBytesStore
from edge.state.window import (
    MeteredSessionStore,
    MeteredWindowStore,
    SessionStoreBuilder,
    WindowStoreBuilder,
    session_store_builder,
    window_store_builder,
)

__all__ = [
    "BytesKeyValueStore",
    "CachingKeyValueStore",
    "ChangeLoggingKeyValueStore",
    "ChangelogSink",
    "FlushListener",
    "InMemoryKeyValueStore",
    "KeyValueIterator",
    "KeyValueStore",
    "KeyValueStoreBuilder",
    "MeteredKeyValueStore",
    "MeteredSessionStore",
    "MeteredWindowStore",
    "RocksDBKeyValueStore",
    "SegmentedBytesStore",
    "SessionStoreBuilder",
    "StateStore",
    "StoreBuilder",
    "StoreContext",
    "StoreMetrics",
    "WindowStoreBuilder",
    "changelog_topic_name",
    "checkpoint_path",
    "delete_checkpoint",
    "destroy_store_dir",
    "key_value_store_builder",
    "read_checkpoint",
    "session_store_builder",
    "task_dir",
    "window_store_builder",
    "write_checkpoint",
]

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
    key_value_store_builder,
    task_dir,
)

__all__ = [
    "BytesKeyValueStore",
    "ChangelogSink",
    "FlushListener",
    "KeyValueIterator",
    "KeyValueStore",
    "StateStore",
    "StoreBuilder",
    "StoreContext",
    "StoreMetrics",
    "changelog_topic_name",
    "key_value_store_builder",
    "task_dir",
]

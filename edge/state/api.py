"""The state store contract shared by the DSL/Processor API, StreamTask, TopologyTestDriver and runtime.

Stack built by :func:`edge.state.builder.key_value_store_builder` (outer -> inner)::

    MeteredKeyValueStore      typed K/V <-> bytes via serdes, metrics, resolves the record timestamp
    CachingKeyValueStore      bytes, write-back LRU cache bounded in bytes, collapses updates, flush listener
    ChangeLoggingKeyValueStore bytes, sends every write that reaches it to the ChangelogSink
    RocksDBKeyValueStore | InMemoryKeyValueStore   bytes, ordered by key bytes, restore_batch

Decisions the processor/task/runtime side must know:

* **Timestamps.** Every write takes an optional keyword ``timestamp``. When omitted, the metered store
  asks ``StoreContext.record_timestamp()`` -- the task sets that to a cheap accessor returning the
  timestamp of the record being processed (default: wall clock ms). The resolved timestamp travels down
  the stack: it is the changelog record's timestamp and the timestamp given to the flush listener.
* **Flush listener** (Kafka's CacheFlushListener). ``set_flush_listener(listener)`` on the outer store,
  called from the processor's ``init`` (after the task initialised the store), returns ``True`` when
  the stack has a caching layer: the processor must then NOT forward itself -- the cache calls
  ``listener(key, new_value, old_value, timestamp)`` once per dirty key on flush (commit) and when a
  dirty entry is evicted. ``old_value`` is the value in the underlying store before this flush, i.e.
  the last value the listener saw (``None`` when ``send_old_values=False``). A key created and deleted
  between two flushes is neither written nor forwarded. With ``False`` the processor forwards directly.
  With a zero cache budget the caching layer is write-through and calls the listener on each write.
* **Context per store.** Give each store its own ``StoreContext`` (its changelog topic, cache share and
  ``StoreMetrics``). ``metrics=None`` selects untimed methods (timing costs ~0.2 us per operation).
* **Restore.** ``restore_batch(records)`` on any layer applies changelog ``(key_bytes, value_bytes |
  None)`` records to the innermost store in one write batch, bypassing logging and the cache. The
  runtime tracks restored offsets in the task's checkpoint file (:mod:`edge.state.checkpoint`).
* **Iterators** must be closed (``with store.range(a, b) as it: ...``). Closing a store closes its
  open iterators; using one afterwards raises ``StateStoreError``.
* ``flush()`` writes cache -> changelog sink -> inner store and makes RocksDB durable (fsync of its
  WAL; a memtable flush after restore writes, which skip the WAL). Order on commit: ``store.flush()``,
  then flush the producer (changelog records), then commit offsets / write the checkpoint.
* ``close()`` flushes dirty cache entries first (calling the flush listener, as Kafka Streams does), so
  flush/commit before closing processors. ``StateStoreError.corrupt`` tells the runtime to wipe
  (``edge.state.rocksdb.destroy_store_dir``) and restore from the changelog.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from edge.serde import Serde

K = TypeVar("K")
V = TypeVar("V")

#: listener(key, new_value, old_value, timestamp); new_value None = deletion.
FlushListener = Callable[[Any, Any, Any, int], None]


@runtime_checkable
class KeyValueIterator(Protocol[K, V]):
    """Iterator of ``(key, value)`` ordered by serialized key bytes; must be closed (context manager)."""

    def __iter__(self) -> Iterator[tuple[K, V]]: ...

    def __next__(self) -> tuple[K, V]: ...

    def peek_next_key(self) -> K | None: ...

    def close(self) -> None: ...

    def __enter__(self) -> KeyValueIterator[K, V]: ...

    def __exit__(self, *exc: object) -> None: ...


@runtime_checkable
class StateStore(Protocol):
    name: str
    persistent: bool

    def init(self, context: StoreContext) -> None:
        """Open files / resources. Called by the task once, before any processor uses the store."""

    def flush(self) -> None:
        """Cache -> changelog -> inner durable store (and fsync-equivalent of RocksDB memtables)."""

    def close(self) -> None:
        """Release files and locks; closes open iterators. Idempotent."""

    @property
    def is_open(self) -> bool: ...


@runtime_checkable
class KeyValueStore(StateStore, Protocol[K, V]):
    """Typed key-value store (the metered outer layer)."""

    def get(self, key: K) -> V | None: ...

    def put(self, key: K, value: V | None, timestamp: int | None = None) -> None:
        """``value=None`` deletes (tombstone). ``timestamp`` defaults to ``context.record_timestamp()``."""

    def put_if_absent(self, key: K, value: V, timestamp: int | None = None) -> V | None:
        """Write only if no value exists; returns the existing value (or ``None`` if it wrote)."""

    def put_all(self, entries: Iterable[tuple[K, V | None]], timestamp: int | None = None) -> None: ...

    def delete(self, key: K, timestamp: int | None = None) -> V | None:
        """Delete and return the previous value."""

    def range(self, from_key: K | None, to_key: K | None) -> KeyValueIterator[K, V]:
        """Inclusive bounds (``None`` = unbounded), ordered by serialized key bytes."""

    def prefix_scan(self, prefix: Any, prefix_serde: Serde | None = None) -> KeyValueIterator[K, V]:
        """Keys whose serialized bytes start with ``prefix_serde.serialize(prefix)`` (default key serde)."""

    def all(self) -> KeyValueIterator[K, V]: ...

    def approximate_num_entries(self) -> int: ...

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool = True) -> bool:
        """See module doc. Returns True if caching is in the stack (processor must not forward)."""

    def restore_batch(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Apply raw changelog records to the innermost store (bypasses cache and logging)."""


@runtime_checkable
class BytesKeyValueStore(Protocol):
    """The bytes-level layers (caching, change-logging, RocksDB, in-memory).

    Writes carry an explicit record timestamp (the metered layer resolves it); inner stores ignore it.
    """

    name: str
    persistent: bool

    def init(self, context: StoreContext) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...

    @property
    def is_open(self) -> bool: ...

    def get(self, key: bytes) -> bytes | None: ...

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> None: ...

    def put_if_absent(self, key: bytes, value: bytes, timestamp: int) -> bytes | None: ...

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None, int]]) -> None:
        """Entries are ``(key, value_or_None, timestamp)`` triples, applied in order."""

    def delete(self, key: bytes, timestamp: int) -> bytes | None: ...

    def range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator[bytes, bytes]: ...

    def prefix_scan(self, prefix: bytes) -> KeyValueIterator[bytes, bytes]: ...

    def all(self) -> KeyValueIterator[bytes, bytes]: ...

    def approximate_num_entries(self) -> int: ...

    def restore_batch(self, records: Iterable[tuple[bytes, bytes | None]]) -> None: ...


@runtime_checkable
class ChangelogSink(Protocol):
    """Where the change-logging layer sends records (the runtime's producer; a list in tests)."""

    def send(self, topic: str, partition: int, key: bytes, value: bytes | None, timestamp: int) -> None: ...


class StoreMetrics:
    """Per-store operation counters and cumulative latency (ns), recorded by the metered layer.

    Plain integer attributes so recording is two attribute increments; read with :meth:`as_dict`.
    Cache hit/miss counters are maintained by the caching layer when present.
    """

    OPS = ("put", "get", "delete", "put_if_absent", "put_all", "range", "prefix_scan", "all", "flush")

    __slots__ = (
        "all_count",
        "all_ns",
        "cache_hits",
        "cache_misses",
        "delete_count",
        "delete_ns",
        "evictions",
        "flush_count",
        "flush_ns",
        "get_count",
        "get_ns",
        "prefix_scan_count",
        "prefix_scan_ns",
        "put_all_count",
        "put_all_ns",
        "put_count",
        "put_if_absent_count",
        "put_if_absent_ns",
        "put_ns",
        "range_count",
        "range_ns",
    )

    def __init__(self) -> None:
        for slot in self.__slots__:
            setattr(self, slot, 0)

    def as_dict(self) -> dict[str, int | float]:
        out: dict[str, int | float] = {slot: getattr(self, slot) for slot in sorted(self.__slots__)}
        for op in self.OPS:
            n = out[f"{op}_count"]
            out[f"{op}_avg_ns"] = (out[f"{op}_ns"] / n) if n else 0.0
        lookups = out["cache_hits"] + out["cache_misses"]
        out["cache_hit_ratio"] = (out["cache_hits"] / lookups) if lookups else 0.0
        return out


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True)
class StoreContext:
    """What a task hands to a store on ``init``."""

    application_id: str
    task_id: str  # "<subtopology>_<partition>", e.g. "0_3"
    partition: int
    state_dir: Path
    changelog_topic: str | None = None  # None = logging disabled
    changelog_sink: ChangelogSink | None = None
    cache_max_bytes: int = 10 * 1024 * 1024  # this store's share of cache.max.bytes.buffering; 0 = off
    #: a stream-stream join store's in-memory index of its recent records (``join.index.max.bytes``)
    join_index_max_bytes: int = 16 * 1024 * 1024
    metrics: StoreMetrics | None = None
    #: returns the timestamp of the record currently being processed; the task replaces it.
    record_timestamp: Callable[[], int] = field(default=_wall_clock_ms)
    #: collapse changelog records per key until ``flush()`` (the commit) instead of sending one per
    #: write: the changelog then holds each key's last value per commit, like with the record cache.
    changelog_collapse: bool = False
    #: asks the task for an early commit (a deferred-write store whose buffer is full calls it instead
    #: of writing uncommitted data to disk); None outside a task
    request_commit: Callable[[], None] | None = None

    @property
    def task_dir(self) -> Path:
        return task_dir(self.state_dir, self.application_id, self.task_id)


@runtime_checkable
class StoreBuilder(Protocol):
    """How a topology declares a store; the task calls ``build()`` once per task."""

    name: str
    logging_enabled: bool
    caching_enabled: bool
    persistent: bool
    changelog_config: Mapping[str, str]

    def build(self) -> KeyValueStore: ...

    def with_logging_disabled(self) -> StoreBuilder: ...

    def with_caching_disabled(self) -> StoreBuilder: ...

    def with_logging_enabled(self, config: Mapping[str, str] | None = None) -> StoreBuilder: ...

    def with_caching_enabled(self) -> StoreBuilder: ...


def changelog_topic_name(application_id: str, store_name: str) -> str:
    """Kafka Streams' naming: ``<application.id>-<store>-changelog``."""
    return f"{application_id}-{store_name}-changelog"


def task_dir(state_dir: Path, application_id: str, task_id: str) -> Path:
    """``state_dir/<application_id>/<task_id>``: holds ``rocksdb/<store>`` dirs and ``.checkpoint``."""
    return Path(state_dir) / application_id / task_id

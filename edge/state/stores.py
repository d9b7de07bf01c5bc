"""Kafka's ``Stores`` factory: store suppliers that pick the in-memory or the RocksDB store, and the
builders that turn a supplier into a store for the Processor API.

A supplier names a store and its kind (key-value, window, session, versioned) and says which of the
project's stores backs it; it is what ``Materialized.as_(supplier)`` takes (Kafka's
``Materialized.as(KeyValueBytesStoreSupplier)``), so code ported from Java keeps its shape::

    in_memory = Materialized.as_(Stores.in_memory_key_value_store("counts"))
    counts = stream.group_by_key().count(materialized=in_memory)
    hourly = Stores.persistent_window_store("w", retention_period=86_400_000, window_size=3_600_000,
                                            retain_duplicates=False)
    windowed.aggregate(init, agg, materialized=Materialized.as_(hourly))

Durations are int milliseconds or ``timedelta``. The edge stores every key-value table value with its
timestamp, so the plain and the timestamped suppliers give the same store (Kafka adapts a plain
supplier the same way, minus the timestamps). The suppliers are plain data: they build nothing until a
task builds its stores, one fresh instance per task, as Kafka's ``StoreSupplier.get()`` does.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from edge.errors import TopologyError
from edge.time import to_millis

if TYPE_CHECKING:
    from edge.serde import Serde
    from edge.state.builder import KeyValueStoreBuilder
    from edge.state.versioned import VersionedBytesStoreSupplier, VersionedKeyValueStoreBuilder
    from edge.state.window import SessionStoreBuilder, WindowStoreBuilder

#: what a supplier's ``kind`` can be; the DSL checks it against the operation it materializes
KEY_VALUE, WINDOW, SESSION = "key_value", "window", "session"


def _name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise TopologyError(f"a store supplier needs a non-empty string name, got {name!r}")
    return name


def _non_negative(value: Any, what: str) -> int:
    ms = to_millis(value, what)
    if ms < 0:
        raise TopologyError(f"{what} cannot be negative, got {ms} ms")
    return ms


@dataclasses.dataclass(frozen=True, slots=True)
class KeyValueBytesStoreSupplier:
    """Kafka's ``KeyValueBytesStoreSupplier``: a key-value store named ``name``, RocksDB if
    ``persistent`` else in memory."""

    name: str
    persistent: bool
    timestamped: bool = False
    kind: str = KEY_VALUE

    def metrics_scope(self) -> str:
        """Kafka's ``metricsScope()``: which store family the metrics report."""
        return "rocksdb" if self.persistent else "in-memory"


@dataclasses.dataclass(frozen=True, slots=True)
class WindowBytesStoreSupplier:
    """Kafka's ``WindowBytesStoreSupplier``: a window store keeping windows for ``retention_ms``;
    ``retain_duplicates`` keeps every put (what stream-stream joins need) instead of overwriting."""

    name: str
    retention_ms: int
    window_size_ms: int
    retain_duplicates: bool
    persistent: bool
    timestamped: bool = False
    kind: str = WINDOW

    def metrics_scope(self) -> str:
        return "rocksdb-window" if self.persistent else "in-memory-window"

    @property
    def segment_interval_ms(self) -> int:
        """Kafka's ``Math.max(retentionPeriod / 2, 60_000)``; the segmented store derives the same."""
        return max(self.retention_ms // 2, 60_000)


@dataclasses.dataclass(frozen=True, slots=True)
class SessionBytesStoreSupplier:
    """Kafka's ``SessionBytesStoreSupplier``: a session store keeping sessions for ``retention_ms``."""

    name: str
    retention_ms: int
    persistent: bool
    kind: str = SESSION

    def metrics_scope(self) -> str:
        return "rocksdb-session" if self.persistent else "in-memory-session"


def _window_supplier(
    name: str,
    retention_period: Any,
    window_size: Any,
    retain_duplicates: bool,
    persistent: bool,
    timestamped: bool,
) -> WindowBytesStoreSupplier:
    name = _name(name)
    retention = _non_negative(retention_period, "retentionPeriod")
    size = _non_negative(window_size, "windowSize")
    if size > retention:
        raise TopologyError(
            f"The retention period of the window store {name} must be no smaller than its window size. "
            f"Got size=[{size}], retention=[{retention}]"
        )
    return WindowBytesStoreSupplier(name, retention, size, bool(retain_duplicates), persistent, timestamped)


class Stores:
    """Kafka's ``Stores``: ``in_memory_*`` / ``persistent_*`` suppliers (what ``Materialized.as_`` takes)
    and ``*_store_builder`` builders (what ``Topology.add_state_store`` takes). As in Kafka, a builder
    starts with logging enabled and caching disabled (``with_caching_enabled()`` turns the cache on)."""

    # -- suppliers -----------------------------------------------------------------------------------
    @staticmethod
    def persistent_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        return KeyValueBytesStoreSupplier(_name(name), persistent=True)

    @staticmethod
    def persistent_timestamped_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        return KeyValueBytesStoreSupplier(_name(name), persistent=True, timestamped=True)

    @staticmethod
    def in_memory_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        return KeyValueBytesStoreSupplier(_name(name), persistent=False)

    @staticmethod
    def persistent_window_store(
        name: str, retention_period: Any, window_size: Any, retain_duplicates: bool
    ) -> WindowBytesStoreSupplier:
        return _window_supplier(name, retention_period, window_size, retain_duplicates, True, False)

    @staticmethod
    def persistent_timestamped_window_store(
        name: str, retention_period: Any, window_size: Any, retain_duplicates: bool
    ) -> WindowBytesStoreSupplier:
        return _window_supplier(name, retention_period, window_size, retain_duplicates, True, True)

    @staticmethod
    def in_memory_window_store(
        name: str, retention_period: Any, window_size: Any, retain_duplicates: bool
    ) -> WindowBytesStoreSupplier:
        return _window_supplier(name, retention_period, window_size, retain_duplicates, False, False)

    @staticmethod
    def persistent_session_store(name: str, retention_period: Any) -> SessionBytesStoreSupplier:
        return SessionBytesStoreSupplier(
            _name(name), _non_negative(retention_period, "retentionPeriod"), True
        )

    @staticmethod
    def in_memory_session_store(name: str, retention_period: Any) -> SessionBytesStoreSupplier:
        return SessionBytesStoreSupplier(
            _name(name), _non_negative(retention_period, "retentionPeriod"), False
        )

    @staticmethod
    def persistent_versioned_key_value_store(
        name: str, history_retention: Any, segment_interval: Any = None
    ) -> VersionedBytesStoreSupplier:
        from edge.state.versioned import persistent_versioned_key_value_store

        return persistent_versioned_key_value_store(name, history_retention, segment_interval)

    # -- builders (Processor API) --------------------------------------------------------------------
    @staticmethod
    def key_value_store_builder(
        supplier: KeyValueBytesStoreSupplier, key_serde: Serde, value_serde: Serde
    ) -> KeyValueStoreBuilder:
        from edge.state.builder import KeyValueStoreBuilder

        _expect(supplier, KeyValueBytesStoreSupplier, "key_value_store_builder")
        return KeyValueStoreBuilder(
            supplier.name, key_serde, value_serde, persistent=supplier.persistent, caching=False
        )

    @staticmethod
    def timestamped_key_value_store_builder(
        supplier: KeyValueBytesStoreSupplier, key_serde: Serde, value_serde: Serde
    ) -> KeyValueStoreBuilder:
        """Values are ``ValueAndTimestamp`` (Kafka's ``TimestampedKeyValueStore``)."""
        from edge.serde import ValueAndTimestampSerde

        return Stores.key_value_store_builder(supplier, key_serde, ValueAndTimestampSerde(value_serde))

    @staticmethod
    def window_store_builder(
        supplier: WindowBytesStoreSupplier, key_serde: Serde, value_serde: Serde
    ) -> WindowStoreBuilder:
        from edge.state.window import window_store_builder

        _expect(supplier, WindowBytesStoreSupplier, "window_store_builder")
        return window_store_builder(
            supplier.name,
            key_serde,
            value_serde,
            window_size_ms=supplier.window_size_ms,
            retention_ms=supplier.retention_ms,
            retain_duplicates=supplier.retain_duplicates,
            persistent=supplier.persistent,
            caching=False,
        )

    @staticmethod
    def timestamped_window_store_builder(
        supplier: WindowBytesStoreSupplier, key_serde: Serde, value_serde: Serde
    ) -> WindowStoreBuilder:
        """Values are ``ValueAndTimestamp`` (Kafka's ``TimestampedWindowStore``)."""
        from edge.serde import ValueAndTimestampSerde

        return Stores.window_store_builder(supplier, key_serde, ValueAndTimestampSerde(value_serde))

    @staticmethod
    def session_store_builder(
        supplier: SessionBytesStoreSupplier, key_serde: Serde, value_serde: Serde
    ) -> SessionStoreBuilder:
        from edge.state.window import session_store_builder

        _expect(supplier, SessionBytesStoreSupplier, "session_store_builder")
        return session_store_builder(
            supplier.name,
            key_serde,
            value_serde,
            retention_ms=supplier.retention_ms,
            persistent=supplier.persistent,
            caching=False,
        )

    @staticmethod
    def versioned_key_value_store_builder(
        supplier: VersionedBytesStoreSupplier, key_serde: Serde, value_serde: Serde
    ) -> VersionedKeyValueStoreBuilder:
        from edge.state.versioned import versioned_key_value_store_builder

        return versioned_key_value_store_builder(supplier, key_serde, value_serde)


def _expect(supplier: Any, cls: type, where: str) -> None:
    if not isinstance(supplier, cls):
        raise TopologyError(f"Stores.{where} takes a {cls.__name__}, got {supplier!r}")


def supplier_kind(supplier: Any) -> str | None:
    """The kind of store a ``Materialized.as_`` argument supplies (None: a store name)."""
    return (
        getattr(supplier, "kind", None)
        if isinstance(
            supplier, (KeyValueBytesStoreSupplier, WindowBytesStoreSupplier, SessionBytesStoreSupplier)
        )
        else None
    )

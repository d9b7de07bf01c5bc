"""Windowed streams: ``KGroupedStream.windowed_by(windows)`` and their aggregations (Kafka's
``TimeWindowedKStream`` and ``SessionWindowedKStream``).

``count``/``reduce``/``aggregate`` give a KTable keyed by ``Windowed(key, window)``, backed by a window
store (time and sliding windows; values are ``ValueAndTimestamp`` like Kafka's timestamped window store)
or a session store. Its key serde is Kafka's windowed serde of the grouped key serde (key bytes + 8-byte
window start; sessions: + end + start) when that serde is known, so ``to_stream().to(topic)`` writes the
bytes a Java consumer reads with ``WindowedSerdes``; with no key serde anywhere, the sink falls back to
the config's default serde, as in Kafka (which then cannot serialize a ``Windowed`` key).

Names follow Kafka: the store (``KSTREAM-AGGREGATE-STATE-STORE-<n>``) is drawn before the processor
(``KSTREAM-AGGREGATE-<n+1>``), and ``count(materialized=...)`` without a store name burns one more index,
as Kafka does for topology compatibility. Retention defaults to size + grace (sessions: gap + grace;
sliding windows: 2 * time difference + grace); ``Materialized.with_retention`` may only lengthen it.

``emit_strategy(EmitStrategy.on_window_close())`` emits each window once, after it closes (KIP-825). The
store then has no record cache (as Kafka's sliding and session stores; Kafka's time-window store keeps a
cache it never forwards from), and the last emitted close time lives in an extra key-value store
``<store>-emit-metadata`` with its own changelog (Kafka keeps it in the commit metadata), so a restart
neither repeats nor skips results. That store is the one visible difference: describe() lists it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from edge.dsl.builder import store_spec
from edge.dsl.kstream import repartition_node
from edge.dsl.ktable import KTable, OldValuesRequest
from edge.dsl.options import Materialized, Named, materialized_of, name_of
from edge.dsl.windows import EmitStrategy, SessionWindows, SlidingWindows, TimeWindows
from edge.errors import TopologyError
from edge.processor.ops.getters import ValueGetterSupplier
from edge.processor.ops.session import KStreamSessionWindowAggregate
from edge.processor.ops.sliding import KStreamSlidingWindowAggregate
from edge.processor.ops.windowed import KStreamWindowAggregate, SessionStoreGetter, WindowStoreGetter
from edge.serde import Serdes
from edge.serde.windowed import SessionWindowedSerde, TimeWindowedSerde
from edge.topology import naming
from edge.topology.graph import ProcessorGraphNode
from edge.topology.stores import StoreSpec

if TYPE_CHECKING:
    from edge.dsl.grouped import KGroupedStream
    from edge.serde import Serde

NamedLike = Named | str | None
MaterializedLike = Materialized | str | None

#: suffix of the store that keeps an emit-final aggregation's last emitted window close time
EMIT_METADATA_SUFFIX = "-emit-metadata"


def _count_init() -> int:
    return 0


def _count_add(_key: Any, _value: Any, agg: int) -> int:
    return agg + 1


def _count_merge(_key: Any, agg1: int, agg2: int) -> int:
    return agg1 + agg2


def _reduce_init() -> None:
    return None


def _reducing(reducer: Callable[[Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """Kafka's ``aggregatorForReducer``: the first value is the aggregate, later ones are reduced in."""

    def aggregate(_key: Any, value: Any, agg: Any) -> Any:
        return value if agg is None else reducer(agg, value)

    return aggregate


def _merging(aggregator: Callable[[Any, Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """Kafka's ``mergerForAggregator``: merging two sessions reduces the second into the first."""

    def merge(key: Any, agg1: Any, agg2: Any) -> Any:
        return aggregator(key, agg2, agg1)

    return merge


class _WindowedStream:
    """What time and session windowed streams share: store declaration, naming, the result table."""

    _session = False

    def __init__(self, grouped: KGroupedStream, windows: Any) -> None:
        self._grouped = grouped
        self._windows = windows
        self._emit_strategy = EmitStrategy.on_window_update()

    def emit_strategy(self, strategy: EmitStrategy) -> Any:
        """Emit on every update (default) or once per window when it closes (Kafka's ``emitStrategy``)."""
        if not isinstance(strategy, EmitStrategy):
            raise TopologyError(f"emit_strategy expects an EmitStrategy, got {strategy!r}")
        self._emit_strategy = strategy
        return self

    # -- per-kind rules -----------------------------------------------------------------------------------
    def _window_size(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def _check_retention(self, store_name: str, retention_ms: int | None) -> int:  # pragma: no cover
        raise NotImplementedError

    def _windowed_key_serde(self, inner: Serde) -> Serde:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- building -----------------------------------------------------------------------------------------
    def _build(
        self,
        prefix: str,
        named: NamedLike,
        materialized: MaterializedLike,
        default_value_serde: Serde | None,
        make: Callable[[str, bool, str | None], Any],
        *,
        burn_store_name: bool = False,
    ) -> KTable:
        grouped = self._grouped
        builder = grouped._builder
        names = builder.names
        m = materialized_of(materialized)
        if burn_store_name and materialized is not None and m.store_name is None:
            names.store(
                prefix
            )  # Kafka burns a name here "for compatibility"; so do we, to keep its numbering
        store_name = m.store_name or names.store(prefix)
        retention_ms = self._check_retention(store_name, m.retention_ms)
        spec = store_spec(
            m, store_name, grouped.key_serde, default_value_serde, "session" if self._session else "window"
        )
        spec.kind = "session" if self._session else "window"
        spec.window_size_ms = self._window_size()
        spec.retention_ms = retention_ms
        emit_final = self._emit_strategy.on_close
        stores = [store_name]
        new_stores = [spec]
        metadata_store: str | None = None
        if emit_final:
            spec.caching_enabled = False  # results leave through the emit-final fetch, never a cache flush
            # Kafka's default store for ON_WINDOW_CLOSE time windows is its time-ordered RocksDB store
            # (its in-memory one, and a user's Stores supplier, are key-first)
            spec.time_ordered = spec.kind == "window" and spec.persistent and m.store_supplier is None
            metadata_store = f"{store_name}{EMIT_METADATA_SUFFIX}"
            stores.append(metadata_store)
            new_stores.append(
                StoreSpec(
                    metadata_store,
                    Serdes.string(),
                    Serdes.long(),
                    persistent=m.persistent,
                    logging_enabled=m.logging_enabled,
                    caching_enabled=False,
                    timestamped=False,
                )
            )
        proc_name = names.processor(prefix, name_of(named))
        parent = grouped._node
        if grouped._repartition_required:
            parent = repartition_node(
                builder,
                parent,
                grouped._repartition_name or store_name,
                grouped.key_serde,
                grouped.value_serde,
            )
        old_values = OldValuesRequest()
        node = builder.add_node(
            ProcessorGraphNode(
                proc_name,
                [parent],
                lambda: old_values.apply(make(store_name, emit_final, metadata_store)),
                stores=stores,
                new_stores=new_stores,
            )
        )
        node.windows = self._windows  # type: ignore[attr-defined]  # suppress() reads the grace here
        getter_cls = SessionStoreGetter if self._session else WindowStoreGetter
        getter = ValueGetterSupplier(lambda: getter_cls(store_name), [store_name])
        inner = spec.key_serde
        key_serde = None if inner is None else self._windowed_key_serde(inner)
        return KTable(
            builder, node, key_serde, spec.value_serde, store_name, getter, old_values=old_values.enable
        )


def _retention_error(store: str, kind: str, what: str, parts: str, retention_ms: int) -> TopologyError:
    return TopologyError(
        f"The retention period of the {kind} {store} must be no smaller than {what}. "
        f"Got {parts}, retention=[{retention_ms}]"
    )


class TimeWindowedKStream(_WindowedStream):
    """A grouped stream over tumbling/hopping (``TimeWindows``) or sliding (``SlidingWindows``) windows."""

    def __init__(self, grouped: KGroupedStream, windows: TimeWindows | SlidingWindows) -> None:
        super().__init__(grouped, windows)
        self._sliding = isinstance(windows, SlidingWindows)

    def _window_size(self) -> int:
        w = self._windows
        return w.time_difference_ms if self._sliding else w.size_ms

    def _check_retention(self, store_name: str, retention_ms: int | None) -> int:
        w = self._windows
        if self._sliding:
            needed = 2 * w.time_difference_ms + w.grace_ms
            if retention_ms is not None and retention_ms < needed:
                raise _retention_error(
                    store_name,
                    "window store",
                    "2 * time difference plus the grace period",
                    f"time difference=[{w.time_difference_ms}], grace=[{w.grace_ms}]",
                    retention_ms,
                )
        else:
            needed = w.size_ms + w.grace_ms
            if retention_ms is not None and retention_ms < needed:
                raise _retention_error(
                    store_name,
                    "window store",
                    "its window size plus the grace period",
                    f"size=[{w.size_ms}], grace=[{w.grace_ms}]",
                    retention_ms,
                )
        return needed if retention_ms is None else retention_ms

    def _windowed_key_serde(self, inner: Serde) -> Serde:
        return TimeWindowedSerde(inner, self._window_size())  # type: ignore[return-value]

    def _processor(
        self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any]
    ) -> Callable[[str, bool, str | None], Any]:
        windows = self._windows
        cls = KStreamSlidingWindowAggregate if self._sliding else KStreamWindowAggregate

        def make(store: str, emit_final: bool, metadata: str | None) -> Any:
            return cls(store, windows, initializer, aggregator, emit_final, metadata)

        return make

    def count(self, named: NamedLike = None, materialized: MaterializedLike = None) -> KTable:
        """Records per key and window (values are counted even when None, as in Kafka)."""
        return self._build(
            naming.AGGREGATE,
            named,
            materialized,
            Serdes.long(),
            self._processor(_count_init, _count_add),
            burn_store_name=not self._sliding,
        )

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        named: NamedLike = None,
        materialized: MaterializedLike = None,
    ) -> KTable:
        """``reducer(aggregate, value)`` per window; a window's first value is its initial aggregate."""
        return self._build(
            naming.REDUCE,
            named,
            materialized,
            self._grouped.value_serde,
            self._processor(_reduce_init, _reducing(reducer)),
        )

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        named: NamedLike = None,
        materialized: MaterializedLike = None,
    ) -> KTable:
        """``aggregator(key, value, aggregate) -> aggregate`` per window, from ``initializer()``."""
        return self._build(
            naming.AGGREGATE, named, materialized, None, self._processor(initializer, aggregator)
        )


class SessionWindowedKStream(_WindowedStream):
    """A grouped stream over sessions (``SessionWindows``)."""

    _session = True

    def _window_size(self) -> int:
        return 0

    def _check_retention(self, store_name: str, retention_ms: int | None) -> int:
        w = self._windows
        needed = w.inactivity_gap_ms + w.grace_ms
        if retention_ms is not None and retention_ms < needed:
            raise _retention_error(
                store_name,
                "session store",
                "the session inactivity gap plus the grace period",
                f"gap=[{w.inactivity_gap_ms}], grace=[{w.grace_ms}]",
                retention_ms,
            )
        return needed if retention_ms is None else retention_ms

    def _windowed_key_serde(self, inner: Serde) -> Serde:
        return SessionWindowedSerde(inner)  # type: ignore[return-value]

    def _processor(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        merger: Callable[[Any, Any, Any], Any],
    ) -> Callable[[str, bool, str | None], Any]:
        windows = self._windows

        def make(store: str, emit_final: bool, metadata: str | None) -> Any:
            return KStreamSessionWindowAggregate(
                store, windows, initializer, aggregator, merger, emit_final, metadata
            )

        return make

    def count(self, named: NamedLike = None, materialized: MaterializedLike = None) -> KTable:
        """Records per key and session."""
        return self._build(
            naming.AGGREGATE,
            named,
            materialized,
            Serdes.long(),
            self._processor(_count_init, _count_add, _count_merge),
            burn_store_name=True,
        )

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        named: NamedLike = None,
        materialized: MaterializedLike = None,
    ) -> KTable:
        """``reducer(aggregate, value)`` per session; merging sessions reduces one aggregate into the
        other."""
        aggregator = _reducing(reducer)
        return self._build(
            naming.REDUCE,
            named,
            materialized,
            self._grouped.value_serde,
            self._processor(_reduce_init, aggregator, _merging(aggregator)),
        )

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        session_merger: Callable[[Any, Any, Any], Any],
        named: NamedLike = None,
        materialized: MaterializedLike = None,
    ) -> KTable:
        """``aggregator(key, value, aggregate)`` per session; ``session_merger(key, agg1, agg2)`` combines
        the aggregates of sessions a record joins together."""
        return self._build(
            naming.AGGREGATE,
            named,
            materialized,
            None,
            self._processor(initializer, aggregator, session_merger),
        )


def windowed_by(grouped: KGroupedStream, windows: Any) -> TimeWindowedKStream | SessionWindowedKStream:
    if isinstance(windows, (TimeWindows, SlidingWindows)):
        return TimeWindowedKStream(grouped, windows)
    if isinstance(windows, SessionWindows):
        return SessionWindowedKStream(grouped, windows)
    raise TopologyError(
        f"windowed_by expects TimeWindows, SlidingWindows or SessionWindows, got {type(windows).__name__}"
    )

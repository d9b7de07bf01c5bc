"""``KGroupedStream.cogroup(aggregator)``: several grouped streams folded into one aggregate (KIP-150).

Kafka's ``CogroupedKStream``: each input keeps its own aggregator, all of them update ONE store, so an
aggregate built from N streams needs one store and one changelog instead of N aggregations and N-1
table joins. Built as Kafka's ``CogroupedStreamAggregateBuilder`` builds it::

    grouped 1 ─(repartition if its key changed)─► COGROUPKSTREAM-AGGREGATE-<n>   ─┐ (one store)
    grouped 2 ─(repartition if its key changed)─► COGROUPKSTREAM-AGGREGATE-<n+1> ─┼─► COGROUPKSTREAM-MERGE
    ...                                                                          ─┘

The store (``COGROUPKSTREAM-AGGREGATE-STATE-STORE-<n>`` unless named) is drawn first, then the
repartition topics (named after the store, or the ``Grouped`` name), then one aggregate processor per
input (``<named>-cogroup-agg-<i>``), then the merge (``<named>-cogroup-merge``). ``windowed_by`` takes
``TimeWindows``, ``SlidingWindows`` or ``SessionWindows`` and reuses the windowed aggregation
processors of :mod:`edge.processor.ops.windowed`, ``sliding`` and ``session`` (Kafka: emit on update
only). All inputs must be co-partitioned (same partition count), which the runtime checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from edge.dsl.builder import store_spec
from edge.dsl.kstream import repartition_node
from edge.dsl.ktable import KTable, OldValuesRequest
from edge.dsl.options import Materialized, Named, materialized_of, name_of
from edge.dsl.windowed import SessionWindowedKStream, TimeWindowedKStream
from edge.dsl.windows import SessionWindows, SlidingWindows, TimeWindows
from edge.errors import TopologyError
from edge.processor.ops.aggregate import KStreamAggregate
from edge.processor.ops.getters import StoreGetter, ValueGetterSupplier
from edge.processor.ops.session import KStreamSessionWindowAggregate
from edge.processor.ops.sliding import KStreamSlidingWindowAggregate
from edge.processor.ops.stream import KStreamPassThrough
from edge.processor.ops.windowed import KStreamWindowAggregate, SessionStoreGetter, WindowStoreGetter
from edge.topology import naming
from edge.topology.graph import GraphNode, ProcessorGraphNode

if TYPE_CHECKING:
    from edge.dsl.grouped import KGroupedStream
    from edge.topology.stores import StoreSpec

NamedLike = Named | str | None
MaterializedLike = Materialized | str | None
Aggregator = Callable[[Any, Any, Any], Any]
#: make(store_name, aggregator) -> the aggregate processor of one input
MakeProcessor = Callable[[str, Aggregator], Any]


def _check_aggregator(aggregator: Any) -> None:
    if not callable(aggregator):
        raise TopologyError("cogroup: aggregator must be a callable(key, value, aggregate) -> aggregate")


def _check_initializer(initializer: Any) -> None:
    if not callable(initializer):
        raise TopologyError("cogroup aggregate: initializer must be a callable() -> initial aggregate")


class CogroupedKStream:
    """Grouped streams that share one aggregate; add inputs with :meth:`cogroup`, then :meth:`aggregate`
    (or :meth:`windowed_by`)."""

    def __init__(self, first: KGroupedStream, aggregator: Aggregator) -> None:
        _check_aggregator(aggregator)
        self._builder = first._builder
        self._first = first
        #: grouped stream -> its aggregator, in the order given (Kafka's LinkedHashMap: a stream added
        #: twice keeps its first position and its last aggregator)
        self._patterns: dict[int, tuple[KGroupedStream, Aggregator]] = {id(first): (first, aggregator)}
        #: repartition nodes made for an input, reused by later aggregations of this cogroup
        self._parents: dict[int, GraphNode] = {}

    def cogroup(self, grouped: KGroupedStream, aggregator: Aggregator) -> CogroupedKStream:
        """Add ``grouped`` with its own ``aggregator(key, value, aggregate)``; its values may be of any
        type, the aggregate type is shared."""
        from edge.dsl.grouped import KGroupedStream

        if not isinstance(grouped, KGroupedStream):
            raise TopologyError(f"cogroup: expected a KGroupedStream, got {type(grouped).__name__}")
        if grouped._builder is not self._builder:
            raise TopologyError("cogroup: every grouped stream must come from the same StreamsBuilder")
        _check_aggregator(aggregator)
        self._patterns[id(grouped)] = (grouped, aggregator)
        return self

    def aggregate(
        self,
        initializer: Callable[[], Any],
        named: NamedLike = None,
        materialized: MaterializedLike = None,
    ) -> KTable:
        """The aggregate per key, starting from ``initializer()``; each record is folded in by its own
        stream's aggregator. Null keys and values are skipped."""
        _check_initializer(initializer)
        m = materialized_of(materialized)
        store_name = m.store_name or self._builder.names.store(naming.COGROUP_AGGREGATE)
        spec = store_spec(m, store_name, self._key_serde(m), None)

        def make(store: str, aggregator: Aggregator) -> Any:
            return KStreamAggregate(store, initializer, aggregator)

        old_values = OldValuesRequest()
        merge = self._build(store_name, spec, name_of(named), make, old_values)
        getter = ValueGetterSupplier(lambda: StoreGetter(store_name), [store_name])
        return KTable(
            self._builder, merge, spec.key_serde, spec.value_serde, store_name, getter,
            old_values=old_values.enable,
        )  # fmt: skip

    def windowed_by(
        self, windows: TimeWindows | SlidingWindows | SessionWindows
    ) -> TimeWindowedCogroupedKStream | SessionWindowedCogroupedKStream:
        """Aggregate per window: tumbling/hopping or sliding windows, or sessions."""
        if isinstance(windows, (TimeWindows, SlidingWindows)):
            return TimeWindowedCogroupedKStream(self, windows)
        if isinstance(windows, SessionWindows):
            return SessionWindowedCogroupedKStream(self, windows)
        raise TopologyError(
            f"windowed_by expects TimeWindows, SlidingWindows or SessionWindows, got {type(windows).__name__}"
        )

    # -- building ---------------------------------------------------------------------------------------
    def _key_serde(self, m: Materialized) -> Any:
        return m.key_serde or self._first.key_serde

    def _parent_of(self, grouped: KGroupedStream, store_name: str) -> GraphNode:
        """Kafka's ``processRepartitions``: an input whose key may have changed goes through a
        repartition topic (``<Grouped name or store>-repartition``) first; the names are drawn every
        time (as Kafka does), the node is made once per cogroup."""
        if not grouped._repartition_required:
            return grouped._node
        parent = self._parents.get(id(grouped))
        prefix = grouped._repartition_name or store_name
        if parent is not None:
            for prefix_kind in (naming.SINK, naming.FILTER, naming.SOURCE):
                self._builder.names.processor(prefix_kind)
            return parent
        node = repartition_node(self._builder, grouped._node, prefix, grouped.key_serde, grouped.value_serde)
        self._parents[id(grouped)] = node
        return node

    def _build(
        self,
        store_name: str,
        spec: StoreSpec,
        named: str | None,
        make: MakeProcessor,
        old_values: OldValuesRequest,
    ) -> GraphNode:
        """One aggregating processor per input and their merge; ``old_values`` reaches every one of them
        (Kafka's ``KTablePassThrough`` enables old values on each of its parents)."""
        names = self._builder.names
        parents = [(self._parent_of(g, store_name), agg) for g, agg in self._patterns.values()]
        processors: list[GraphNode] = []
        for i, (parent, aggregator) in enumerate(parents):
            explicit = f"{named}-cogroup-agg-{i}" if named else None
            proc_name = names.processor(naming.COGROUP_AGGREGATE, explicit)

            def supplier(agg: Aggregator = aggregator) -> Any:
                return old_values.apply(make(store_name, agg))

            processors.append(
                self._builder.add_node(
                    ProcessorGraphNode(
                        proc_name,
                        [parent],
                        supplier,
                        stores=[store_name],
                        new_stores=[spec] if i == 0 else None,
                    )
                )
            )
        merge_name = names.processor(naming.COGROUP_MERGE, f"{named}-cogroup-merge" if named else None)
        return self._builder.add_node(ProcessorGraphNode(merge_name, processors, KStreamPassThrough))


class _WindowedCogrouped:
    """What time- and session-windowed cogroups share: Kafka's rules of the windowed aggregations
    (retention, store kind, windowed key serde), borrowed from :mod:`edge.dsl.windowed`."""

    _rules: TimeWindowedKStream | SessionWindowedKStream

    def __init__(self, cogrouped: CogroupedKStream, windows: Any) -> None:
        self._cogrouped = cogrouped
        self._windows = windows

    def _windowed(
        self,
        initializer: Callable[[], Any],
        named: NamedLike,
        materialized: MaterializedLike,
        make: MakeProcessor,
    ) -> KTable:
        _check_initializer(initializer)
        cg = self._cogrouped
        m = materialized_of(materialized)
        store_name = m.store_name or cg._builder.names.store(naming.COGROUP_AGGREGATE)
        rules = self._rules
        session = isinstance(rules, SessionWindowedKStream)
        spec = store_spec(m, store_name, cg._key_serde(m), None, "session" if session else "window")
        spec.kind = "session" if session else "window"
        spec.window_size_ms = rules._window_size()
        spec.retention_ms = rules._check_retention(store_name, m.retention_ms)
        old_values = OldValuesRequest()
        merge = cg._build(store_name, spec, name_of(named), make, old_values)
        merge.windows = self._windows  # type: ignore[attr-defined]  # suppress() reads the grace here
        getter_cls = SessionStoreGetter if session else WindowStoreGetter
        getter = ValueGetterSupplier(lambda: getter_cls(store_name), [store_name])
        key_serde = None if spec.key_serde is None else rules._windowed_key_serde(spec.key_serde)
        return KTable(
            cg._builder, merge, key_serde, spec.value_serde, store_name, getter, old_values=old_values.enable
        )


class TimeWindowedCogroupedKStream(_WindowedCogrouped):
    """A cogroup over tumbling/hopping (``TimeWindows``) or sliding (``SlidingWindows``) windows."""

    def __init__(self, cogrouped: CogroupedKStream, windows: TimeWindows | SlidingWindows) -> None:
        super().__init__(cogrouped, windows)
        self._rules = TimeWindowedKStream(cogrouped._first, windows)

    def aggregate(
        self,
        initializer: Callable[[], Any],
        named: NamedLike = None,
        materialized: MaterializedLike = None,
    ) -> KTable:
        """The aggregate per key and window, keyed by ``Windowed(key, window)``."""
        windows = self._windows
        cls = KStreamSlidingWindowAggregate if isinstance(windows, SlidingWindows) else KStreamWindowAggregate

        def make(store: str, aggregator: Aggregator) -> Any:
            return cls(store, windows, initializer, aggregator)

        return self._windowed(initializer, named, materialized, make)


class SessionWindowedCogroupedKStream(_WindowedCogrouped):
    """A cogroup over sessions (``SessionWindows``)."""

    def __init__(self, cogrouped: CogroupedKStream, windows: SessionWindows) -> None:
        super().__init__(cogrouped, windows)
        self._rules = SessionWindowedKStream(cogrouped._first, windows)

    def aggregate(
        self,
        initializer: Callable[[], Any],
        session_merger: Callable[[Any, Any, Any], Any],
        named: NamedLike = None,
        materialized: MaterializedLike = None,
    ) -> KTable:
        """The aggregate per key and session; ``session_merger(key, agg1, agg2)`` combines the aggregates
        of sessions a record joins together."""
        if not callable(session_merger):
            raise TopologyError("cogroup aggregate: session_merger must be a callable(key, agg1, agg2)")
        windows = self._windows

        def make(store: str, aggregator: Aggregator) -> Any:
            return KStreamSessionWindowAggregate(store, windows, initializer, aggregator, session_merger)

        return self._windowed(initializer, named, materialized, make)

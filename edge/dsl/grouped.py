"""KGroupedStream and KGroupedTable: the input of aggregations. Grouping itself writes nothing; the
aggregation decides the store (and so the repartition topic's name) and adds the repartition topic
when the key may have changed (always, for a table re-grouped by ``group_by``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from edge.dsl.builder import store_spec
from edge.dsl.kstream import repartition_node
from edge.dsl.ktable import KTable, OldValuesRequest
from edge.dsl.options import Materialized, Named, materialized_of, name_of
from edge.processor.ops import aggregate as ops
from edge.processor.ops.getters import StoreGetter, ValueGetterSupplier
from edge.serde import Serdes
from edge.topology import naming
from edge.topology.graph import GraphNode, ProcessorGraphNode, RepartitionGraphNode
from edge.topology.naming import check_topic_name

if TYPE_CHECKING:
    from edge.dsl.builder import StreamsBuilder
    from edge.serde import Serde

NamedLike = Named | str | None


def _count_init() -> int:
    return 0


def _count_add(_key: Any, _value: Any, agg: int) -> int:
    return agg + 1


def _count_sub(_key: Any, _value: Any, agg: int) -> int:
    return agg - 1


class _Grouped:
    _PREFIXES: dict[str, str]

    def __init__(
        self,
        builder: StreamsBuilder,
        node: GraphNode,
        key_serde: Serde | None,
        value_serde: Serde | None,
        repartition_required: bool,
        repartition_name: str | None,
    ) -> None:
        self._builder = builder
        self._node = node
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._repartition_required = repartition_required
        self._repartition_name = repartition_name

    def _aggregate(
        self,
        kind: str,
        named: NamedLike,
        materialized: Materialized | str | None,
        default_value_serde: Serde | None,
        make: Callable[[str], Any],
        *,
        change_values: bool = False,
    ) -> KTable:
        names = self._builder.names
        m = materialized_of(materialized)
        store_name = m.store_name or names.store(self._PREFIXES[kind])
        spec = store_spec(m, store_name, self.key_serde, default_value_serde)
        parent = self._node
        if change_values:
            # Kafka's KGroupedTableImpl.doAggregate: sink, source, then the aggregate's name; the
            # aggregate's Named names them <name>-sink/-source; no null-key filter node
            explicit = name_of(named)
            sink = names.processor(naming.SINK, f"{explicit}-sink" if explicit else None)
            source = names.processor(naming.SOURCE, f"{explicit}-source" if explicit else None)
            proc_name = names.processor(self._PREFIXES[kind], explicit)
            cached = getattr(self, "_table_repartition", None)
            if cached is not None and self._repartition_name is not None:
                parent = cached  # Kafka reuses a user-named re-grouping's topic for every aggregation
            else:
                topic = f"{self._repartition_name or store_name}-repartition"
                check_topic_name(topic, "repartition topic")
                parent = RepartitionGraphNode(
                    [self._node],
                    topic,
                    sink,
                    source,
                    None,
                    self.key_serde,
                    self.value_serde,
                    change_values=True,
                )
                parent.optimizable = False
                self._builder.add_node(parent)
                self._table_repartition = parent
        else:
            proc_name = names.processor(self._PREFIXES[kind], name_of(named))
            if self._repartition_required:
                cached = getattr(self, "_stream_repartition", None)
                # Kafka's GroupedStreamAggregateBuilder: the names are drawn every time, but a
                # user-named grouping (Grouped.as_) reuses its repartition topic
                node = repartition_node(
                    self._builder,
                    parent,
                    self._repartition_name or store_name,
                    self.key_serde,
                    self.value_serde,
                    register=cached is None or self._repartition_name is None,
                )
                parent = node if cached is None or self._repartition_name is None else cached
                self._stream_repartition = parent
        old_values = OldValuesRequest()
        node = self._builder.add_node(
            ProcessorGraphNode(
                proc_name,
                [parent],
                lambda: old_values.apply(make(store_name)),
                stores=[store_name],
                new_stores=[spec],
            )
        )
        getter = ValueGetterSupplier(lambda: StoreGetter(store_name), [store_name])
        return KTable(
            self._builder, node, spec.key_serde, spec.value_serde, store_name, getter,
            old_values=old_values.enable,
        )  # fmt: skip


class KGroupedStream(_Grouped):
    _PREFIXES = {"aggregate": naming.AGGREGATE, "reduce": naming.REDUCE}

    def windowed_by(self, windows: Any) -> Any:
        """Aggregate per window: ``TimeWindows`` or ``SlidingWindows`` give a ``TimeWindowedKStream``,
        ``SessionWindows`` a ``SessionWindowedKStream`` (see :mod:`edge.dsl.windowed`)."""
        from edge.dsl.windowed import windowed_by

        return windowed_by(self, windows)

    def cogroup(self, aggregator: Callable[[Any, Any, Any], Any]) -> Any:
        """Start a cogroup (KIP-150): this stream folded in by ``aggregator(key, value, aggregate)``; add
        other grouped streams with ``.cogroup(other, their_aggregator)``, then ``.aggregate(...)``. One
        store holds the shared aggregate (see :mod:`edge.dsl.cogrouped`)."""
        from edge.dsl.cogrouped import CogroupedKStream

        return CogroupedKStream(self, aggregator)

    def count(self, named: NamedLike = None, materialized: Materialized | str | None = None) -> KTable:
        """Records per key (null keys/values skipped); the store's values default to the long serde."""
        return self._aggregate(
            "aggregate",
            named,
            materialized,
            Serdes.long(),
            lambda store: ops.KStreamCount(store),
        )

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        named: NamedLike = None,
        materialized: Materialized | str | None = None,
    ) -> KTable:
        """``reducer(aggregate, value)``; the first value of a key is its initial aggregate."""
        return self._aggregate(
            "reduce", named, materialized, self.value_serde, lambda store: ops.KStreamReduce(store, reducer)
        )

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        named: NamedLike = None,
        materialized: Materialized | str | None = None,
    ) -> KTable:
        """``aggregator(key, value, aggregate) -> aggregate``, starting from ``initializer()``."""
        return self._aggregate(
            "aggregate",
            named,
            materialized,
            None,
            lambda store: ops.KStreamAggregate(store, initializer, aggregator),
        )


class KGroupedTable(_Grouped):
    """A re-keyed table: aggregations subtract a row's old value and add its new one."""

    _PREFIXES = {"aggregate": naming.KTABLE_AGGREGATE, "reduce": naming.KTABLE_REDUCE}

    def __init__(
        self,
        builder: StreamsBuilder,
        node: GraphNode,
        key_serde: Serde | None,
        value_serde: Serde | None,
        repartition_name: str | None,
    ) -> None:
        super().__init__(builder, node, key_serde, value_serde, True, repartition_name)

    def _table_aggregate(
        self,
        kind: str,
        named: NamedLike,
        materialized: Materialized | str | None,
        default_value_serde: Serde | None,
        make: Callable[[str], Any],
    ) -> KTable:
        return self._aggregate(kind, named, materialized, default_value_serde, make, change_values=True)

    def count(self, named: NamedLike = None, materialized: Materialized | str | None = None) -> KTable:
        return self._table_aggregate(
            "aggregate",
            named,
            materialized,
            Serdes.long(),
            lambda store: ops.KTableAggregate(store, _count_init, _count_add, _count_sub),
        )

    def reduce(
        self,
        adder: Callable[[Any, Any], Any],
        subtractor: Callable[[Any, Any], Any],
        named: NamedLike = None,
        materialized: Materialized | str | None = None,
    ) -> KTable:
        return self._table_aggregate(
            "reduce",
            named,
            materialized,
            self.value_serde,
            lambda store: ops.KTableReduce(store, adder, subtractor),
        )

    def aggregate(
        self,
        initializer: Callable[[], Any],
        adder: Callable[[Any, Any, Any], Any],
        subtractor: Callable[[Any, Any, Any], Any],
        named: NamedLike = None,
        materialized: Materialized | str | None = None,
    ) -> KTable:
        """``adder(key, new_value, agg)`` for rows entering a group, ``subtractor(key, old_value, agg)``
        for rows leaving it (a deleted row, or the old group of a row whose key changed)."""
        return self._table_aggregate(
            "aggregate",
            named,
            materialized,
            None,
            lambda store: ops.KTableAggregate(store, initializer, adder, subtractor),
        )

"""KTable (a changelog: the latest value per key, None deletes) and GlobalKTable (a table replicated to
every task, only for lookups)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from edge.dsl.builder import store_spec
from edge.dsl.options import Grouped, Materialized, Named, materialized_of, name_of
from edge.errors import TopologyError
from edge.processor.ops import table as ops
from edge.processor.ops.getters import (
    FilterGetter,
    JoinGetter,
    MapValuesGetter,
    StoreGetter,
    ValueGetterSupplier,
)
from edge.processor.ops.joins import KTableKTableJoinSide
from edge.topology import naming
from edge.topology.graph import GraphNode, ProcessorGraphNode

if TYPE_CHECKING:
    from edge.dsl.builder import StreamsBuilder
    from edge.dsl.grouped import KGroupedTable
    from edge.dsl.kstream import KStream
    from edge.dsl.suppressed import Suppressed
    from edge.serde import Serde

NamedLike = Named | str | None


class GlobalKTable:
    def __init__(self, store_name: str, key_serde: Serde | None, value_serde: Serde | None) -> None:
        self.queryable_store_name = store_name
        self.key_serde = key_serde
        self.value_serde = value_serde

    def getter_supplier(self) -> ValueGetterSupplier:
        name = self.queryable_store_name
        return ValueGetterSupplier(lambda: StoreGetter(name), [name])


class KTable:
    def __init__(
        self,
        builder: StreamsBuilder,
        node: GraphNode,
        key_serde: Serde | None,
        value_serde: Serde | None,
        store_name: str | None,
        getter: ValueGetterSupplier,
    ) -> None:
        self._builder = builder
        self._node = node
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.queryable_store_name = store_name
        self._getter = getter

    @property
    def name(self) -> str:
        return self._node.name

    def getter_supplier(self) -> ValueGetterSupplier:
        return self._getter

    def _materialize(
        self, materialized: Materialized | str | None, prefix: str, value_serde: Serde | None
    ) -> tuple[Any, str | None]:
        """A StoreSpec when the user asked for a store (Materialized given), else None."""
        if materialized is None:
            return None, None
        m = materialized_of(materialized)
        name = m.store_name or self._builder.names.store(prefix)
        spec = store_spec(m, name, self.key_serde, value_serde)
        return spec, name

    def _derive(
        self,
        prefix: str,
        named: NamedLike,
        make: Callable[[str | None], Any],
        materialized: Materialized | str | None,
        value_serde: Serde | None,
        getter_from_parent: Callable[[], Any],
    ) -> KTable:
        spec, store_name = self._materialize(materialized, prefix, value_serde)
        name = self._builder.names.processor(prefix, name_of(named))
        node = self._builder.add_node(
            ProcessorGraphNode(
                name,
                [self._node],
                lambda: make(store_name),
                stores=[store_name] if store_name else None,
                new_stores=[spec] if spec else None,
            )
        )
        if store_name is not None:
            sname = store_name
            getter = ValueGetterSupplier(lambda: StoreGetter(sname), [sname])
        else:
            getter = ValueGetterSupplier(getter_from_parent, self._getter.store_names)
        vserde = spec.value_serde if spec is not None else value_serde
        return KTable(self._builder, node, self.key_serde, vserde, store_name, getter)

    def filter(
        self,
        predicate: Callable[[Any, Any], bool],
        named: NamedLike = None,
        materialized: Materialized | str | None = None,
    ) -> KTable:
        """Rows failing ``predicate(key, value)`` are absent: a row that stops matching is deleted."""
        parent = self._getter
        return self._derive(
            naming.KTABLE_FILTER,
            named,
            lambda store: ops.KTableFilter(predicate, False, store),
            materialized,
            self.value_serde,
            lambda: FilterGetter(parent.make(), predicate, False),
        )

    def filter_not(
        self,
        predicate: Callable[[Any, Any], bool],
        named: NamedLike = None,
        materialized: Materialized | str | None = None,
    ) -> KTable:
        parent = self._getter
        return self._derive(
            naming.KTABLE_FILTER,
            named,
            lambda store: ops.KTableFilter(predicate, True, store),
            materialized,
            self.value_serde,
            lambda: FilterGetter(parent.make(), predicate, True),
        )

    def map_values(
        self,
        mapper: Callable[..., Any],
        named: NamedLike = None,
        materialized: Materialized | str | None = None,
        *,
        with_key: bool = False,
    ) -> KTable:
        fn: Callable[[Any, Any], Any] = mapper if with_key else (lambda _k, v: mapper(v))
        parent = self._getter
        return self._derive(
            naming.KTABLE_MAPVALUES,
            named,
            lambda store: ops.KTableMapValues(fn, store),
            materialized,
            None,
            lambda: MapValuesGetter(parent.make(), fn),
        )

    def to_stream(self, named: NamedLike = None) -> KStream:
        """The table's changelog as a stream: every update, with ``None`` values for deletes."""
        from edge.dsl.kstream import KStream

        name = self._builder.names.processor(naming.KTABLE_TOSTREAM, name_of(named))
        node = self._builder.add_node(ProcessorGraphNode(name, [self._node], ops.KTableToStream))
        return KStream(self._builder, node, self.key_serde, self.value_serde)

    def suppress(self, suppressed: Suppressed) -> KTable:
        """Hold updates back: final results per window (``Suppressed.until_window_closes``) or at most
        one update per key per time limit (``Suppressed.until_time_limit``). See edge.dsl.suppressed."""
        from edge.dsl.suppressed import suppress

        return suppress(self, suppressed)

    def group_by(
        self, selector: Callable[[Any, Any], tuple[Any, Any]], grouped: Grouped | None = None
    ) -> KGroupedTable:
        """Re-key rows with ``selector(key, value) -> (new_key, new_value)`` for a table aggregation."""
        from edge.dsl.grouped import KGroupedTable

        g = grouped or Grouped()
        name = self._builder.names.processor(naming.KTABLE_SELECT)
        node = self._builder.add_node(
            ProcessorGraphNode(name, [self._node], lambda: ops.KTableRepartitionMap(selector))
        )
        return KGroupedTable(self._builder, node, g.key_serde, g.value_serde, g.name)

    # -- table-table joins ----------------------------------------------------------------------------
    def join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        named: NamedLike = None,
        materialized: Materialized | str | None = None,
    ) -> KTable:
        """A row exists where both tables have the key: ``joiner(this_value, other_value)``."""
        return self._join(other, joiner, named, materialized, naming.KTABLE_JOIN, True, True)

    def left_join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        named: NamedLike = None,
        materialized: Materialized | str | None = None,
    ) -> KTable:
        """A row exists where this table has the key; ``other_value`` is ``None`` without a match."""
        return self._join(other, joiner, named, materialized, naming.KTABLE_LEFTJOIN, True, False)

    def outer_join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        named: NamedLike = None,
        materialized: Materialized | str | None = None,
    ) -> KTable:
        """A row exists where either table has the key; the missing side is ``None``."""
        return self._join(other, joiner, named, materialized, naming.KTABLE_OUTERJOIN, False, False)

    def _join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        named: NamedLike,
        materialized: Materialized | str | None,
        prefixes: tuple[str, str],
        need_left: bool,
        need_right: bool,
    ) -> KTable:
        if not isinstance(other, KTable):
            raise TopologyError(f"KTable join: expected a KTable, got {type(other).__name__}")
        if other._builder is not self._builder:
            raise TopologyError("KTable join: both tables must come from the same StreamsBuilder")
        names = self._builder.names
        explicit = name_of(named)
        merge_name = names.processor(naming.KTABLE_MERGE, explicit)
        this_name = names.processor(prefixes[0], f"{explicit}-join-this" if explicit else None)
        other_name = names.processor(prefixes[1], f"{explicit}-join-other" if explicit else None)
        spec, store_name = self._materialize(materialized, naming.KTABLE_MERGE, None)
        left_getter, right_getter = self._getter, other._getter
        this_node = ProcessorGraphNode(
            this_name,
            [self._node],
            lambda: KTableKTableJoinSide(right_getter, joiner, True, need_left, need_right),
            stores=right_getter.store_names,
        )
        other_node = ProcessorGraphNode(
            other_name,
            [other._node],
            lambda: KTableKTableJoinSide(left_getter, joiner, False, need_left, need_right),
            stores=left_getter.store_names,
        )
        self._builder.add_node(this_node)
        self._builder.add_node(other_node)
        merge = self._builder.add_node(
            ProcessorGraphNode(
                merge_name,
                [this_node, other_node],
                lambda: ops.KTableJoinMerger(store_name),
                stores=[store_name] if store_name else None,
                new_stores=[spec] if spec else None,
            )
        )
        if store_name is not None:
            sname = store_name
            getter = ValueGetterSupplier(lambda: StoreGetter(sname), [sname])
        else:
            getter = ValueGetterSupplier(
                lambda: JoinGetter(left_getter.make(), right_getter.make(), joiner, need_left, need_right),
                list(dict.fromkeys(left_getter.store_names + right_getter.store_names)),
            )
        vserde = spec.value_serde if spec is not None else None
        return KTable(self._builder, merge, self.key_serde, vserde, store_name, getter)

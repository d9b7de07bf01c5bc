"""KTable (a changelog: the latest value per key, None deletes) and GlobalKTable (a table replicated to
every task, only for lookups)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from edge.dsl.builder import store_spec
from edge.dsl.options import Grouped, Materialized, Named, TableJoined, materialized_of, name_of
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
    from edge.topology.stores import StoreSpec

NamedLike = Named | str | None


class GlobalKTable:
    def __init__(self, store_name: str, key_serde: Serde | None, value_serde: Serde | None) -> None:
        self.queryable_store_name = store_name
        self.key_serde = key_serde
        self.value_serde = value_serde

    def getter_supplier(self) -> ValueGetterSupplier:
        name = self.queryable_store_name
        return ValueGetterSupplier(lambda: StoreGetter(name), [name])


class _Flag:
    """A flag the DSL may still flip after an operator is declared (Kafka's ``sendOldValues`` is set on
    the processor supplier by later operators); processors read it when a task instantiates them."""

    __slots__ = ("value",)

    def __init__(self, value: bool = False) -> None:
        self.value = value


class OldValuesRequest:
    """Kafka's ``enableSendingOldValues`` on an aggregation's processor supplier: the aggregate's store
    always holds the previous value, so the table agrees at once (``enable``, the KTable's
    ``old_values`` hook), and its processors send old values only when a downstream operator asked
    (``apply``, when a task builds them). Without old values a cached aggregate's flush reads no old
    value per key from the store."""

    __slots__ = ("requested",)

    def __init__(self) -> None:
        self.requested = False

    def enable(self, _force_materialization: bool) -> bool:
        self.requested = True
        return True

    def apply(self, processor: Any) -> Any:
        processor.send_old_values = self.requested
        return processor


class TableSourceState:
    """Kafka's ``KTableSource`` bookkeeping for ``builder.table()`` and ``KStream.to_table()``.

    A source table is materialized only when it must be: its store was named (``Materialized.as_``), a
    join or another lookup needs its values (``KTable.getter_supplier``), or a downstream operator needs
    old values (``group_by``, ``suppress``, left/outer table joins). Otherwise its generated store name
    is only reserved, and the table has no store and no changelog topic, exactly as in Kafka."""

    def __init__(self, spec: StoreSpec, queryable: bool) -> None:
        self.spec = spec
        self.materialized = queryable
        self.send_old_values = False

    @property
    def store_name(self) -> str:
        return self.spec.name

    def materialize(self) -> None:
        self.materialized = True

    def enable_sending_old_values(self) -> None:
        self.send_old_values = True
        self.materialized = True

    def supplier(self) -> ops.KTableSource:
        """One processor per task, with the flags as they are when the topology is built."""
        return ops.KTableSource(
            self.spec.name if self.materialized else None, send_old_values=self.send_old_values
        )


class KTable:
    def __init__(
        self,
        builder: StreamsBuilder,
        node: GraphNode,
        key_serde: Serde | None,
        value_serde: Serde | None,
        store_name: str | None,
        getter: ValueGetterSupplier | Callable[[], ValueGetterSupplier],
        *,
        source: TableSourceState | None = None,
        old_values: Callable[[bool], bool] | None = None,
    ) -> None:
        """``getter`` may be a zero-argument callable: it is resolved on first use, so declaring an
        operator does not force its parent's materialization. ``source`` marks a source table;
        ``old_values(force)`` is the operator's ``enableSendingOldValues`` (None: always available,
        e.g. an aggregation's store)."""
        self._builder = builder
        self._node = node
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.queryable_store_name = store_name
        self._getter_impl = getter
        self._source = source
        self._old_values_hook = old_values
        self._send_old_values = False

    @property
    def name(self) -> str:
        return self._node.name

    @property
    def _getter(self) -> ValueGetterSupplier:
        return self.getter_supplier()

    def getter_supplier(self) -> ValueGetterSupplier:
        """Kafka's ``valueGetterSupplier()``: a source table asked for its values gets materialized."""
        if self._source is not None:
            self._source.materialize()
        getter = self._getter_impl
        if not isinstance(getter, ValueGetterSupplier):
            getter = self._getter_impl = getter()
        return getter

    def enable_sending_old_values(self, force_materialization: bool) -> bool:
        """Kafka's ``KTableImpl.enableSendingOldValues``: make this table's updates carry the previous
        value. An unmaterialized source table only agrees when ``force_materialization`` (it then gets
        a store); a filter or mapValues asks its parent. Returns whether old values are sent."""
        if not self._send_old_values:
            if self._source is not None:
                if not force_materialization and not self._source.materialized:
                    return False
                self._source.enable_sending_old_values()
            elif self._old_values_hook is not None and not self._old_values_hook(force_materialization):
                return False
            self._send_old_values = True
        return True

    def _materialize(
        self, materialized: Materialized | str | None, prefix: str, value_serde: Serde | None
    ) -> tuple[Any, str | None, Serde | None]:
        """Kafka's filter/mapValues rule: a store only when the Materialized names one. A Materialized
        without a name still reserves a store name (so later generated names match Kafka's) and sets
        the serdes, but the table stays unmaterialized. Returns (spec, store name, value serde)."""
        if materialized is None:
            return None, None, value_serde
        m = materialized_of(materialized)
        if m.store_name is None:
            self._builder.names.store(prefix)
            return None, None, m.value_serde or value_serde
        spec = store_spec(m, m.store_name, self.key_serde, value_serde)
        return spec, m.store_name, spec.value_serde

    def _derive(
        self,
        prefix: str,
        named: NamedLike,
        make: Callable[[str | None, bool], Any],
        materialized: Materialized | str | None,
        value_serde: Serde | None,
        getter_from_parent: Callable[[ValueGetterSupplier], Callable[[], Any]],
        *,
        old_values_now: bool = False,
    ) -> KTable:
        """A filter/mapValues-like table: ``make(store_name, send_old_values)`` builds the processor;
        ``old_values_now`` asks the parent for old values at once (Kafka's KTableFilter constructor)."""
        spec, store_name, vserde = self._materialize(materialized, prefix, value_serde)
        name = self._builder.names.processor(prefix, name_of(named))
        flag = _Flag()
        node = self._builder.add_node(
            ProcessorGraphNode(
                name,
                [self._node],
                lambda: make(store_name, flag.value),
                stores=[store_name] if store_name else None,
                new_stores=[spec] if spec else None,
            )
        )
        if old_values_now:
            flag.value = self.enable_sending_old_values(False)
        parent = self

        def old_values(force: bool) -> bool:
            if store_name is not None or parent.enable_sending_old_values(force):
                flag.value = True
            return flag.value

        getter: ValueGetterSupplier | Callable[[], ValueGetterSupplier]
        if store_name is not None:
            sname = store_name
            getter = ValueGetterSupplier(lambda: StoreGetter(sname), [sname])
        else:

            def getter() -> ValueGetterSupplier:
                supplier = parent.getter_supplier()
                return ValueGetterSupplier(getter_from_parent(supplier), supplier.store_names)

        return KTable(self._builder, node, self.key_serde, vserde, store_name, getter, old_values=old_values)

    def filter(
        self,
        predicate: Callable[[Any, Any], bool],
        named: NamedLike = None,
        materialized: Materialized | str | None = None,
    ) -> KTable:
        """Rows failing ``predicate(key, value)`` are absent: a row that stops matching is deleted.

        As in Kafka, a rejected record is forwarded as a delete (a tombstone after ``to_stream``) unless
        the parent can send old values (it is materialized): only then can the filter tell that the key
        was not in its output before, and skip the delete."""
        return self._derive(
            naming.KTABLE_FILTER,
            named,
            lambda store, old: ops.KTableFilter(predicate, False, store, old),
            materialized,
            self.value_serde,
            lambda parent: lambda: FilterGetter(parent.make(), predicate, False),
            old_values_now=True,
        )

    def filter_not(
        self,
        predicate: Callable[[Any, Any], bool],
        named: NamedLike = None,
        materialized: Materialized | str | None = None,
    ) -> KTable:
        return self._derive(
            naming.KTABLE_FILTER,
            named,
            lambda store, old: ops.KTableFilter(predicate, True, store, old),
            materialized,
            self.value_serde,
            lambda parent: lambda: FilterGetter(parent.make(), predicate, True),
            old_values_now=True,
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
        return self._derive(
            naming.KTABLE_MAPVALUES,
            named,
            lambda store, old: ops.KTableMapValues(fn, store, old),
            materialized,
            None,
            lambda parent: lambda: MapValuesGetter(parent.make(), fn),
        )

    def to_stream(
        self, key_mapper: Callable[[Any, Any], Any] | NamedLike = None, named: NamedLike = None
    ) -> KStream:
        """The table's changelog as a stream: every update, with ``None`` values for deletes.

        ``to_stream(key_mapper)`` (Kafka's ``toStream(KeyValueMapper)``) re-keys each update with
        ``key_mapper(key, value)``: ``to_stream().select_key(key_mapper)``, so the stream is marked for
        repartitioning. ``to_stream("name")`` / ``to_stream(Named.as_("name"))`` name the processor."""
        from edge.dsl.kstream import KStream

        if isinstance(key_mapper, (str, Named)):
            if named is not None:
                raise TopologyError("to_stream(): give the name once (named= or the first argument)")
            key_mapper, named = None, key_mapper
        if key_mapper is not None and not callable(key_mapper):
            raise TopologyError(
                f"to_stream(): key_mapper must be a callable (key, value) -> new key, got {key_mapper!r}"
            )
        name = self._builder.names.processor(naming.KTABLE_TOSTREAM, name_of(named))
        node = self._builder.add_node(ProcessorGraphNode(name, [self._node], ops.KTableToStream))
        stream = KStream(self._builder, node, self.key_serde, self.value_serde)
        return stream if key_mapper is None else stream.select_key(key_mapper)

    def suppress(self, suppressed: Suppressed) -> KTable:
        """Hold updates back: final results per window (``Suppressed.until_window_closes``) or at most
        one update per key per time limit (``Suppressed.until_time_limit``). See edge.dsl.suppressed."""
        from edge.dsl.suppressed import suppress

        return suppress(self, suppressed)

    def group_by(
        self, selector: Callable[[Any, Any], tuple[Any, Any] | None], grouped: Grouped | None = None
    ) -> KGroupedTable:
        """Re-key rows with ``selector(key, value) -> (new_key, new_value)`` for a table aggregation.

        The selector returns a pair, or None to leave the row out; a pair with a null key is left out
        too (both silently, as in Kafka). Anything else fails the record with an error naming the
        operator (a 2-character string would otherwise unpack into a key and a value). ``Grouped.as_``
        names the select processor and the repartition topic, as in Kafka. The table is made to send
        old values (and so materialized, if it is a source table): the aggregation subtracts them."""
        from edge.dsl.grouped import KGroupedTable

        if not callable(selector):
            raise TopologyError(
                f"group_by(): selector must be a callable (key, value) -> (key, value), got {selector!r}"
            )
        g = grouped or Grouped()
        name = self._builder.names.processor(naming.KTABLE_SELECT, g.name)
        node = self._builder.add_node(
            ProcessorGraphNode(name, [self._node], lambda: ops.KTableRepartitionMap(selector, name))
        )
        self.enable_sending_old_values(True)
        return KGroupedTable(self._builder, node, g.key_serde, g.value_serde, g.name)

    # -- table-table joins ----------------------------------------------------------------------------
    def join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any] | None = None,
        named: NamedLike | TableJoined = None,
        materialized: Materialized | str | None = None,
        *,
        foreign_key_extractor: Callable[[Any], Any] | None = None,
    ) -> KTable:
        """A row exists where both tables have the key: ``joiner(this_value, other_value)``.

        With ``foreign_key_extractor(this_value) -> other_key`` it is a foreign-key join (KIP-213): each
        row of this table joins the row of ``other`` its value points to, whatever the partitioning
        (see :mod:`edge.dsl.fk_join`); ``named`` may then be a ``TableJoined``."""
        if foreign_key_extractor is not None:
            return self._fk_join(other, foreign_key_extractor, joiner, named, materialized, False)
        return self._join(other, joiner, named, materialized, naming.KTABLE_JOIN, True, True)  # type: ignore[arg-type]

    def left_join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any] | None = None,
        named: NamedLike | TableJoined = None,
        materialized: Materialized | str | None = None,
        *,
        foreign_key_extractor: Callable[[Any], Any] | None = None,
    ) -> KTable:
        """A row exists where this table has the key; ``other_value`` is ``None`` without a match.

        With ``foreign_key_extractor`` a foreign-key left join: a row whose foreign key is ``None`` or
        points nowhere still gives ``joiner(this_value, None)``."""
        if foreign_key_extractor is not None:
            return self._fk_join(other, foreign_key_extractor, joiner, named, materialized, True)
        return self._join(other, joiner, named, materialized, naming.KTABLE_LEFTJOIN, True, False)  # type: ignore[arg-type]

    def _fk_join(
        self,
        other: KTable,
        extractor: Callable[[Any], Any],
        joiner: Callable[[Any, Any], Any] | None,
        named: NamedLike | TableJoined,
        materialized: Materialized | str | None,
        left_join: bool,
    ) -> KTable:
        from edge.dsl.fk_join import foreign_key_join

        if joiner is None:
            raise TopologyError("foreign-key join: joiner is required")
        return foreign_key_join(self, other, extractor, joiner, named, materialized, left_join=left_join)

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
        if joiner is None:
            raise TopologyError("KTable join: joiner is required")
        if isinstance(named, TableJoined):
            raise TopologyError("TableJoined is for foreign-key joins (pass foreign_key_extractor=)")
        if other._builder is not self._builder:
            raise TopologyError("KTable join: both tables must come from the same StreamsBuilder")
        names = self._builder.names
        explicit = name_of(named)
        # Kafka: the Materialized (and so a generated store name) comes before the join's names, and a
        # join result with a Materialized is always materialized
        spec = store_name = None
        if materialized is not None:
            m = materialized_of(materialized)
            store_name = m.store_name or names.store(naming.KTABLE_MERGE)
            spec = store_spec(m, store_name, self.key_serde, None)
        merge_name = names.processor(naming.KTABLE_MERGE, explicit)
        if not need_right:  # left and outer joins (Kafka's leftOuter): this side's old values
            self.enable_sending_old_values(True)
        if not need_left:  # outer join (rightOuter): the other side's too
            other.enable_sending_old_values(True)
        this_name = names.processor(prefixes[0], f"{explicit}-join-this" if explicit else None)
        other_name = names.processor(prefixes[1], f"{explicit}-join-other" if explicit else None)
        left_getter, right_getter = self._getter, other._getter
        # Kafka's sendOldValues of the join processors and the merger: set once a downstream operator
        # asks the join result for old values
        old_flag = _Flag()
        this_node = ProcessorGraphNode(
            this_name,
            [self._node],
            lambda: KTableKTableJoinSide(right_getter, joiner, True, need_left, need_right, old_flag),
            stores=right_getter.store_names,
        )
        other_node = ProcessorGraphNode(
            other_name,
            [other._node],
            lambda: KTableKTableJoinSide(left_getter, joiner, False, need_left, need_right, old_flag),
            stores=left_getter.store_names,
        )
        self._builder.add_node(this_node)
        self._builder.add_node(other_node)
        merge = self._builder.add_node(
            ProcessorGraphNode(
                merge_name,
                [this_node, other_node],
                lambda: ops.KTableJoinMerger(store_name, old_flag.value),
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

        def old_values(_force: bool) -> bool:
            """Kafka's KTableKTableJoinMerger: both parents must send old values (materializing them)."""
            self.enable_sending_old_values(True)
            other.enable_sending_old_values(True)
            old_flag.value = True
            return True

        return KTable(self._builder, merge, self.key_serde, vserde, store_name, getter, old_values=old_values)

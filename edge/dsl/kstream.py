"""KStream: an unbounded stream of independent records (inserts)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from edge.dsl.options import (
    Grouped,
    Joined,
    Materialized,
    Named,
    Produced,
    Repartitioned,
    materialized_of,
    name_of,
)
from edge.errors import TopologyError
from edge.processor.ops import stream as ops
from edge.processor.ops.joins import KStreamTableJoin
from edge.topology import naming
from edge.topology.graph import GraphNode, ProcessorGraphNode, RepartitionGraphNode, SinkGraphNode
from edge.topology.naming import check_topic_name

if TYPE_CHECKING:
    from edge.dsl.branched import BranchedKStream
    from edge.dsl.builder import StreamsBuilder
    from edge.dsl.grouped import KGroupedStream
    from edge.dsl.ktable import GlobalKTable, KTable
    from edge.dsl.stream_joined import StreamJoined
    from edge.dsl.windows import JoinWindows
    from edge.processor.api import ProcessorSupplier
    from edge.serde import Serde

NamedLike = Named | str | None


def repartition_node(
    builder: StreamsBuilder,
    parent: GraphNode,
    topic_prefix: str,
    key_serde: Serde | None,
    value_serde: Serde | None,
    *,
    null_key_filter: bool = True,
    change_values: bool = False,
    partitioner: Any = None,
    num_partitions: int | None = None,
    optimizable: bool = True,
    register: bool = True,
) -> RepartitionGraphNode:
    """Kafka's ``createRepartitionedSource``: generated names are always drawn (so later names do not
    shift); a user-chosen prefix names the nodes ``<topic>-sink``/``-filter``/``-source`` instead.

    ``optimizable``: Kafka's OptimizableRepartitionNode (joins, aggregations, ``to_table``), which
    ``topology.optimization`` may merge with the other repartitions of the same key-changing operation;
    ``repartition()`` and table re-groupings are not."""
    topic = topic_prefix if topic_prefix.endswith("-repartition") else f"{topic_prefix}-repartition"
    check_topic_name(topic, "repartition topic")
    sink = builder.names.processor(naming.SINK)
    flt = builder.names.processor(naming.FILTER)
    source = builder.names.processor(naming.SOURCE)
    if not naming.is_generated(topic_prefix):
        sink, flt, source = f"{topic}-sink", f"{topic}-filter", f"{topic}-source"
    node = RepartitionGraphNode(
        [parent],
        topic,
        sink,
        source,
        flt if null_key_filter else None,
        key_serde,
        value_serde,
        change_values=change_values,
        partitioner=partitioner,
        num_partitions=num_partitions,
    )
    node.optimizable = optimizable and not change_values
    if register:
        builder.add_node(node)
    else:  # names drawn only (Kafka reuses an existing repartition node): detach from the parent
        for parent in node.parents:
            parent.children.remove(node)
    return node


class KStream:
    def __init__(
        self,
        builder: StreamsBuilder,
        node: GraphNode,
        key_serde: Serde | None,
        value_serde: Serde | None,
        repartition_required: bool = False,
    ) -> None:
        self._builder = builder
        self._node = node
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.repartition_required = repartition_required

    @property
    def name(self) -> str:
        return self._node.name

    def _then(
        self,
        prefix: str,
        named: NamedLike,
        supplier: ProcessorSupplier,
        *,
        key_serde: Serde | bool | None = True,
        value_serde: Serde | bool | None = True,
        key_changed: bool = False,
        value_changed: bool = False,
        stores: list[str] | None = None,
    ) -> KStream:
        """Add a processor after this stream. ``True`` for a serde means "unchanged". ``key_changed`` /
        ``value_changed`` mark the node as Kafka's key-/value-changing operation (the optimizer merges
        the repartition topics that follow one key-changing operation)."""
        name = self._builder.names.processor(prefix, name_of(named))
        node = self._builder.add_node(ProcessorGraphNode(name, [self._node], supplier, stores))
        node.key_changing = key_changed  # type: ignore[attr-defined]
        node.value_changing = value_changed  # type: ignore[attr-defined]
        return KStream(
            self._builder,
            node,
            self.key_serde if key_serde is True else key_serde,  # type: ignore[arg-type]
            self.value_serde if value_serde is True else value_serde,  # type: ignore[arg-type]
            self.repartition_required or key_changed,
        )

    # -- stateless ----------------------------------------------------------------------------------
    def filter(self, predicate: Callable[[Any, Any], bool], named: NamedLike = None) -> KStream:
        return self._then(naming.FILTER, named, lambda: ops.KStreamFilter(predicate))

    def filter_not(self, predicate: Callable[[Any, Any], bool], named: NamedLike = None) -> KStream:
        return self._then(naming.FILTER, named, lambda: ops.KStreamFilter(predicate, negate=True))

    def map(self, mapper: Callable[[Any, Any], tuple[Any, Any]], named: NamedLike = None) -> KStream:
        """``mapper(key, value) -> (new_key, new_value)``; marks the stream for repartitioning."""
        return self._then(
            naming.MAP,
            named,
            lambda: ops.KStreamMap(mapper),
            key_serde=None,
            value_serde=None,
            key_changed=True,
        )

    def map_values(
        self, mapper: Callable[..., Any], named: NamedLike = None, *, with_key: bool = False
    ) -> KStream:
        """``mapper(value)`` (or ``mapper(key, value)`` with ``with_key=True``); the key is kept."""
        return self._then(
            naming.MAPVALUES,
            named,
            lambda: ops.KStreamMapValues(mapper, with_key),
            value_serde=None,
            value_changed=True,
        )

    def flat_map(
        self, mapper: Callable[[Any, Any], Iterable[tuple[Any, Any]]], named: NamedLike = None
    ) -> KStream:
        return self._then(
            naming.FLATMAP,
            named,
            lambda: ops.KStreamFlatMap(mapper),
            key_serde=None,
            value_serde=None,
            key_changed=True,
        )

    def flat_map_values(
        self, mapper: Callable[..., Iterable[Any]], named: NamedLike = None, *, with_key: bool = False
    ) -> KStream:
        return self._then(
            naming.FLATMAPVALUES,
            named,
            lambda: ops.KStreamFlatMapValues(mapper, with_key),
            value_serde=None,
            value_changed=True,
        )

    def select_key(self, mapper: Callable[[Any, Any], Any], named: NamedLike = None) -> KStream:
        return self._then(
            naming.KEY_SELECT, named, lambda: ops.KStreamSelectKey(mapper), key_serde=None, key_changed=True
        )

    def peek(self, action: Callable[[Any, Any], None], named: NamedLike = None) -> KStream:
        return self._then(naming.PEEK, named, lambda: ops.KStreamPeek(action, forward=True))

    def foreach(self, action: Callable[[Any, Any], None], named: NamedLike = None) -> None:
        self._then(naming.FOREACH, named, lambda: ops.KStreamPeek(action, forward=False))

    def split(self, named: NamedLike = None) -> BranchedKStream:
        from edge.dsl.branched import BranchedKStream

        return BranchedKStream(self, name_of(named))

    def merge(self, other: KStream, named: NamedLike = None) -> KStream:
        if other._builder is not self._builder:
            raise TopologyError("merge(): both streams must come from the same StreamsBuilder")
        name = self._builder.names.processor(naming.MERGE, name_of(named))
        node = self._builder.add_node(
            ProcessorGraphNode(name, [self._node, other._node], ops.KStreamPassThrough)
        )
        same_key = self.key_serde is other.key_serde
        same_value = self.value_serde is other.value_serde
        return KStream(
            self._builder,
            node,
            self.key_serde if same_key else None,
            self.value_serde if same_value else None,
            self.repartition_required or other.repartition_required,
        )

    def repartition(self, repartitioned: Repartitioned | None = None) -> KStream:
        """Write through an internal topic (``<name>-repartition``), e.g. after ``select_key``.

        As in Kafka, records with a null key are dropped before the topic (logged, counted in the
        dropped-records metric) unless a left join that accepts null keys follows downstream."""
        r = repartitioned or Repartitioned()
        key_serde = r.key_serde or self.key_serde
        value_serde = r.value_serde or self.value_serde
        prefix = r.name or self._builder.names.processor(naming.REPARTITION)
        node = repartition_node(
            self._builder,
            self._node,
            prefix,
            key_serde,
            value_serde,
            partitioner=r.partitioner,
            num_partitions=r.num_partitions,
            optimizable=False,
        )
        return KStream(self._builder, node, key_serde, value_serde, False)

    def to(self, topic: str | Callable[..., str], produced: Produced | None = None) -> None:
        """Write to ``topic``, or to the topic a ``TopicNameExtractor`` returns for each record: a
        callable ``(key, value)`` or, like Kafka's ``TopicNameExtractor.extract(key, value,
        RecordContext)``, ``(key, value, record_context)`` (chosen when it takes three arguments;
        ``record_context`` has ``topic``, ``partition``, ``offset``, ``timestamp`` and ``headers`` of
        the record being written). A returned name that is not a legal topic name fails the record."""
        p = produced or Produced()
        if isinstance(topic, str):
            check_topic_name(topic)
        elif not callable(topic) and not callable(getattr(topic, "extract", None)):
            raise TopologyError(f"to(): expected a topic name or a TopicNameExtractor, got {topic!r}")
        name = self._builder.names.processor(naming.SINK, p.name)
        self._builder.add_node(
            SinkGraphNode(
                name,
                [self._node],
                topic,
                p.key_serde or self.key_serde,
                p.value_serde or self.value_serde,
                p.partitioner,
            )
        )

    def process(self, supplier: ProcessorSupplier, *store_names: str, named: NamedLike = None) -> KStream:
        """Run a Processor API processor (``supplier()`` makes one per task) with access to the stores
        added by ``StreamsBuilder.add_state_store``; it may forward anything, so keys are assumed changed."""
        return self._then(
            naming.PROCESSOR,
            named,
            supplier,
            key_serde=None,
            value_serde=None,
            key_changed=True,
            stores=list(store_names),
        )

    def process_values(
        self, supplier: ProcessorSupplier, *store_names: str, named: NamedLike = None
    ) -> KStream:
        """Like ``process`` for processors that keep each record's key (Kafka's ``processValues``): the
        stream is not marked for repartitioning. Forwarding a record with another key is a bug."""
        return self._then(naming.PROCESSVALUES, named, supplier, value_serde=None, stores=list(store_names))

    def to_table(self, named: NamedLike = None, materialized: Materialized | str | None = None) -> KTable:
        """The stream as a table: each record upserts its key (a ``None`` value deletes it). A stream
        whose key changed is repartitioned first, so each key's rows live in one task."""
        from edge.dsl.builder import store_spec
        from edge.dsl.ktable import KTable, TableSourceState
        from edge.processor.ops.getters import StoreGetter, ValueGetterSupplier

        m = materialized_of(materialized)
        names = self._builder.names
        explicit = name_of(named)
        name = names.processor(naming.TOTABLE, explicit)
        store_name = m.store_name or names.store(naming.TOTABLE)
        spec = store_spec(m, store_name, self.key_serde, self.value_serde)
        state = TableSourceState(spec, m.store_name is not None)
        parent = self._node
        if self.repartition_required:
            parent = repartition_node(self._builder, parent, name, spec.key_serde, spec.value_serde)
        node = self._builder.add_node(
            ProcessorGraphNode(
                name,
                [parent],
                state.supplier,
                stores=[store_name],
                new_stores=[spec],
                stores_if=lambda: state.materialized,
            )
        )
        getter = ValueGetterSupplier(lambda: StoreGetter(store_name), [store_name])
        queryable = store_name if m.store_name is not None else None
        return KTable(self._builder, node, spec.key_serde, spec.value_serde, queryable, getter, source=state)

    # -- grouping -------------------------------------------------------------------------------------
    def group_by(self, selector: Callable[[Any, Any], Any], grouped: Grouped | None = None) -> KGroupedStream:
        from edge.dsl.grouped import KGroupedStream

        g = grouped or Grouped()
        keyed = self._then(
            naming.KEY_SELECT, None, lambda: ops.KStreamSelectKey(selector), key_serde=None, key_changed=True
        )
        return KGroupedStream(
            self._builder, keyed._node, g.key_serde, g.value_serde or self.value_serde, True, g.name
        )

    def group_by_key(self, grouped: Grouped | None = None) -> KGroupedStream:
        from edge.dsl.grouped import KGroupedStream

        g = grouped or Grouped()
        return KGroupedStream(
            self._builder,
            self._node,
            g.key_serde or self.key_serde,
            g.value_serde or self.value_serde,
            self.repartition_required,
            g.name,
        )

    # -- joins ----------------------------------------------------------------------------------------
    def join(
        self,
        other: KStream | KTable | GlobalKTable,
        joiner: Callable[..., Any],
        windows: JoinWindows | None = None,
        stream_joined: StreamJoined | None = None,
        *,
        key_selector: Callable[[Any, Any], Any] | None = None,
        joined: Joined | None = None,
        named: NamedLike = None,
    ) -> KStream:
        """Inner join.

        * With a KStream: a windowed stream-stream join (``windows``: JoinWindows, required): each record
          joins the other stream's records of its key within the window; ``joiner(left, right)`` or
          ``joiner(key, left, right)`` (Kafka's ValueJoinerWithKey, chosen when it takes three required
          arguments); the result carries the later timestamp. ``stream_joined`` names serdes, processors
          and stores.
        * With a KTable (same key, co-partitioned) or a GlobalKTable (``key_selector(key, value)`` gives
          the table key): ``joiner(stream_value, table_value)``; unmatched records drop."""
        if isinstance(other, KStream):
            return self._join_stream(
                other, joiner, windows, stream_joined, named, (key_selector, joined), False, False
            )
        self._no_stream_options("join", windows, stream_joined)
        return self._join_table(other, joiner, key_selector, joined, named, left=False)

    def left_join(
        self,
        other: KStream | KTable | GlobalKTable,
        joiner: Callable[..., Any],
        windows: JoinWindows | None = None,
        stream_joined: StreamJoined | None = None,
        *,
        key_selector: Callable[[Any, Any], Any] | None = None,
        joined: Joined | None = None,
        named: NamedLike = None,
    ) -> KStream:
        """Like ``join``, but a record of this stream without a match still gives ``joiner(value, None)``:
        with a table at once; with a stream once its window has closed (stream time past
        ``timestamp + after + grace``), and only if no match arrived by then."""
        if isinstance(other, KStream):
            return self._join_stream(
                other, joiner, windows, stream_joined, named, (key_selector, joined), True, False
            )
        self._no_stream_options("left_join", windows, stream_joined)
        return self._join_table(other, joiner, key_selector, joined, named, left=True)

    def outer_join(
        self,
        other: KStream,
        joiner: Callable[..., Any],
        windows: JoinWindows,
        stream_joined: StreamJoined | None = None,
    ) -> KStream:
        """Windowed stream-stream outer join: like ``left_join`` for both sides (``joiner(None, right)``
        for a right record that found no left one within its closed window)."""
        if not isinstance(other, KStream):
            raise TopologyError(f"outer_join(): expected a KStream, got {type(other).__name__}")
        return self._join_stream(other, joiner, windows, stream_joined, None, (None, None), True, True)

    def _join_stream(
        self,
        other: KStream,
        joiner: Callable[..., Any],
        windows: JoinWindows | None,
        stream_joined: StreamJoined | None,
        named: NamedLike,
        table_options: tuple[Any, Any],
        left_outer: bool,
        right_outer: bool,
    ) -> KStream:
        from edge.dsl.stream_joined import stream_stream_join

        if named is not None or any(o is not None for o in table_options):
            raise TopologyError(
                "a stream-stream join takes no named/key_selector/joined; "
                "name it with StreamJoined.with_name()"
            )
        return stream_stream_join(
            self, other, joiner, windows, stream_joined, left_outer=left_outer, right_outer=right_outer
        )

    @staticmethod
    def _no_stream_options(op: str, windows: Any, stream_joined: Any) -> None:
        if windows is not None or stream_joined is not None:
            raise TopologyError(f"{op}(): JoinWindows and StreamJoined are for joins with a KStream")

    def _join_table(
        self,
        table: KTable | GlobalKTable,
        joiner: Callable[[Any, Any], Any],
        key_selector: Callable[[Any, Any], Any] | None,
        joined: Joined | None,
        named: NamedLike,
        *,
        left: bool,
    ) -> KStream:
        from edge.dsl.ktable import GlobalKTable, KTable

        j = joined or Joined()
        explicit = name_of(named) or j.name
        prefix = naming.LEFTJOIN if left else naming.JOIN
        if isinstance(table, GlobalKTable):
            getter = table.getter_supplier()
            selector = key_selector or (lambda k, v: k)
            # Kafka names every global-table join KSTREAM-LEFTJOIN- (KStreamImpl.globalTableJoin)
            joined_stream = self._then(
                naming.LEFTJOIN,
                explicit,
                lambda: KStreamTableJoin(getter, joiner, left, selector),
                value_serde=None,
                stores=getter.store_names,
            )
            joined_stream._node.null_key_relaxed = left  # type: ignore[attr-defined]
            return joined_stream
        if not isinstance(table, KTable):
            raise TopologyError(f"join(): expected a KTable or GlobalKTable, got {type(table).__name__}")
        if key_selector is not None:
            raise TopologyError("join(): key_selector is only for GlobalKTable joins; use select_key() first")
        if table._builder is not self._builder:
            raise TopologyError("join(): the stream and the table must come from the same StreamsBuilder")
        from edge.dsl.stream_joined import repartition_for_join

        this = self
        if self.repartition_required:
            # Kafka's repartitionForJoin: named after the join (no suffix) or the stream; a stream
            # joined twice under its own name reuses its repartition topic
            this = repartition_for_join(self, explicit or self.name, j.key_serde, j.value_serde)
        getter = table.getter_supplier()
        if getattr(getter, "versioned", False) or j.grace_ms is not None:
            from edge.dsl.versioned import versioned_stream_table_join

            return versioned_stream_table_join(this, getter, joiner, j, prefix, explicit, left)
        joined_stream = this._then(
            prefix,
            explicit,
            lambda: KStreamTableJoin(getter, joiner, left),
            key_serde=j.key_serde or this.key_serde,
            value_serde=None,
            stores=getter.store_names,
        )
        joined_stream._node.null_key_relaxed = left  # type: ignore[attr-defined]
        return joined_stream

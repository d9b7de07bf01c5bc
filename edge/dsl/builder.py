"""StreamsBuilder: the entry point of the DSL. It records a logical graph and compiles it into a
:class:`~edge.topology.Topology` with ``build()``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from edge.dsl.options import Consumed, Materialized, materialized_of
from edge.errors import TopologyError
from edge.topology import naming
from edge.topology.graph import (
    GraphNode,
    RepartitionGraphNode,
    SourceGraphNode,
    StoreGraphNode,
    TableSourceGraphNode,
)
from edge.topology.naming import NameGenerator, check_store_name, check_topic_name
from edge.topology.stores import StoreSpec
from edge.topology.topology import Topology

if TYPE_CHECKING:
    from edge.dsl.kstream import KStream
    from edge.dsl.ktable import GlobalKTable, KTable
    from edge.serde import Serde


#: Kafka's ``topology.optimization`` rules (StreamsConfig.REUSE_KTABLE_SOURCE_TOPICS, ...)
REUSE_KTABLE_SOURCE_TOPICS = "reuse.ktable.source.topics"
MERGE_REPARTITION_TOPICS = "merge.repartition.topics"
SINGLE_STORE_SELF_JOIN = "single.store.self.join"
_SUPPORTED_RULES = (REUSE_KTABLE_SOURCE_TOPICS, MERGE_REPARTITION_TOPICS)


def optimization_rules(value: str | None) -> frozenset[str]:
    """Kafka's ``StreamsConfig.verifyTopologyOptimizationConfigs``: ``none``, ``all`` or a list of rules."""
    if value is None:
        return frozenset()
    text = str(value).strip()
    if text in ("", "none"):
        return frozenset()
    if text == "all":
        return frozenset(_SUPPORTED_RULES)
    rules = [r.strip() for r in text.split(",") if r.strip()]
    for rule in rules:
        if rule in ("none", "all"):
            raise TopologyError(f"topology.optimization: {rule!r} cannot be combined with other values")
        if rule == SINGLE_STORE_SELF_JOIN:
            raise TopologyError(
                f"topology.optimization: {SINGLE_STORE_SELF_JOIN} is not supported by this runtime; "
                f"use {', '.join(_SUPPORTED_RULES)} or all"
            )
        if rule not in _SUPPORTED_RULES:
            raise TopologyError(
                f"topology.optimization: unknown value {rule!r}; expected none, all or a comma-separated "
                f"list of {', '.join(_SUPPORTED_RULES)}"
            )
    return frozenset(rules)


def store_spec(
    m: Materialized,
    name: str,
    key_serde: Serde | None,
    value_serde: Serde | None,
    kind: str = "key_value",
) -> StoreSpec:
    """The store an operation materializes into. ``kind`` ("key_value", "window" or "session") is the
    store the operation needs: a ``Stores`` supplier of another kind is an error here, where Kafka's
    typed ``Materialized`` would not compile."""
    check_store_name(name)
    supplier = m.store_supplier
    if supplier is not None and supplier.kind != kind:
        raise TopologyError(
            f"store {name!r}: this operation needs a {kind.replace('_', '-')} store, but Materialized.as_ "
            f"was given a {supplier.kind.replace('_', '-')} store supplier ({type(supplier).__name__})"
        )
    spec = StoreSpec(
        name,
        m.key_serde or key_serde,
        m.value_serde or value_serde,
        persistent=m.persistent,
        logging_enabled=m.logging_enabled,
        caching_enabled=m.caching_enabled,
    )
    if m.history_retention_ms is not None:  # Materialized.as_versioned: see edge.state.versioned
        from edge.state.versioned import versioned_changelog_config

        spec.kind, spec.retention_ms, spec.caching_enabled = "versioned", m.history_retention_ms, False
        spec.segment_interval_ms = m.segment_interval_ms
        spec.changelog_config = versioned_changelog_config(m.history_retention_ms)
    return spec


class StreamsBuilder:
    def __init__(self) -> None:
        self.names = NameGenerator()
        self._nodes: list[GraphNode] = []
        self._topics: set[str] = set()
        self._built: frozenset[str] | None = None

    def add_node(self, node: GraphNode) -> GraphNode:
        self._nodes.append(node)
        return node

    def _claim_topics(self, topics: list[str]) -> None:
        for t in topics:
            check_topic_name(t)
            if t in self._topics:
                raise TopologyError(
                    f"topic {t!r} is already a source of this builder; merge() streams instead"
                )
            self._topics.add(t)

    def stream(self, topics: str | list[str], consumed: Consumed | None = None) -> KStream:
        from edge.dsl.kstream import KStream

        topic_list = [topics] if isinstance(topics, str) else list(topics)
        if not topic_list:
            raise TopologyError("stream() needs at least one topic")
        self._claim_topics(topic_list)
        c = consumed or Consumed()
        name = self.names.processor(naming.SOURCE, c.name)
        node = self.add_node(
            SourceGraphNode(name, topic_list, c.key_serde, c.value_serde, c.timestamp_extractor)
        )
        return KStream(self, node, c.key_serde, c.value_serde)

    def _table_source(
        self, topic: str, consumed: Consumed | None, materialized: Materialized | str | None, is_global: bool
    ) -> tuple[TableSourceGraphNode, StoreSpec, Consumed]:
        self._claim_topics([topic])
        c = consumed or Consumed()
        m = materialized_of(materialized)
        store_name = m.store_name or self.names.store(f"{topic}-")
        source_name = self.names.processor(naming.SOURCE, c.name)
        table_name = self.names.processor(naming.KTABLE_SOURCE, f"{c.name}-table-source" if c.name else None)
        spec = store_spec(m, store_name, c.key_serde, c.value_serde)
        if is_global:
            if spec.kind == "versioned":
                raise TopologyError(f"global table {topic!r}: a global table cannot use a versioned store")
            spec.logging_enabled = False  # the source topic is the global store's changelog
        node = TableSourceGraphNode(
            source_name, table_name, topic, c.key_serde, c.value_serde, spec, is_global, c.timestamp_extractor
        )
        self.add_node(node)
        return node, spec, c

    def table(
        self, topic: str, consumed: Consumed | None = None, materialized: Materialized | str | None = None
    ) -> KTable:
        """A table of ``topic``'s latest value per key. As in Kafka, it gets a store (and a changelog)
        only when it must: a named store (``Materialized.as_``), a join or lookup of it, or an operator
        that needs old values (``group_by``, ``suppress``, left/outer table joins). Otherwise the
        generated store name is only reserved, so later names are Kafka's."""
        from edge.dsl.ktable import KTable, TableSourceState
        from edge.processor.ops.getters import StoreGetter, ValueGetterSupplier

        node, spec, _ = self._table_source(topic, consumed, materialized, False)
        name = spec.name
        queryable = materialized_of(materialized).store_name is not None
        state = TableSourceState(spec, queryable)
        getter = ValueGetterSupplier(lambda: StoreGetter(name), [name])
        if spec.kind == "versioned":
            from edge.dsl.versioned import versioned_source

            state, getter = versioned_source(spec)
        node.source_state = state
        return KTable(
            self, node, spec.key_serde, spec.value_serde, name if queryable else None, getter, source=state
        )

    def global_table(
        self, topic: str, consumed: Consumed | None = None, materialized: Materialized | str | None = None
    ) -> GlobalKTable:
        from edge.dsl.ktable import GlobalKTable

        _, spec, _ = self._table_source(topic, consumed, materialized, True)
        return GlobalKTable(spec.name, spec.key_serde, spec.value_serde)

    def add_state_store(self, builder: Any) -> StreamsBuilder:
        """Add a store (``edge.state.key_value_store_builder(...)``) for ``KStream.process(..., stores)``."""
        self.add_node(StoreGraphNode(builder))
        return self

    def build(self, props: Mapping[str, Any] | None = None, *, optimization: str | None = None) -> Topology:
        """Compile the DSL graph. ``optimization`` (or ``props["topology.optimization"]``, Kafka's
        ``StreamsBuilder.build(props)``): ``none`` (default), ``all``, or a comma-separated list of
        ``reuse.ktable.source.topics`` (a ``builder.table()`` store is restored from its source topic
        instead of a ``-changelog`` topic) and ``merge.repartition.topics`` (the repartition topics that
        follow one key-changing operation become one). The runtime setting ``topology.optimization``
        applies when the app is given a StreamsBuilder. Build once: optimizing rewrites the graph."""
        if optimization is None and props is not None:
            optimization = props.get("topology.optimization")
        rules = optimization_rules(optimization)
        if self._built is not None:
            if rules != self._built:
                raise TopologyError(
                    "this StreamsBuilder was already built with another topology.optimization; "
                    "build each program once (create a new StreamsBuilder to build it differently)"
                )
        else:
            self._built = rules
            if MERGE_REPARTITION_TOPICS in rules:
                self._merge_repartition_topics()
            for node in self._nodes:
                if isinstance(node, TableSourceGraphNode) and not node.is_global:
                    node.reuse_source_topic = REUSE_KTABLE_SOURCE_TOPICS in rules
            self._relax_null_keys()
        topology = Topology()
        for node in self._nodes:
            node.write_to(topology)
        return topology

    def _relax_null_keys(self) -> None:
        """Kafka's ``rewriteRepartitionNodes``: every repartition drops null keys, except those with a
        left join downstream that accepts them (``NodesWithRelaxedNullKeyJoinDownstream``)."""
        relaxed: dict[int, bool] = {}

        def has_relaxed_downstream(node: GraphNode) -> bool:
            known = relaxed.get(id(node))
            if known is None:
                relaxed[id(node)] = False  # guards against revisits while computing
                known = any(c.null_key_relaxed or has_relaxed_downstream(c) for c in node.children)
                relaxed[id(node)] = known
            return known

        for node in self._nodes:
            if isinstance(node, RepartitionGraphNode):
                node.keep_null_keys = has_relaxed_downstream(node)

    def _merge_repartition_topics(self) -> None:
        """Kafka's ``InternalStreamsBuilder.mergeRepartitionTopics``: the optimizable repartitions whose
        nearest key- or value-changing ancestor is the same key-changing operation become one topic,
        named after the first; the operators between the key change and each old repartition move
        behind the merged one. (Repartitions reached through a ``merge()`` are left alone.)"""
        from edge.dsl.kstream import repartition_node

        def find_up(start: GraphNode, pred: Callable[[GraphNode], bool]) -> GraphNode | None:
            if pred(start):
                return start
            found = None
            for parent in start.parents:
                if pred(parent):
                    return parent
                found = find_up(parent, pred)
            return found

        groups: dict[int, tuple[GraphNode, list[RepartitionGraphNode]]] = {}
        for node in self._nodes:
            if not isinstance(node, RepartitionGraphNode) or not node.optimizable:
                continue
            changer = find_up(node, lambda n: n.key_changing or n.value_changing)
            if changer is None or not changer.key_changing:
                continue
            groups.setdefault(id(changer), (changer, []))[1].append(node)
        for changer, reps in groups.values():
            first = reps[0]
            key_serde = next((r.key_serde for r in reps if r.key_serde is not None), None)
            value_serde = next((r.value_serde for r in reps if r.value_serde is not None), None)
            count = len(self._nodes)
            merged = repartition_node(self, changer, first.topic, key_serde, value_serde)
            # repartition_node appended it; Kafka writes it right after the key-changing operation
            del self._nodes[count:]
            self._nodes.insert(self._nodes.index(changer) + 1, merged)
            for rep in reps:
                child = find_up(rep, lambda n, c=changer: c in n.parents)
                assert child is not None
                changer.children.remove(child)
                child.parents = [merged if p is changer else p for p in child.parents]
                merged.children.append(child)
                for parent in rep.parents:
                    parent.children.remove(rep)
                    for grandchild in rep.children:
                        parent.children.append(grandchild)
                for grandchild in rep.children:
                    grandchild.parents = [
                        p2 for p in grandchild.parents for p2 in (rep.parents if p is rep else [p])
                    ]
                rep.children = []
                self._nodes.remove(rep)

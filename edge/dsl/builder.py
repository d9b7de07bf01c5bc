"""StreamsBuilder: the entry point of the DSL. It records a logical graph and compiles it into a
:class:`~edge.topology.Topology` with ``build()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from edge.dsl.options import Consumed, Materialized, materialized_of
from edge.errors import TopologyError
from edge.topology import naming
from edge.topology.graph import GraphNode, SourceGraphNode, StoreGraphNode, TableSourceGraphNode
from edge.topology.naming import NameGenerator, check_topic_name
from edge.topology.stores import StoreSpec
from edge.topology.topology import Topology

if TYPE_CHECKING:
    from edge.dsl.kstream import KStream
    from edge.dsl.ktable import GlobalKTable, KTable
    from edge.serde import Serde


def store_spec(
    m: Materialized,
    name: str,
    key_serde: Serde | None,
    value_serde: Serde | None,
) -> StoreSpec:
    return StoreSpec(
        name,
        m.key_serde or key_serde,
        m.value_serde or value_serde,
        persistent=m.persistent,
        logging_enabled=m.logging_enabled,
        caching_enabled=m.caching_enabled,
    )


class StreamsBuilder:
    def __init__(self) -> None:
        self.names = NameGenerator()
        self._nodes: list[GraphNode] = []
        self._topics: set[str] = set()

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
            spec.logging_enabled = False  # the source topic is the global store's changelog
        node = TableSourceGraphNode(
            source_name, table_name, topic, c.key_serde, c.value_serde, spec, is_global, c.timestamp_extractor
        )
        self.add_node(node)
        return node, spec, c

    def table(
        self, topic: str, consumed: Consumed | None = None, materialized: Materialized | str | None = None
    ) -> KTable:
        from edge.dsl.ktable import KTable
        from edge.processor.ops.getters import StoreGetter, ValueGetterSupplier

        node, spec, _ = self._table_source(topic, consumed, materialized, False)
        name = spec.name
        getter = ValueGetterSupplier(lambda: StoreGetter(name), [name])
        return KTable(self, node, spec.key_serde, spec.value_serde, name, getter)

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

    def build(self) -> Topology:
        topology = Topology()
        for node in self._nodes:
            node.write_to(topology)
        return topology

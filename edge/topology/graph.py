"""The logical graph the DSL builds. Each node knows how to write itself into a physical
:class:`~edge.topology.topology.Topology`; ``StreamsBuilder.build()`` writes them in creation order
(parents are always created before children). Keeping this layer separate from the physical topology
lets DSL decisions (repartitioning, materialization) be made before any physical node exists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from edge.processor.api import ProcessorSupplier
from edge.processor.node import StreamPartitioner
from edge.serde import Serde
from edge.topology.topology import Topology


class GraphNode:
    """``name`` is what children attach to (the node's output).

    Labels read when the topology is built (Kafka's GraphNode flags): ``key_changing`` /
    ``value_changing`` (the optimizer merges the repartitions that follow one key-changing operation)
    and ``null_key_relaxed`` (a left join that accepts null keys: repartitions upstream keep them)."""

    key_changing = False
    value_changing = False
    null_key_relaxed = False

    def __init__(self, name: str, parents: list[GraphNode] | None = None) -> None:
        self.name = name
        self.parents: list[GraphNode] = list(parents or [])
        self.children: list[GraphNode] = []
        for p in self.parents:
            p.children.append(self)

    @property
    def parent_names(self) -> list[str]:
        return [p.name for p in self.parents]

    def write_to(self, topology: Topology) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class SourceGraphNode(GraphNode):
    def __init__(
        self,
        name: str,
        topics: list[str],
        key_serde: Serde | None,
        value_serde: Serde | None,
        timestamp_extractor: Any = None,
    ):
        super().__init__(name)
        self.topics, self.key_serde, self.value_serde = topics, key_serde, value_serde
        self.timestamp_extractor = timestamp_extractor

    def write_to(self, topology: Topology) -> None:
        topology.add_source(
            self.name,
            *self.topics,
            key_serde=self.key_serde,
            value_serde=self.value_serde,
            timestamp_extractor=self.timestamp_extractor,
        )


class StoreGraphNode(GraphNode):
    """A store added with ``StreamsBuilder.add_state_store`` (connected later by ``process``)."""

    def __init__(self, builder: Any) -> None:
        super().__init__(f"STORE:{builder.name}")
        self.builder = builder

    def write_to(self, topology: Topology) -> None:
        topology.add_state_store(self.builder)


class ProcessorGraphNode(GraphNode):
    """``stores_if``: the stores are added only if it returns True when the topology is built (a
    ``to_table()`` table is materialized only if a later operator needs it, as in Kafka)."""

    def __init__(
        self,
        name: str,
        parents: list[GraphNode],
        supplier: ProcessorSupplier,
        stores: list[str] | None = None,
        new_stores: list[Any] | None = None,
        *,
        stores_if: Callable[[], bool] | None = None,
    ) -> None:
        super().__init__(name, parents)
        self.supplier = supplier
        self.stores = list(stores or [])
        self.new_stores = list(new_stores or [])
        self.stores_if = stores_if

    def write_to(self, topology: Topology) -> None:
        with_stores = self.stores_if is None or self.stores_if()
        for builder in self.new_stores if with_stores else ():
            topology.add_state_store(builder)
        stores = self.stores if with_stores else []
        topology.add_processor(self.name, self.supplier, *self.parent_names, stores=stores)


class SinkGraphNode(GraphNode):
    def __init__(
        self,
        name: str,
        parents: list[GraphNode],
        topic: str | Callable[[Any, Any], str],
        key_serde: Serde | None,
        value_serde: Serde | None,
        partitioner: StreamPartitioner | None = None,
    ) -> None:
        super().__init__(name, parents)
        self.topic, self.key_serde, self.value_serde, self.partitioner = (
            topic,
            key_serde,
            value_serde,
            partitioner,
        )

    def write_to(self, topology: Topology) -> None:
        topology.add_sink(
            self.name,
            self.topic,
            *self.parent_names,
            key_serde=self.key_serde,
            value_serde=self.value_serde,
            partitioner=self.partitioner,
        )


class RepartitionGraphNode(GraphNode):
    """An internal topic: [null-key filter] -> sink | topic | source. Children attach to the source."""

    def __init__(
        self,
        parents: list[GraphNode],
        topic: str,
        sink_name: str,
        source_name: str,
        filter_name: str | None,
        key_serde: Serde | None,
        value_serde: Serde | None,
        change_values: bool = False,
        partitioner: StreamPartitioner | None = None,
        num_partitions: int | None = None,
    ) -> None:
        super().__init__(source_name, parents)
        self.topic, self.sink_name, self.filter_name = topic, sink_name, filter_name
        self.key_serde, self.value_serde = key_serde, value_serde
        self.change_values, self.partitioner, self.num_partitions = change_values, partitioner, num_partitions
        #: Kafka's NULL_KEY_RELAXED_JOIN rewrite (set by ``StreamsBuilder.build``): a repartition with a
        #: left join downstream keeps its filter node but lets null keys through (the join emits them)
        self.keep_null_keys = False
        #: Kafka's OptimizableRepartitionNode (see ``edge.dsl.kstream.repartition_node``)
        self.optimizable = True

    def write_to(self, topology: Topology) -> None:
        from edge.processor.ops.stream import KStreamNullKeyFilter, KStreamPassThrough

        parents = self.parent_names
        if self.filter_name is not None:
            flt = KStreamPassThrough if self.keep_null_keys else KStreamNullKeyFilter
            topology.add_processor(self.filter_name, flt, *parents)
            parents = [self.filter_name]
        topology.mark_internal_topic(self.topic, self.num_partitions)
        topology.add_sink(
            self.sink_name,
            self.topic,
            *parents,
            key_serde=self.key_serde,
            value_serde=self.value_serde,
            partitioner=self.partitioner,
            _change_values=self.change_values,
        )
        topology.add_source(
            self.name,
            self.topic,
            key_serde=self.key_serde,
            value_serde=self.value_serde,
            _change_values=self.change_values,
        )


class TableSourceGraphNode(GraphNode):
    """``builder.table()`` / ``global_table()``: a source feeding a KTableSource that owns the store."""

    def __init__(
        self,
        source_name: str,
        name: str,
        topic: str,
        key_serde: Serde | None,
        value_serde: Serde | None,
        store: Any,
        is_global: bool = False,
        timestamp_extractor: Any = None,
    ) -> None:
        super().__init__(name)
        self.source_name, self.topic = source_name, topic
        self.timestamp_extractor = timestamp_extractor
        self.key_serde, self.value_serde, self.store, self.is_global = (
            key_serde,
            value_serde,
            store,
            is_global,
        )

    #: the KTable's :class:`~edge.dsl.ktable.TableSourceState` (None: always materialized, global tables)
    source_state: Any = None
    #: ``topology.optimization`` reuse_ktable_source_topics: the source topic is the store's changelog
    reuse_source_topic: bool = False

    def write_to(self, topology: Topology) -> None:
        from edge.processor.ops.table import KTableSource

        store_name = self.store.name
        state = self.source_state

        def supplier() -> KTableSource:
            return KTableSource(store_name) if state is None else state.supplier()

        if self.is_global:
            topology.add_global_store(
                self.store,
                self.source_name,
                self.topic,
                self.name,
                supplier,
                key_serde=self.key_serde,
                value_serde=self.value_serde,
                timestamp_extractor=self.timestamp_extractor,
            )
            return
        topology.add_source(
            self.source_name,
            self.topic,
            key_serde=self.key_serde,
            value_serde=self.value_serde,
            timestamp_extractor=self.timestamp_extractor,
        )
        if state is not None and not state.materialized:
            topology.add_processor(self.name, supplier, self.source_name)
            return
        topology.add_state_store(self.store)
        topology.add_processor(self.name, supplier, self.source_name, stores=[store_name])
        if self.reuse_source_topic:
            topology.use_source_topic_as_changelog(store_name, self.topic)

"""The physical topology: sources, processors, sinks and stores grouped into sub-topologies.

``Topology`` is both the Processor API (``add_source``/``add_processor``/``add_sink``/stores) and what
the DSL compiles into. Sub-topologies are the connected components of the graph, where processors that
share a store are connected too; repartition topics cut the graph (their sink and source are separate
nodes). A task runs one sub-topology for one partition; :meth:`Topology.build_processor_topology`
instantiates fresh processors and resolved store builders for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from edge.errors import TopologyError
from edge.processor.api import ProcessorSupplier
from edge.processor.node import ProcessorNodeSpec, SinkProcessor, SourceNode, StreamPartitioner
from edge.processor.ops.change_serde import ChangeSerde
from edge.processor.timestamps import as_extractor
from edge.serde import Serde
from edge.state import changelog_topic_name
from edge.topology.describe import TopologyDescription
from edge.topology.kinds import PROCESSOR, SINK, SOURCE
from edge.topology.stores import StoreSpec, resolve_store_builder

if TYPE_CHECKING:
    from edge.processor.config import TaskConfig
    from edge.state import StoreBuilder


@dataclass(eq=False, slots=True)
class NodeDef:
    name: str
    kind: str
    order: int
    parents: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    # sources
    topics: list[str] = field(default_factory=list)
    # sources and sinks
    key_serde: Serde | None = None
    value_serde: Serde | None = None
    change_values: bool = False  # values are KTable Change pairs (groupBy repartition topics)
    timestamp_extractor: Any = None  # sources: TimestampExtractor / callable / name; None = config default
    # processors
    supplier: ProcessorSupplier | None = None
    stores: list[str] = field(default_factory=list)
    # sinks
    topic: str | None = None
    topic_chooser: Callable[[Any, Any], str] | None = None
    partitioner: StreamPartitioner | None = None
    is_global: bool = False


@dataclass(eq=False, slots=True)
class StoreDef:
    builder: Any  # StoreBuilder | StoreSpec
    is_global: bool = False

    @property
    def name(self) -> str:
        return self.builder.name

    @property
    def logging_enabled(self) -> bool:
        return (not self.is_global) and self.builder.logging_enabled


@dataclass(slots=True)
class Subtopology:
    id: int
    nodes: list[str]
    source_topics: list[str]
    sink_topics: list[str]
    stores: list[str]
    is_global: bool = False


@dataclass(slots=True)
class ProcessorTopology:
    """Everything one task needs, freshly instantiated: what the runtime hands to ``StreamTask``."""

    subtopology_id: int
    sources: list[SourceNode]
    processors: list[ProcessorNodeSpec]
    stores: dict[str, StoreBuilder]
    changelog_topics: dict[str, str | None]
    global_store_names: list[str]


class Topology:
    def __init__(self) -> None:
        self._nodes: dict[str, NodeDef] = {}
        self._stores: dict[str, StoreDef] = {}
        self._topic_to_source: dict[str, str] = {}
        self._internal_topics: dict[str, int | None] = {}  # repartition topic -> partitions (None: runtime)
        #: store -> the source topic that is its changelog (topology.optimization reuse_ktable_source_topics)
        self._source_changelogs: dict[str, str] = {}
        self._subtopologies: list[Subtopology] | None = None

    # -- Processor API ------------------------------------------------------------------------------
    def add_source(
        self,
        name: str,
        *topics: str,
        key_serde: Serde | None = None,
        value_serde: Serde | None = None,
        timestamp_extractor: Any = None,
        _change_values: bool = False,
        _is_global: bool = False,
    ) -> Topology:
        """``timestamp_extractor``: see :mod:`edge.processor.timestamps` (None: the config's
        ``default_timestamp_extractor``, else the record timestamp)."""
        if not topics:
            raise TopologyError(f"source {name!r} needs at least one topic")
        node = self._add_node(name, SOURCE, ())
        for topic in topics:
            if topic in self._topic_to_source:
                raise TopologyError(
                    f"topic {topic!r} is already consumed by source {self._topic_to_source[topic]!r}; "
                    f"a topic can be read by one source only (merge() the streams instead)"
                )
            self._topic_to_source[topic] = name
        node.topics = list(topics)
        node.key_serde, node.value_serde = key_serde, value_serde
        node.change_values, node.is_global = _change_values, _is_global
        if timestamp_extractor is not None:
            from edge.processor.timestamps import as_extractor

            as_extractor(timestamp_extractor)  # fail at build time on a bad extractor
        node.timestamp_extractor = timestamp_extractor
        return self

    def add_processor(
        self, name: str, supplier: ProcessorSupplier, *parent_names: str, stores: Iterable[str] = ()
    ) -> Topology:
        if not callable(supplier):
            raise TopologyError(f"processor {name!r}: supplier must be callable returning a Processor")
        if not parent_names:
            raise TopologyError(f"processor {name!r} needs at least one parent")
        node = self._add_node(name, PROCESSOR, parent_names)
        node.supplier = supplier
        for store in stores:
            self.connect_processor_and_state_stores(name, store)
        return self

    def add_sink(
        self,
        name: str,
        topic: str | Callable[[Any, Any], str],
        *parent_names: str,
        key_serde: Serde | None = None,
        value_serde: Serde | None = None,
        partitioner: StreamPartitioner | None = None,
        _change_values: bool = False,
    ) -> Topology:
        if not parent_names:
            raise TopologyError(f"sink {name!r} needs at least one parent")
        node = self._add_node(name, SINK, parent_names)
        if isinstance(topic, str):
            from edge.topology.naming import check_topic_name

            node.topic = check_topic_name(topic, f"sink {name!r}: topic")
        elif callable(topic) or callable(getattr(topic, "extract", None)):
            node.topic_chooser = topic
        else:
            raise TopologyError(
                f"sink {name!r}: topic must be a name or a TopicNameExtractor: a callable "
                "(key, value) or (key, value, record_context) -> name"
            )
        node.key_serde, node.value_serde, node.partitioner = key_serde, value_serde, partitioner
        node.change_values = _change_values
        return self

    def add_state_store(self, builder: StoreBuilder | StoreSpec, *processor_names: str) -> Topology:
        from edge.topology.naming import check_store_name

        check_store_name(builder.name)  # it names the changelog topic: Kafka's rules, checked now
        existing = self._stores.get(builder.name)
        if existing is not None and existing.builder is not builder:
            raise TopologyError(
                f"a state store named {builder.name!r} is already added; names must be unique"
            )
        if existing is None:
            self._stores[builder.name] = StoreDef(builder)
            self._subtopologies = None
        for proc in processor_names:
            self.connect_processor_and_state_stores(proc, builder.name)
        return self

    def connect_processor_and_state_stores(self, processor_name: str, *store_names: str) -> Topology:
        node = self._nodes.get(processor_name)
        if node is None or node.kind != PROCESSOR:
            raise TopologyError(f"cannot connect stores to {processor_name!r}: no such processor")
        for store in store_names:
            if store not in self._stores:
                raise TopologyError(
                    f"processor {processor_name!r} uses store {store!r} which is not added; "
                    f"call add_state_store() / StreamsBuilder.add_state_store() first"
                )
            if store not in node.stores:
                node.stores.append(store)
        self._subtopologies = None
        return self

    def add_global_store(
        self,
        builder: StoreBuilder | StoreSpec,
        source_name: str,
        topic: str,
        processor_name: str,
        supplier: ProcessorSupplier,
        *,
        key_serde: Serde | None = None,
        value_serde: Serde | None = None,
        timestamp_extractor: Any = None,
    ) -> Topology:
        """A store filled from ``topic`` (all partitions) by ``supplier``'s processor, read by every task."""
        if builder.name in self._stores:
            raise TopologyError(f"a state store named {builder.name!r} is already added")
        self.add_source(
            source_name,
            topic,
            key_serde=key_serde,
            value_serde=value_serde,
            timestamp_extractor=timestamp_extractor,
            _is_global=True,
        )
        self._stores[builder.name] = StoreDef(builder, is_global=True)
        self.add_processor(processor_name, supplier, source_name, stores=[builder.name])
        self._nodes[processor_name].is_global = True
        return self

    def _add_node(self, name: str, kind: str, parent_names: Iterable[str]) -> NodeDef:
        if not name:
            raise TopologyError("node names must be non-empty")
        if name in self._nodes:
            raise TopologyError(f"a node named {name!r} already exists; names must be unique (see Named)")
        node = NodeDef(name, kind, len(self._nodes))
        for parent in parent_names:
            pnode = self._nodes.get(parent)
            if pnode is None:
                raise TopologyError(f"node {name!r}: parent {parent!r} does not exist (add it first)")
            if pnode.kind == SINK:
                raise TopologyError(f"node {name!r}: a sink ({parent!r}) cannot have children")
            node.parents.append(parent)
            pnode.children.append(name)
        self._nodes[name] = node
        self._subtopologies = None
        return node

    # -- DSL hooks ----------------------------------------------------------------------------------
    def mark_internal_topic(self, topic: str, num_partitions: int | None = None) -> None:
        """A repartition topic: prefixed with the application id at runtime. ``num_partitions=None``
        lets the runtime choose (Kafka: the partition count of the sub-topology's input topics)."""
        self._internal_topics[topic] = num_partitions

    def use_source_topic_as_changelog(self, store: str, topic: str) -> None:
        """Kafka's ``reuse.ktable.source.topics`` optimization: a ``builder.table()`` store writes no
        changelog (logging off) and is restored from its source topic, which already holds every update."""
        if store not in self._stores:
            raise TopologyError(f"cannot reuse {topic!r} as the changelog of unknown store {store!r}")
        self._source_changelogs[store] = topic

    # -- inspection ---------------------------------------------------------------------------------
    @property
    def internal_topics(self) -> set[str]:
        return set(self._internal_topics)

    def repartition_topics(self, application_id: str) -> dict[str, int | None]:
        """Resolved repartition topic names -> requested partition count (None: runtime decides)."""
        return {self.resolve_topic(t, application_id): n for t, n in self._internal_topics.items()}

    def source_topics(self, application_id: str) -> dict[int, list[str]]:
        """Resolved input topics per (non-global) sub-topology: what the runtime subscribes to and how
        it groups partitions into tasks (task ``<id>_<p>`` reads partition ``p`` of each of these)."""
        return {
            st.id: [self.resolve_topic(t, application_id) for t in st.source_topics]
            for st in self.subtopologies()
            if not st.is_global
        }

    def store_names(self) -> list[str]:
        return list(self._stores)

    def resolve_topic(self, topic: str, application_id: str) -> str:
        return f"{application_id}-{topic}" if topic in self._internal_topics else topic

    def subtopologies(self) -> list[Subtopology]:
        if self._subtopologies is None:
            self._subtopologies = self._group()
        return self._subtopologies

    def global_topics(self) -> list[str]:
        return [t for st in self.subtopologies() if st.is_global for t in st.source_topics]

    def changelog_topics(self, application_id: str) -> dict[str, str]:
        """Store name -> changelog topic the runtime creates (``<app>-<store>-changelog``), for stores
        with logging enabled. Stores restored from their source topic are in :meth:`source_changelogs`."""
        return {
            name: changelog_topic_name(application_id, name)
            for name, sd in self._stores.items()
            if sd.logging_enabled and name not in self._source_changelogs
        }

    def source_changelogs(self) -> dict[str, str]:
        """Store name -> source topic used as its changelog (``topology.optimization=all``)."""
        return dict(self._source_changelogs)

    def describe(self) -> TopologyDescription:
        return TopologyDescription(self)

    def _group(self) -> list[Subtopology]:
        parent: dict[str, str] = {n: n for n in self._nodes}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        def union(a: str, b: str) -> None:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[rb] = ra

        store_owner: dict[str, str] = {}
        first_global: str | None = None
        for node in self._nodes.values():
            if node.is_global:  # one global sub-topology holds every global store: one global task
                first_global = first_global or node.name
                union(first_global, node.name)
            for p in node.parents:
                union(p, node.name)
            for store in node.stores:
                if self._stores[store].is_global and not node.is_global:
                    continue  # global stores are read by every task; they do not join sub-topologies
                if store in store_owner:
                    union(store_owner[store], node.name)
                else:
                    store_owner[store] = node.name
        groups: dict[str, list[str]] = {}
        for name in self._nodes:  # insertion order: groups numbered by their first node
            groups.setdefault(find(name), []).append(name)
        result = []
        for i, names in enumerate(groups.values()):
            nodes = [self._nodes[n] for n in names]
            result.append(
                Subtopology(
                    id=i,
                    nodes=names,
                    source_topics=[t for n in nodes if n.kind == SOURCE for t in n.topics],
                    sink_topics=[n.topic for n in nodes if n.kind == SINK and n.topic is not None],
                    stores=list(dict.fromkeys(s for n in nodes for s in n.stores)),
                    is_global=any(n.is_global for n in nodes),
                )
            )
        return result

    # -- instantiation for a task ---------------------------------------------------------------------
    def build_processor_topology(self, subtopology_id: int, config: TaskConfig) -> ProcessorTopology:
        """Fresh processors, sources and store builders for one task of ``subtopology_id``."""
        sts = self.subtopologies()
        if not 0 <= subtopology_id < len(sts):
            raise TopologyError(f"no sub-topology {subtopology_id}; this topology has {len(sts)}")
        st = sts[subtopology_id]
        app = config.application_id
        sources: list[SourceNode] = []
        processors: list[ProcessorNodeSpec] = []
        stores: dict[str, StoreBuilder] = {}
        changelogs: dict[str, str | None] = {}
        global_stores = [n for n, sd in self._stores.items() if sd.is_global]
        for name in st.nodes:
            node = self._nodes[name]
            if node.kind == SOURCE:
                key_serde = _with_defaults(node.key_serde or config.default_key_serde, config)
                value_serde = _with_defaults(node.value_serde or config.default_value_serde, config)
                if node.change_values:
                    value_serde = ChangeSerde(value_serde)
                topics = [self.resolve_topic(t, app) for t in node.topics]
                extractor = node.timestamp_extractor
                if extractor is None:
                    extractor = getattr(config, "default_timestamp_extractor", None)
                extractor = None if extractor is None else as_extractor(extractor)
                sources.append(
                    SourceNode(name, topics, key_serde, value_serde, list(node.children), extractor)
                )
                continue
            if node.kind == SINK:
                key_serde = _with_defaults(node.key_serde or config.default_key_serde, config)
                value_serde = _with_defaults(node.value_serde or config.default_value_serde, config)
                if node.change_values:
                    value_serde = ChangeSerde(value_serde)
                topic = None if node.topic is None else self.resolve_topic(node.topic, app)
                proc = SinkProcessor(topic, node.topic_chooser, key_serde, value_serde, node.partitioner)
            else:
                proc = node.supplier()  # type: ignore[misc]
            processors.append(ProcessorNodeSpec(name, proc, list(node.children), list(node.stores)))
            for store in node.stores:
                sd = self._stores[store]
                if sd.is_global and not st.is_global:
                    continue
                if store not in stores:
                    stores[store] = resolve_store_builder(sd.builder, config)
                    if sd.is_global:
                        stores[store] = stores[store].with_logging_disabled()
                    source_changelog = self._source_changelogs.get(store)
                    if source_changelog is not None:
                        # restored from the source topic; the store itself writes no changelog
                        stores[store] = stores[store].with_logging_disabled()
                        changelogs[store] = source_changelog
                    else:
                        changelogs[store] = changelog_topic_name(app, store) if sd.logging_enabled else None
        return ProcessorTopology(st.id, sources, processors, stores, changelogs, global_stores)

    def __repr__(self) -> str:
        return str(self.describe())


def _with_defaults(serde: Any, config: TaskConfig) -> Any:
    """A wrapping serde whose inner serde the DSL did not know (the foreign-key join's subscription
    and response wrappers) fills it in from the config's defaults (Kafka's ``setIfUnset``)."""
    resolve = getattr(serde, "with_config_defaults", None)
    return serde if resolve is None else resolve(config)

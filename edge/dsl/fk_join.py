"""``KTable.join/left_join(other, foreign_key_extractor=..., joiner=...)``: the foreign-key table-table
join (KIP-213), built as Kafka's ``KTableImpl.doJoinOnForeignKey`` builds it -- same nodes, same order,
same generated names (so describe(), the internal topics and the subscription store's changelog match)::

    left table ─► KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-<n> (send) ─► KTABLE-SINK
        ─► <app>-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-<n>-topic          (partitioned like `other`)
        ─► KSTREAM-SOURCE ─► SUBSCRIPTION-PROCESSOR (receive; subscription store)
                          ─► SUBSCRIPTION-PROCESSOR (join with `other`'s current value) ─┐
    other table ─► SUBSCRIPTION-PROCESSOR (prefix-scan the subscribers of the changed key) ─┤
        KTABLE-SINK ◄──────────────────────────────────────────────────────────────────────┘
        ─► <app>-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-<n>-topic              (partitioned like `self`)
        ─► KSTREAM-SOURCE ─► SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR ─► KTABLE-FK-JOIN-OUTPUT-<n>

With ``TableJoined.as_(name)`` (or ``named=``) the nodes are ``<name>-subscription-registration-...``
etc., as in Kafka. Processors: :mod:`edge.processor.ops.fk_join`.

The result is a table source, as in Kafka: it gets a store (``KTABLE-FK-JOIN-OUTPUT-STATE-STORE-<n>``
unless named) only when ``Materialized.as_`` names one or a later operator needs its values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from edge.dsl.builder import store_spec
from edge.dsl.options import Materialized, Named, TableJoined, materialized_of, name_of
from edge.errors import TopologyError
from edge.processor.ops import fk_join as ops
from edge.processor.ops.getters import StoreGetter, ValueGetterSupplier
from edge.serde import Serdes, ValueAndTimestampSerde
from edge.state import key_value_store_builder
from edge.topology import naming
from edge.topology.graph import GraphNode, ProcessorGraphNode
from edge.topology.stores import StoreSpec

if TYPE_CHECKING:
    from edge.dsl.ktable import KTable
    from edge.processor.config import TaskConfig
    from edge.serde import Serde
    from edge.state import StoreBuilder
    from edge.topology.topology import Topology


@dataclass(slots=True)
class SubscriptionStoreSpec(StoreSpec):
    """The subscription store (Kafka's ``SubscriptionStoreFactory``): combined-key bytes ->
    timestamped subscription wrapper; logged, never cached; its primary key serde may come from the
    config."""

    primary_key_serde: Any = None
    pseudo_topic: str = ""

    def to_builder(self, config: TaskConfig) -> StoreBuilder:
        wrapper = ops.SubscriptionWrapperSerde(
            self.primary_key_serde or config.default_key_serde,
            f"{config.application_id}-{self.pseudo_topic}",
        )
        return key_value_store_builder(
            self.name,
            Serdes.bytes(),
            ValueAndTimestampSerde(wrapper),
            persistent=self.persistent,
            logging=self.logging_enabled,
            caching=False,
            changelog_config=self.changelog_config,
        )


class _InternalTopicGraphNode(GraphNode):
    """Sink -> internal topic -> source (like a repartition topic, but named as Kafka names the FK join's
    topics, with no null-key filter and with the join's own serdes and partitioner)."""

    def __init__(
        self,
        parents: list[GraphNode],
        topic: str,
        sink_name: str,
        source_name: str,
        key_serde: Serde | None,
        value_serde: Any,
        partitioner: Any,
    ) -> None:
        super().__init__(source_name, parents)
        self.topic, self.sink_name = topic, sink_name
        self.key_serde, self.value_serde, self.partitioner = key_serde, value_serde, partitioner

    def write_to(self, topology: Topology) -> None:
        topology.mark_internal_topic(self.topic)
        topology.add_sink(
            self.sink_name,
            self.topic,
            *self.parent_names,
            key_serde=self.key_serde,
            value_serde=self.value_serde,
            partitioner=self.partitioner,
        )
        topology.add_source(self.name, self.topic, key_serde=self.key_serde, value_serde=self.value_serde)


def _only_key(partitioner: Callable[..., Any]) -> Callable[[str, Any, Any, int], Any]:
    """Kafka calls TableJoined's partitioners with the key only (the value is the internal wrapper)."""

    def partition(topic: str, key: Any, _value: Any, num_partitions: int) -> Any:
        return partitioner(topic, key, None, num_partitions)

    return partition


def foreign_key_join(
    left: KTable,
    right: KTable,
    extractor: Callable[[Any], Any],
    joiner: Callable[[Any, Any], Any],
    named: Named | TableJoined | str | None,
    materialized: Materialized | str | None,
    *,
    left_join: bool,
) -> KTable:
    from edge.dsl.ktable import KTable, TableSourceState

    if not isinstance(right, KTable):
        raise TopologyError(f"foreign-key join: expected a KTable to join with, got {type(right).__name__}")
    if right._builder is not left._builder:
        raise TopologyError("foreign-key join: both tables must come from the same StreamsBuilder")
    if not callable(extractor):
        raise TopologyError("foreign-key join: foreign_key_extractor must be a callable(value) -> key")
    if not callable(joiner):
        raise TopologyError("foreign-key join: joiner must be a callable(left_value, right_value)")
    table_joined = named if isinstance(named, TableJoined) else TableJoined(name_of(named))
    base = table_joined.name
    if base is not None and not base:
        raise TopologyError("an explicit name must not be empty")
    builder = left._builder
    names = builder.names
    # Kafka: old values of the right table let identical updates skip the prefix scan; those of the
    # left table tell the subscription sender which foreign key a row leaves
    right.enable_sending_old_values(True)
    left.enable_sending_old_values(True)

    def name(suffix: str, prefix: str) -> str:
        return names.processor(prefix, f"{base}{suffix}" if base else None)

    registration = name("-subscription-registration", naming.FK_SUBSCRIPTION_REGISTRATION) + "-topic"
    serdes = ops.FKJoinSerdes(left.key_serde, right.key_serde, left.value_serde, registration)

    send = builder.add_node(
        ProcessorGraphNode(
            name("-subscription-registration-processor", naming.FK_SUBSCRIPTION_REGISTRATION),
            [left._node],
            lambda: ops.SubscriptionSendProcessor(extractor, serdes, left_join),
        )
    )
    sink = name("-subscription-registration-sink", naming.KTABLE_SINK)
    source = name("-subscription-registration-source", naming.KTABLE_SOURCE)
    other_partitioner = table_joined.other_partitioner
    subscription = builder.add_node(
        _InternalTopicGraphNode(
            [send],
            registration,
            sink,
            source,
            right.key_serde,
            ops.SubscriptionWrapperSerde(left.key_serde, f"{registration}-pk"),
            None if other_partitioner is None else _only_key(other_partitioner),
        )
    )
    store_name = name("-subscription-store", naming.FK_SUBSCRIPTION_STATE_STORE)
    store = SubscriptionStoreSpec(store_name, primary_key_serde=left.key_serde)
    store.pseudo_topic = f"{registration}-pk"
    receive = builder.add_node(
        ProcessorGraphNode(
            name("-subscription-receive", naming.FK_SUBSCRIPTION_PROCESSOR),
            [subscription],
            lambda: ops.SubscriptionReceiveProcessor(store_name, serdes),
            stores=[store_name],
            new_stores=[store],
        )
    )
    right_getter = right._getter
    join_foreign = builder.add_node(
        ProcessorGraphNode(
            name("-subscription-join-foreign", naming.FK_SUBSCRIPTION_PROCESSOR),
            [receive],
            lambda: ops.SubscriptionJoinProcessor(right_getter),
            stores=right_getter.store_names,
        )
    )
    foreign_join = builder.add_node(
        ProcessorGraphNode(
            name("-foreign-join-subscription", naming.FK_SUBSCRIPTION_PROCESSOR),
            [right._node],
            lambda: ops.ForeignTableJoinProcessor(store_name, serdes),
            stores=[store_name],
        )
    )
    response_topic = name("-subscription-response", naming.FK_SUBSCRIPTION_RESPONSE) + "-topic"
    response_sink = name("-subscription-response-sink", naming.KTABLE_SINK)
    response_source = name("-subscription-response-source", naming.KTABLE_SOURCE)
    partitioner = table_joined.partitioner
    response = builder.add_node(
        _InternalTopicGraphNode(
            [join_foreign, foreign_join],
            response_topic,
            response_sink,
            response_source,
            left.key_serde,
            ops.SubscriptionResponseWrapperSerde(right.value_serde),
            ops.response_partitioner if partitioner is None else _only_key(partitioner),
        )
    )
    left_getter = left._getter
    resolver = builder.add_node(
        ProcessorGraphNode(
            name("-subscription-response-resolver", naming.FK_SUBSCRIPTION_RESPONSE_RESOLVER),
            [response],
            lambda: ops.ResponseJoinProcessor(left_getter, joiner, serdes, left_join),
            stores=left_getter.store_names,
        )
    )
    result_name = name("-result", naming.FK_JOIN_OUTPUT)
    m = materialized_of(materialized)
    result_store = m.store_name or names.store(naming.FK_JOIN_OUTPUT)
    spec = store_spec(m, result_store, left.key_serde, None)
    state = TableSourceState(spec, m.store_name is not None)
    result = builder.add_node(
        ProcessorGraphNode(
            result_name,
            [resolver],
            state.supplier,
            stores=[result_store],
            new_stores=[spec],
            stores_if=lambda: state.materialized,
        )
    )
    getter = ValueGetterSupplier(lambda: StoreGetter(result_store), [result_store])
    queryable = result_store if m.store_name is not None else None
    return KTable(builder, result, spec.key_serde, spec.value_serde, queryable, getter, source=state)

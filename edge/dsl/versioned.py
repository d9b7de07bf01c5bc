"""Versioned tables in the DSL (KIP-914): ``builder.table(topic, consumed,
Materialized.as_versioned(name, history_retention))`` and stream-table joins against them.

* The table keeps every value with its validity range (:mod:`edge.state.versioned`); an update older
  than the key's current value is stored as history but not forwarded downstream (it must not replace
  the current row of derived tables).
* ``stream.join(versioned_table, joiner)`` joins each stream record with the table value valid at the
  record's timestamp, so a late stream record sees the value of its own time, not today's.
* ``Joined.with_(..., grace=ms)`` (Kafka's ``Joined.withGracePeriod``) holds stream records in a
  time-ordered buffer store ``<join name>-Buffer`` until stream time passes ``timestamp + grace`` and
  joins them in timestamp order, so table updates arriving a little late are still seen. The grace may
  not exceed the table's history retention ("History retention must be at least grace period.") and
  needs a versioned table ("KTable must be versioned to use a grace period in a stream table join.").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from edge.errors import TopologyError
from edge.processor.ops.versioned import (
    KStreamVersionedTableJoin,
    VersionedGetterSupplier,
    VersionedKTableSource,
)
from edge.serde import Serdes
from edge.topology.graph import ProcessorGraphNode
from edge.topology.stores import StoreSpec

if TYPE_CHECKING:
    from edge.dsl.kstream import KStream
    from edge.dsl.options import Joined
    from edge.processor.ops.getters import ValueGetterSupplier


def versioned_source(spec: StoreSpec) -> tuple[Any, VersionedGetterSupplier]:
    """The source state (always materialized: the user named the store) and getter of a versioned
    table source."""
    from edge.dsl.ktable import TableSourceState

    class VersionedTableSourceState(TableSourceState):
        def supplier(self) -> VersionedKTableSource:  # type: ignore[override]
            return VersionedKTableSource(self.spec.name)

    return VersionedTableSourceState(spec, True), VersionedGetterSupplier(spec.name, spec.retention_ms)


def versioned_stream_table_join(
    stream: KStream,
    getter: ValueGetterSupplier,
    joiner: Callable[[Any, Any], Any],
    joined: Joined,
    prefix: str,
    explicit: str | None,
    left: bool,
) -> KStream:
    from edge.dsl.kstream import KStream

    grace = joined.grace_ms
    versioned = getattr(getter, "versioned", False)
    if grace is not None:
        if not versioned:
            raise TopologyError("KTable must be versioned to use a grace period in a stream table join.")
        if getter.history_retention_ms < grace:  # type: ignore[attr-defined]
            raise TopologyError("History retention must be at least grace period.")
    builder = stream._builder
    name = builder.names.processor(prefix, explicit)
    stores = list(getter.store_names)
    new_stores: list[StoreSpec] = []
    buffer_name: str | None = None
    if grace is not None:
        buffer_name = f"{name}-Buffer"
        stores.append(buffer_name)
        new_stores.append(
            StoreSpec(
                buffer_name,
                Serdes.bytes(),
                Serdes.bytes(),
                persistent=True,
                logging_enabled=True,
                caching_enabled=False,
                timestamped=False,
            )
        )
    key_serde = joined.key_serde or stream.key_serde
    value_serde = joined.value_serde or stream.value_serde

    def supplier() -> KStreamVersionedTableJoin:
        return KStreamVersionedTableJoin(getter, joiner, left, grace, buffer_name, key_serde, value_serde)

    node = builder.add_node(
        ProcessorGraphNode(name, [stream._node], supplier, stores=stores, new_stores=new_stores)
    )
    node.null_key_relaxed = left  # type: ignore[attr-defined]
    return KStream(builder, node, key_serde, None, False)

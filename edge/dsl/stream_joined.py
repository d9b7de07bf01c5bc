"""StreamJoined: the options of a windowed stream-stream join (Kafka's ``StreamJoined``).

A stream-stream join keeps each side's recent records in a window store (and, for left/outer joins, a
shared store of records still waiting for a partner), so unlike ``Joined`` it needs the serdes of both
value types and says how those stores are named and logged:

* ``with_(key_serde, value_serde, other_value_serde)``: serdes of the key and of both sides' values
  (None: the stream's own serde, else the config default);
* ``with_name(name)``: names the processors (``<name>-this-windowed``, ``<name>-this-join``,
  ``<name>-merge``...) and the repartition topics (``<name>-left-repartition``);
* ``with_store_name(name)`` / ``as_(name)``: base name of the stores (``<name>-this-join-store``,
  ``<name>-outer-other-join-store``, ``<name>-left-shared-join-store``...) and so of their changelogs;
  without it the stores take the generated join processor names (``KSTREAM-JOINTHIS-0000000004-store``);
* ``with_logging_disabled()`` / ``with_logging_enabled(config)``: changelog topics on or off, and extra
  topic configs for them (the window stores always use ``cleanup.policy=delete``: they keep duplicates,
  which compaction would lose).

Kafka's store-supplier variants (``withThisStoreSupplier``, ``withDslStoreSuppliers``) are not offered: the
stores are always the persistent RocksDB ones the DSL uses elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from edge.dsl.windows import JoinWindows
from edge.errors import TopologyError
from edge.processor.ops.stream import KStreamPassThrough
from edge.processor.ops.stream_joins import (
    KStreamJoinWindow,
    KStreamKStreamJoinSide,
    LeftOrRightValueListSerde,
    TimestampedKeyAndJoinSideSerde,
    TimeTrackers,
    key_joiner,
)
from edge.serde import Serde
from edge.state import key_value_store_builder
from edge.topology import naming
from edge.topology.graph import ProcessorGraphNode
from edge.topology.stores import StoreSpec

if TYPE_CHECKING:
    from edge.dsl.kstream import KStream
    from edge.processor.config import TaskConfig
    from edge.state import StoreBuilder


@dataclass(frozen=True, slots=True)
class StreamJoined:
    key_serde: Serde | None = None
    value_serde: Serde | None = None
    other_value_serde: Serde | None = None
    name: str | None = None
    store_name: str | None = None
    logging_enabled: bool = True
    topic_config: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def with_(
        cls, key_serde: Serde | None, value_serde: Serde | None, other_value_serde: Serde | None = None
    ) -> StreamJoined:
        return cls(key_serde, value_serde, other_value_serde)

    @classmethod
    def as_(cls, store_name: str) -> StreamJoined:
        """Kafka's ``StreamJoined.as(storeName)``: only the base store name."""
        return cls(store_name=_checked(store_name, "store name"))

    def with_name(self, name: str) -> StreamJoined:
        return replace(self, name=_checked(name, "name"))

    def with_store_name(self, store_name: str) -> StreamJoined:
        return replace(self, store_name=_checked(store_name, "store name"))

    def with_key_serde(self, key_serde: Serde | None) -> StreamJoined:
        return replace(self, key_serde=key_serde)

    def with_value_serde(self, value_serde: Serde | None) -> StreamJoined:
        return replace(self, value_serde=value_serde)

    def with_other_value_serde(self, other_value_serde: Serde | None) -> StreamJoined:
        return replace(self, other_value_serde=other_value_serde)

    def with_logging_disabled(self) -> StreamJoined:
        return replace(self, logging_enabled=False, topic_config={})

    def with_logging_enabled(self, config: Mapping[str, Any] | None = None) -> StreamJoined:
        """Changelogs on, with ``config`` added to each changelog topic's configs."""
        return replace(
            self, logging_enabled=True, topic_config={k: str(v) for k, v in (config or {}).items()}
        )


def _checked(name: Any, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise TopologyError(f"StreamJoined {what} must be a non-empty string, got {name!r}")
    return name


# -- building the join (called by KStream.join/left_join/outer_join with a KStream) -------------------
@dataclass(slots=True)
class OuterJoinStoreSpec(StoreSpec):
    """The shared store of records waiting for a partner (Kafka's ``KSTREAM-OUTERSHARED-...-store``):
    a key-value store of ``TimestampedKeyAndJoinSide -> [LeftOrRightValue, ...]``, never cached; its
    serdes wrap the join's key and value serdes once the config's defaults are known."""

    other_value_serde: Serde | None = None

    def to_builder(self, config: TaskConfig) -> StoreBuilder:
        key_serde = self.key_serde or config.default_key_serde
        left = self.value_serde or config.default_value_serde
        right = self.other_value_serde or config.default_value_serde
        return key_value_store_builder(
            self.name,
            TimestampedKeyAndJoinSideSerde(key_serde),
            LeftOrRightValueListSerde(left, right),
            persistent=self.persistent,
            logging=self.logging_enabled,
            caching=False,
            changelog_config=self.changelog_config,
        )


def repartition_for_join(
    stream: KStream, name: str, key_serde: Serde | None, value_serde: Serde | None
) -> KStream:
    """Kafka's ``repartitionForJoin``: the repartition names are always drawn (so later generated names
    do not depend on reuse), but a stream joined twice under its generated name reuses its first
    repartition topic."""
    from edge.dsl.kstream import KStream, repartition_node

    key_serde = key_serde or stream.key_serde
    value_serde = value_serde or stream.value_serde
    builder = stream._builder
    cached = getattr(stream, "_join_repartition", None)
    if cached is not None and name == stream.name:
        for prefix in (naming.SINK, naming.FILTER, naming.SOURCE):
            builder.names.processor(prefix)
        node = cached
    else:
        node = repartition_node(builder, stream._node, name, key_serde, value_serde)
        stream._join_repartition = node  # type: ignore[attr-defined]
    return KStream(builder, node, key_serde, value_serde, False)


def stream_stream_join(
    this: KStream,
    other: KStream,
    joiner: Callable[..., Any],
    windows: JoinWindows | None,
    stream_joined: StreamJoined | None,
    *,
    left_outer: bool,
    right_outer: bool,
) -> KStream:
    """Kafka's ``KStreamImpl.doJoin`` + ``KStreamImplJoin.join``: names, stores and processors exactly as
    Kafka generates them (see :mod:`edge.processor.ops.stream_joins` for what the processors do)."""
    from edge.dsl.kstream import KStream

    if not isinstance(windows, JoinWindows):
        raise TopologyError(
            "a join with a KStream is a windowed stream-stream join and needs JoinWindows "
            f"(e.g. JoinWindows.of_time_difference_with_no_grace(...)), got {windows!r}; "
            "stream-table joins take a KTable or GlobalKTable"
        )
    if stream_joined is not None and not isinstance(stream_joined, StreamJoined):
        raise TopologyError(f"stream_joined must be a StreamJoined, got {type(stream_joined).__name__}")
    if other._builder is not this._builder:
        raise TopologyError("join(): both streams must come from the same StreamsBuilder")
    sj = stream_joined or StreamJoined()
    builder, names, name = this._builder, this._builder.names, sj.name
    relaxed = left_outer or right_outer
    if this.repartition_required:
        this = repartition_for_join(this, f"{name}-left" if name else this.name, sj.key_serde, sj.value_serde)
    if other.repartition_required:
        other = repartition_for_join(
            other, f"{name}-right" if name else other.name, sj.key_serde, sj.other_value_serde
        )

    this_suffix = "-outer-this-join" if right_outer else "-this-join"
    other_suffix = "-outer-other-join" if left_outer else "-other-join"
    this_windowed = names.processor(naming.WINDOWED, f"{name}-this-windowed" if name else None)
    other_windowed = names.processor(naming.WINDOWED, f"{name}-other-windowed" if name else None)
    this_prefix = naming.OUTERTHIS if right_outer else naming.JOINTHIS
    this_generated = names.processor(this_prefix)
    other_generated = names.processor(naming.OUTEROTHER if left_outer else naming.JOINOTHER)
    this_name = names.reserve(name + this_suffix) if name else this_generated
    other_name = names.reserve(name + other_suffix) if name else other_generated
    merge_name = names.processor(naming.MERGE, f"{name}-merge" if name else None)

    base = sj.store_name
    this_store = f"{base}{this_suffix}-store" if base else f"{this_generated}-store"
    other_store = f"{base}{other_suffix}-store" if base else f"{other_generated}-store"
    key_serde = sj.key_serde or this.key_serde
    this_value_serde = sj.value_serde or this.value_serde
    other_value_serde = sj.other_value_serde or other.value_serde
    size, grace = windows.size(), windows.grace_period_ms()
    # the join stores keep duplicates, which compaction would lose: Kafka forces cleanup.policy=delete
    window_topic_config = {**sj.topic_config, "cleanup.policy": "delete"}

    def window_spec(store: str, value_serde: Serde | None) -> StoreSpec:
        return StoreSpec(
            store,
            key_serde,
            value_serde,
            logging_enabled=sj.logging_enabled,
            caching_enabled=False,
            timestamped=False,
            changelog_config=window_topic_config if sj.logging_enabled else None,
            kind="window",
            window_size_ms=size,
            retention_ms=size + grace,
            retain_duplicates=True,
        )

    shared_store: str | None = None
    shared_specs: list[StoreSpec] = []
    if left_outer:
        shared_suffix = "-outer-shared-join" if right_outer else "-left-shared-join"
        shared_store = (
            f"{base}{shared_suffix}-store"
            if base
            else f"{naming.OUTERSHARED}{this_generated[len(this_prefix) :]}-store"
        )
        shared_specs.append(
            OuterJoinStoreSpec(
                shared_store,
                key_serde,
                this_value_serde,
                logging_enabled=sj.logging_enabled,
                caching_enabled=False,
                timestamped=False,
                changelog_config=dict(sj.topic_config) if sj.logging_enabled else None,
                other_value_serde=other_value_serde,
            )
        )

    trackers = TimeTrackers()
    key_joiner_ = key_joiner(joiner)
    before, after = windows.before_ms, windows.after_ms

    def side(store: str, is_left: bool, outer: bool) -> Callable[[], KStreamKStreamJoinSide]:
        def supplier() -> KStreamKStreamJoinSide:
            return KStreamKStreamJoinSide(
                store,
                is_left=is_left,
                outer=outer,
                windows_before_ms=before,
                windows_after_ms=after,
                grace_ms=grace,
                joiner=key_joiner_,
                outer_store_name=shared_store,
                trackers=trackers,
            )

        return supplier

    def windowed(store: str) -> Callable[[], KStreamJoinWindow]:
        return lambda: KStreamJoinWindow(store)

    shared = [shared_store] if shared_store else []
    this_w = ProcessorGraphNode(
        this_windowed,
        [this._node],
        windowed(this_store),
        [this_store],
        [window_spec(this_store, this_value_serde)],
    )
    other_w = ProcessorGraphNode(
        other_windowed,
        [other._node],
        windowed(other_store),
        [other_store],
        [window_spec(other_store, other_value_serde)],
    )
    this_j = ProcessorGraphNode(
        this_name, [this_w], side(other_store, True, left_outer), [other_store, *shared]
    )
    other_j = ProcessorGraphNode(
        other_name, [other_w], side(this_store, False, right_outer), [this_store, *shared]
    )
    # written (and so described) in the order Kafka's describe() sorts nodes of equal sub-tree size: by name;
    # the first join processor written declares the shared store
    for pair in ((this_w, other_w), (this_j, other_j)):
        ordered = sorted(pair, key=lambda n: n.name)
        if pair[0] is this_j:
            ordered[0].new_stores.extend(shared_specs)
        for node in ordered:
            builder.add_node(node)
    # Kafka labels a left/outer join NULL_KEY_RELAXED_JOIN: repartitions upstream keep null keys
    this_w.null_key_relaxed = other_w.null_key_relaxed = relaxed  # type: ignore[attr-defined]
    merge = builder.add_node(ProcessorGraphNode(merge_name, [this_j, other_j], KStreamPassThrough))
    return KStream(builder, merge, key_serde, None, False)

"""Option objects for DSL operations (Kafka's Consumed, Produced, Materialized, Grouped, Joined,
Repartitioned, Named, Branched). All are small immutable dataclasses; the classmethods mirror Kafka's
static factories (``as_`` because ``as`` is reserved) and ``with_*`` return modified copies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edge.errors import TopologyError
from edge.processor.node import StreamPartitioner
from edge.serde import Serde
from edge.time import to_millis


class _class_or_instance:
    """A method callable on the class (gets the class) or on an instance (gets the instance)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, obj: Any, owner: type) -> Callable[..., Any]:
        target = owner if obj is None else obj
        return lambda *args, **kwargs: self.fn(target, *args, **kwargs)


class _Options:
    def _with(self, **changes: Any) -> Any:
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]


@dataclass(frozen=True, slots=True)
class Named(_Options):
    """An explicit processor name, so generated names (and stores/topics derived from them) stay put."""

    name: str | None = None

    @classmethod
    def as_(cls, name: str) -> Named:
        return cls(name)


def name_of(named: Named | str | None) -> str | None:
    if named is None:
        return None
    name = named if isinstance(named, str) else named.name
    if name is not None:
        from edge.topology.naming import check_topic_name

        # Kafka's Named.validate: names end up in topic and store names, so the same rules apply
        check_topic_name(name, "name")
    return name


@dataclass(frozen=True, slots=True)
class Consumed(_Options):
    """How a source reads its topics: serdes, processor name, and the timestamp extractor (any of
    :mod:`edge.processor.timestamps`, or a callable ``(record, partition_time) -> int``; None = the config's
    ``default_timestamp_extractor``, else the record timestamp)."""

    key_serde: Serde | None = None
    value_serde: Serde | None = None
    name: str | None = None
    timestamp_extractor: Any = None

    @classmethod
    def with_(
        cls, key_serde: Serde | None, value_serde: Serde | None, timestamp_extractor: Any = None
    ) -> Consumed:
        return cls(key_serde, value_serde, timestamp_extractor=timestamp_extractor)

    @classmethod
    def as_(cls, name: str) -> Consumed:
        return cls(name=name)

    def with_name(self, name: str) -> Consumed:
        return self._with(name=name)

    def with_key_serde(self, serde: Serde) -> Consumed:
        return self._with(key_serde=serde)

    def with_value_serde(self, serde: Serde) -> Consumed:
        return self._with(value_serde=serde)

    @_class_or_instance
    def with_timestamp_extractor(self_or_cls: Any, extractor: Any) -> Consumed:
        """``Consumed.with_timestamp_extractor(x)`` (Kafka's static ``Consumed.with(extractor)``) or, on an
        instance, a copy with ``x``: ``Consumed.with_(k, v).with_timestamp_extractor(x)``."""
        if isinstance(self_or_cls, type):
            return self_or_cls(timestamp_extractor=extractor)
        return self_or_cls._with(timestamp_extractor=extractor)


@dataclass(frozen=True, slots=True)
class Produced(_Options):
    key_serde: Serde | None = None
    value_serde: Serde | None = None
    partitioner: StreamPartitioner | None = None
    name: str | None = None

    @classmethod
    def with_(cls, key_serde: Serde | None, value_serde: Serde | None) -> Produced:
        return cls(key_serde, value_serde)

    @classmethod
    def as_(cls, name: str) -> Produced:
        return cls(name=name)

    def with_partitioner(self, partitioner: StreamPartitioner) -> Produced:
        return self._with(partitioner=partitioner)


@dataclass(frozen=True, slots=True)
class Materialized(_Options):
    """How a KTable is stored: store name (queryable, and the stem of its changelog topic), serdes,
    RocksDB or in-memory, caching (collapses updates per key until commit) and logging (changelog)."""

    store_name: str | None = None
    key_serde: Serde | None = None
    value_serde: Serde | None = None
    persistent: bool = True
    caching_enabled: bool = True
    logging_enabled: bool = True
    #: window/session stores only: how long windows are kept (None = size + grace, as Kafka)
    retention_ms: int | None = None
    #: versioned key-value stores only (``as_versioned``): how long old values stay readable
    history_retention_ms: int | None = None
    segment_interval_ms: int | None = None
    #: the ``Stores`` supplier given to ``as_`` (key-value, window or session): the operation checks
    #: that it supplies its kind of store, as Kafka's typed ``Materialized`` does at compile time
    store_supplier: Any = None

    @classmethod
    def as_(cls, store_name: Any) -> Materialized:
        """A named store, or Kafka's ``Materialized.as(supplier)``: given a ``Stores`` supplier
        (``Stores.in_memory_key_value_store(name)``, ``Stores.persistent_window_store(...)``, ...) the
        store is named after it and is in memory or RocksDB as it says (a window or session supplier
        also sets the retention); given ``Stores.persistent_versioned_key_value_store(...)``, a
        versioned one."""
        from edge.state.stores import supplier_kind
        from edge.state.versioned import VersionedBytesStoreSupplier

        if isinstance(store_name, VersionedBytesStoreSupplier):
            return cls(
                store_name.name,
                persistent=store_name.persistent,
                caching_enabled=False,
                history_retention_ms=store_name.history_retention_ms,
                segment_interval_ms=store_name.segment_interval_ms,
            )
        if supplier_kind(store_name) is not None:
            return cls(
                store_name.name,
                persistent=store_name.persistent,
                retention_ms=getattr(store_name, "retention_ms", None),
                store_supplier=store_name,
            )
        if store_name is not None and not isinstance(store_name, str):
            raise TopologyError(
                f"Materialized.as_ takes a store name or a Stores supplier, got {store_name!r}"
            )
        return cls(store_name)

    @classmethod
    def as_versioned(
        cls, store_name: str, history_retention: Any, segment_interval: Any = None
    ) -> Materialized:
        """A versioned key-value store (KIP-889): every value of a key with its validity range, readable
        "as of" a time for ``history_retention`` (ms or ``timedelta``); see :mod:`edge.state.versioned`.
        Versioned stores are never cached."""
        from edge.state.versioned import persistent_versioned_key_value_store

        return cls.as_(persistent_versioned_key_value_store(store_name, history_retention, segment_interval))

    @classmethod
    def with_(cls, key_serde: Serde | None, value_serde: Serde | None) -> Materialized:
        return cls(None, key_serde, value_serde)

    def with_key_serde(self, serde: Serde) -> Materialized:
        return self._with(key_serde=serde)

    def with_value_serde(self, serde: Serde) -> Materialized:
        return self._with(value_serde=serde)

    def with_caching_disabled(self) -> Materialized:
        return self._with(caching_enabled=False)

    def with_caching_enabled(self) -> Materialized:
        return self._with(caching_enabled=True)

    def with_logging_disabled(self) -> Materialized:
        return self._with(logging_enabled=False)

    def in_memory(self) -> Materialized:
        return self._with(persistent=False)

    def with_retention(self, retention: Any) -> Materialized:
        """How long a window or session store keeps windows (int ms or ``timedelta``; Kafka's
        ``withRetention``). It must cover size + grace (sessions: gap + grace; sliding windows:
        2 * time difference + grace): a shorter one is an error when the aggregation is defined.
        Key-value stores ignore it."""
        ms = to_millis(retention, "retention")
        if ms < 0:
            raise TopologyError(f"retention must not be negative, got {ms} ms")
        return self._with(retention_ms=ms)


def materialized_of(m: Materialized | str | None) -> Materialized:
    if m is None:
        return Materialized()
    return Materialized(m) if isinstance(m, str) else m


@dataclass(frozen=True, slots=True)
class Grouped(_Options):
    """Serdes of a grouping and the name of its repartition topic (``<name>-repartition``)."""

    name: str | None = None
    key_serde: Serde | None = None
    value_serde: Serde | None = None

    @classmethod
    def as_(cls, name: str) -> Grouped:
        return cls(name)

    @classmethod
    def with_(cls, key_serde: Serde | None, value_serde: Serde | None) -> Grouped:
        return cls(None, key_serde, value_serde)


@dataclass(frozen=True, slots=True)
class Joined(_Options):
    """Serdes and name of a stream-table join; ``grace_ms`` (versioned tables only) holds stream
    records back that long to join them in timestamp order (Kafka's ``Joined.withGracePeriod``)."""

    key_serde: Serde | None = None
    value_serde: Serde | None = None
    other_value_serde: Serde | None = None
    name: str | None = None
    grace_ms: int | None = None

    @classmethod
    def with_(
        cls,
        key_serde: Serde | None,
        value_serde: Serde | None,
        other: Serde | None = None,
        name: str | None = None,
        grace: Any = None,
    ) -> Joined:
        return cls(key_serde, value_serde, other, name)._with_grace(grace)

    def with_grace_period(self, grace: Any) -> Joined:
        return self._with_grace(grace)

    def _with_grace(self, grace: Any) -> Joined:
        if grace is None:
            return self
        ms = to_millis(grace, "grace period")
        if ms < 0:
            raise TopologyError(f"the join grace period must not be negative, got {ms} ms")
        return self._with(grace_ms=ms)

    @classmethod
    def as_(cls, name: str) -> Joined:
        return cls(name=name)


@dataclass(frozen=True, slots=True)
class TableJoined(_Options):
    """Options of a foreign-key table-table join (Kafka's ``TableJoined``): the base name of its
    processors, topics and subscription store, and partitioners for the left table's key
    (``partitioner``, routes answers back) and the right table's key (``other_partitioner``, routes
    subscriptions) when the tables are not partitioned like Kafka's default partitioner. Partitioners
    are called as ``partitioner(topic, key, None, num_partitions)``."""

    name: str | None = None
    partitioner: StreamPartitioner | None = None
    other_partitioner: StreamPartitioner | None = None

    @classmethod
    def as_(cls, name: str) -> TableJoined:
        return cls(name)

    @classmethod
    def with_(
        cls, partitioner: StreamPartitioner | None, other_partitioner: StreamPartitioner | None
    ) -> TableJoined:
        return cls(None, partitioner, other_partitioner)

    def with_name(self, name: str) -> TableJoined:
        return self._with(name=name)


@dataclass(frozen=True, slots=True)
class Repartitioned(_Options):
    name: str | None = None
    key_serde: Serde | None = None
    value_serde: Serde | None = None
    num_partitions: int | None = None
    partitioner: StreamPartitioner | None = None

    @classmethod
    def as_(cls, name: str) -> Repartitioned:
        return cls(name)

    @classmethod
    def with_(cls, key_serde: Serde | None, value_serde: Serde | None) -> Repartitioned:
        return cls(None, key_serde, value_serde)

    def with_num_partitions(self, n: int) -> Repartitioned:
        return self._with(num_partitions=n)


@dataclass(frozen=True, slots=True)
class Branched(_Options):
    """A branch of ``split()``: its name suffix and optionally a function applied to the branch stream
    (its result, if a KStream, is what the result map holds) or a consumer (not in the map)."""

    name: str | None = None
    function: Callable[[Any], Any] | None = None
    consumer: Callable[[Any], None] | None = None

    @classmethod
    def as_(cls, name: str) -> Branched:
        return cls(name)

    @classmethod
    def with_function(cls, fn: Callable[[Any], Any], name: str | None = None) -> Branched:
        return cls(name, function=fn)

    @classmethod
    def with_consumer(cls, fn: Callable[[Any], None], name: str | None = None) -> Branched:
        return cls(name, consumer=fn)

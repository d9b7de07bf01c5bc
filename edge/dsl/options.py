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
    if name is not None and not name:
        raise TopologyError("an explicit name must not be empty")
    return name


@dataclass(frozen=True, slots=True)
class Consumed(_Options):
    key_serde: Serde | None = None
    value_serde: Serde | None = None
    name: str | None = None

    @classmethod
    def with_(cls, key_serde: Serde | None, value_serde: Serde | None) -> Consumed:
        return cls(key_serde, value_serde)

    @classmethod
    def as_(cls, name: str) -> Consumed:
        return cls(name=name)

    def with_name(self, name: str) -> Consumed:
        return self._with(name=name)


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

    @classmethod
    def as_(cls, store_name: str) -> Materialized:
        return cls(store_name)

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
    key_serde: Serde | None = None
    value_serde: Serde | None = None
    other_value_serde: Serde | None = None
    name: str | None = None

    @classmethod
    def with_(cls, key_serde: Serde | None, value_serde: Serde | None, other: Serde | None = None) -> Joined:
        return cls(key_serde, value_serde, other)

    @classmethod
    def as_(cls, name: str) -> Joined:
        return cls(name=name)


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

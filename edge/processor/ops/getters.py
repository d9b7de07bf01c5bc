"""Value getters: how a join reads the current value of a key from a KTable that may not be
materialized (Kafka's KTableValueGetterSupplier). A filtered or mapped table without its own store
computes the value from its parent's getter; a materialized table reads its store.

A supplier is created by the DSL (per logical table) and makes one getter per task; getters return a
``ValueAndTimestamp`` or ``None``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from edge.processor.api import ProcessorContext
from edge.serde import ValueAndTimestamp


class ValueGetter(Protocol):
    def init(self, context: ProcessorContext) -> None: ...

    def get(self, key: Any) -> ValueAndTimestamp | None: ...


class ValueGetterSupplier:
    """Makes getters; ``store_names`` are the stores a processor using them must be connected to."""

    def __init__(self, make: Callable[[], ValueGetter], store_names: list[str]) -> None:
        self.make = make
        self.store_names = store_names


class StoreGetter:
    def __init__(self, store_name: str) -> None:
        self._name = store_name

    def init(self, context: ProcessorContext) -> None:
        self.get = context.get_state_store(self._name).get  # type: ignore[method-assign]

    def get(self, key: Any) -> ValueAndTimestamp | None:  # replaced by the store's get in init
        raise RuntimeError("getter used before init")


class FilterGetter:
    def __init__(self, parent: ValueGetter, predicate: Callable[[Any, Any], bool], negate: bool) -> None:
        self._parent, self._predicate, self._negate = parent, predicate, negate

    def init(self, context: ProcessorContext) -> None:
        self._parent.init(context)

    def get(self, key: Any) -> ValueAndTimestamp | None:
        vt = self._parent.get(key)
        if vt is None or bool(self._predicate(key, vt[0])) is self._negate:
            return None
        return vt


class MapValuesGetter:
    def __init__(self, parent: ValueGetter, mapper: Callable[[Any, Any], Any]) -> None:
        self._parent, self._mapper = parent, mapper

    def init(self, context: ProcessorContext) -> None:
        self._parent.init(context)

    def get(self, key: Any) -> ValueAndTimestamp | None:
        vt = self._parent.get(key)
        if vt is None:
            return None
        value = self._mapper(key, vt[0])
        return None if value is None else ValueAndTimestamp(value, vt[1])


class JoinGetter:
    def __init__(
        self,
        left: ValueGetter,
        right: ValueGetter,
        joiner: Callable[[Any, Any], Any],
        need_left: bool,
        need_right: bool,
    ) -> None:
        self._left, self._right, self._joiner = left, right, joiner
        self._need_left, self._need_right = need_left, need_right

    def init(self, context: ProcessorContext) -> None:
        self._left.init(context)
        self._right.init(context)

    def get(self, key: Any) -> ValueAndTimestamp | None:
        lv = self._left.get(key)
        rv = self._right.get(key)
        if (lv is None and (self._need_left or rv is None)) or (rv is None and self._need_right):
            return None
        ts = max(lv[1] if lv else -1, rv[1] if rv else -1)
        return ValueAndTimestamp(self._joiner(lv[0] if lv else None, rv[0] if rv else None), ts)

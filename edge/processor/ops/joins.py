"""Joins with tables: stream-table and stream-global-table lookups, and table-table joins (one
processor per side, merged by :class:`~edge.processor.ops.table.KTableJoinMerger`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from edge.processor.api import Processor, ProcessorContext
from edge.processor.context import forward_all
from edge.processor.ops.getters import ValueGetterSupplier
from edge.processor.record import Change, Record

log = logging.getLogger(__name__)


class KStreamTableJoin(Processor):
    """Looks each stream record up in a table (a KTable of this partition or a GlobalKTable).

    ``key_selector`` (global tables) maps the stream record to the table key; the output keeps the
    stream key and timestamp. Inner joins drop records without a match; left joins call the joiner with
    ``None``. Records whose lookup key or value is null are dropped (left joins still emit for a
    null lookup key, as Kafka Streams does since 3.7).
    """

    def __init__(
        self,
        getter: ValueGetterSupplier,
        joiner: Callable[[Any, Any], Any],
        left: bool,
        key_selector: Callable[[Any, Any], Any] | None = None,
    ) -> None:
        self._getter = getter.make()
        self._joiner = joiner
        self._left = left
        self._key_selector = key_selector

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._getter.init(context)
        self._get = self._getter.get
        self._forward = forward_all(context)

    def process(self, record: Record) -> None:
        value = record.value
        if value is None:
            return
        lookup = record.key if self._key_selector is None else self._key_selector(record.key, value)
        if lookup is None:
            if self._left:
                self._forward(Record(record.key, self._joiner(value, None), record.timestamp, record.headers))
            return
        vt = self._get(lookup)
        if vt is None:
            if not self._left:
                return
            other = None
        else:
            other = vt[0]
        self._forward(Record(record.key, self._joiner(value, other), record.timestamp, record.headers))


class KTableKTableJoinSide(Processor):
    """One side of a table-table join: on a change of this side, look the other side up and emit the
    joined change. ``need_left``/``need_right`` say which sides must exist for a joined row (inner: both,
    left: left, outer: either).
    """

    def __init__(
        self,
        other: ValueGetterSupplier,
        joiner: Callable[[Any, Any], Any],
        this_is_left: bool,
        need_left: bool,
        need_right: bool,
    ) -> None:
        self._other = other.make()
        self._joiner = joiner
        self._this_is_left = this_is_left
        self._need_left = need_left
        self._need_right = need_right

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._other.init(context)
        self._forward = forward_all(context)

    def _row(self, this: Any, other: Any) -> Any:
        """The joined row given this side's value and the other side's value (None = no row)."""
        left, right = (this, other) if self._this_is_left else (other, this)
        if left is None:
            if right is None or self._need_left:
                return None
        elif right is None and self._need_right:
            return None
        return self._joiner(left, right)

    def process(self, record: Record) -> None:
        key = record.key
        if key is None:
            return
        change = record.value
        vt = self._other.get(key)
        other = None if vt is None else vt[0]
        ts = record.timestamp if vt is None else max(record.timestamp, vt[1])
        new = self._row(change.new, other)
        old = self._row(change.old, other)
        if new is None and old is None:
            return
        self._forward(Record(key, Change(new, old), ts, record.headers))

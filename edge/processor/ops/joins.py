"""Joins with tables: stream-table and stream-global-table lookups, and table-table joins (one
processor per side, merged by :class:`~edge.processor.ops.table.KTableJoinMerger`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from edge.processor.api import Processor, ProcessorContext
from edge.processor.context import forward_all
from edge.processor.ops.dropped import skip_record
from edge.processor.ops.getters import ValueGetterSupplier
from edge.processor.record import Change, Record

log = logging.getLogger(__name__)
_new = object.__new__


class KStreamTableJoin(Processor):
    """Looks each stream record up in a table (a KTable of this partition or a GlobalKTable).

    ``key_selector`` (global tables) maps the stream record to the table key; the output keeps the
    stream key and timestamp. Inner joins drop records without a match; left joins call the joiner with
    ``None``. Records whose value is null are skipped and counted as dropped, and so are an inner
    join's records whose lookup key is null; a left join joins a record whose lookup key is null with a
    null table value (Kafka 4.1, KAFKA-19208: the key selector of a global table join may answer null
    for "no match", and the left join must not lose the record).
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
        """Kafka's ``KStreamKTableJoinProcessor.maybeDropRecord`` + ``doJoin``: a null value, or an inner
        join's null lookup key, is skipped (logged, counted); a left join's null lookup key (its own
        null key, for a KTable) joins nothing."""
        key, value = record.key, record.value
        lookup = key if self._key_selector is None else self._key_selector(key, value)
        if value is None or (lookup is None and not self._left):
            skip_record(self.context, "null join key or value")
            return
        vt = None if lookup is None else self._get(lookup)
        if vt is None and not self._left:
            return
        joined = _new(Record)  # Record(...) without the __init__ frame: once per stream record
        joined.key = key
        joined.value = self._joiner(value, None if vt is None else vt[0])
        joined.timestamp = record.timestamp
        joined.headers = record.headers
        self._forward(joined)


class KTableKTableJoinSide(Processor):
    """One side of a table-table join (Kafka's KTableKTableInnerJoin / LeftJoin / RightJoin /
    OuterJoin processors): on a change of this side, look the other side up and emit the joined change.
    ``need_left``/``need_right`` say which sides must exist for a joined row (inner: both, left: left,
    outer: either). ``send_old_values`` (a flag object read per record, set once a downstream operator
    asked for old values) decides whether the old joined row is computed; without it a delete is
    forwarded as ``Change(None, None)``, a tombstone downstream, exactly as Kafka does.
    """

    def __init__(
        self,
        other: ValueGetterSupplier,
        joiner: Callable[[Any, Any], Any],
        this_is_left: bool,
        need_left: bool,
        need_right: bool,
        send_old_values: Any = None,
    ) -> None:
        self._other = other.make()
        self._joiner = joiner
        self._this_is_left = this_is_left
        self._need_left = need_left
        self._need_right = need_right
        self._send_old = send_old_values

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._other.init(context)
        self._forward = forward_all(context)

    def _join(self, this: Any, other: Any) -> Any:
        return self._joiner(this, other) if self._this_is_left else self._joiner(other, this)

    def process(self, record: Record) -> None:
        key = record.key
        if key is None:
            skip_record(self.context, "null key")
            return
        change = record.value
        send_old = self._send_old is None or bool(self._send_old.value)
        vt = self._other.get(key)
        other = None if vt is None else vt[0]
        new = old = None
        # does the other side have to exist for a joined row? (Kafka: inner; left join's right side)
        other_required = self._need_right if self._this_is_left else self._need_left
        this_required = self._need_left if self._this_is_left else self._need_right
        if other is None:
            if other_required:
                return
            if change.new is None and change.old is None:
                return
            ts = record.timestamp
        else:
            ts = max(record.timestamp, vt[1])
        if not this_required and not other_required:  # outer join
            if other is not None or change.new is not None:
                new = self._join(change.new, other)
            if send_old and (other is not None or change.old is not None):
                old = self._join(change.old, other)
        elif not this_required:  # the right side of a left join (Kafka's KTableKTableRightJoin)
            new = self._join(change.new, other)
            if send_old:
                old = self._join(change.old, other)
        else:  # inner join, or the left side of a left join
            if change.new is not None:
                new = self._join(change.new, other)
            if send_old and change.old is not None:
                old = self._join(change.old, other)
        self._forward(Record(key, Change(new, old), ts, record.headers))

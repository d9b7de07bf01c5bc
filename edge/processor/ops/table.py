"""KTable operators. Values flowing between them are ``Change(new, old)`` pairs; ``None`` is absence, so
a tombstone deletes and a filtered-out row becomes a delete of the row it used to be.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from edge.processor.api import Processor, ProcessorContext
from edge.processor.context import forward_all
from edge.processor.ops.forwarder import TableEmitter
from edge.processor.record import Change, Record

log = logging.getLogger(__name__)
_new = object.__new__


class KTableSource(Processor):
    """Upserts each record into the table's store and emits the change (old value from the store)."""

    def __init__(self, store_name: str) -> None:
        self._store_name = store_name

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._emitter = TableEmitter(context, self._store_name)
        self._get = self._emitter.store.get

    def process(self, record: Record) -> None:
        key = record.key
        if key is None:
            log.warning(
                "skipping a record with a null key for table store %s (topic %s, offset %s)",
                self._store_name,
                self.context.topic,
                self.context.offset,
            )
            return
        old = self._get(key)
        self._emitter.emit(
            key, record.value, None if old is None else old[0], record.timestamp, record.headers
        )


class KTableFilter(Processor):
    def __init__(self, predicate: Callable[[Any, Any], bool], negate: bool, store_name: str | None) -> None:
        self._predicate = predicate
        self._negate = negate
        self._store_name = store_name

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._emit = TableEmitter(context, self._store_name).emit

    def _keep(self, key: Any, value: Any) -> Any:
        if value is None or bool(self._predicate(key, value)) is self._negate:
            return None
        return value

    def process(self, record: Record) -> None:
        key, change = record.key, record.value
        new = self._keep(key, change.new)
        old = self._keep(key, change.old)
        if new is None and old is None:
            return
        self._emit(key, new, old, record.timestamp, record.headers)


class KTableMapValues(Processor):
    def __init__(self, mapper: Callable[[Any, Any], Any], store_name: str | None) -> None:
        self._mapper = mapper
        self._store_name = store_name

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._emit = TableEmitter(context, self._store_name).emit

    def process(self, record: Record) -> None:
        key, change, mapper = record.key, record.value, self._mapper
        new = None if change.new is None else mapper(key, change.new)
        old = None if change.old is None else mapper(key, change.old)
        self._emit(key, new, old, record.timestamp, record.headers)


class KTableToStream(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._forward = forward_all(context)

    def process(self, record: Record) -> None:
        out = _new(Record)  # Record(key, change.new, timestamp, headers) without the __init__ frame
        out.key = record.key
        out.value = record.value.new
        out.timestamp = record.timestamp
        out.headers = record.headers
        self._forward(out)


class KTableRepartitionMap(Processor):
    """``KTable.group_by``: re-keys both halves of a change so aggregations can subtract and add.

    When the old and new rows map to the same key one change carries both; otherwise the old value goes
    (as a subtraction) to the old key first, then the new value to the new key.
    """

    def __init__(self, selector: Callable[[Any, Any], tuple[Any, Any]]) -> None:
        self._selector = selector

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._forward = forward_all(context)

    def process(self, record: Record) -> None:
        key, change, select = record.key, record.value, self._selector
        old = None if change.old is None else select(key, change.old)
        new = None if change.new is None else select(key, change.new)
        if old is not None and (old[0] is None or old[1] is None):
            old = None
        if new is not None and (new[0] is None or new[1] is None):
            new = None
        ts, headers = record.timestamp, record.headers
        if old is not None and new is not None and old[0] == new[0]:
            self._forward(Record(new[0], Change(new[1], old[1]), ts, headers))
            return
        if old is not None:
            self._forward(Record(old[0], Change(None, old[1]), ts, headers))
        if new is not None:
            self._forward(Record(new[0], Change(new[1], None), ts, headers))


class KTableJoinMerger(Processor):
    """Where both sides of a table-table join meet; materializes the join result when asked to."""

    def __init__(self, store_name: str | None) -> None:
        self._store_name = store_name

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._emit = TableEmitter(context, self._store_name).emit

    def process(self, record: Record) -> None:
        change = record.value
        self._emit(record.key, change.new, change.old, record.timestamp, record.headers)

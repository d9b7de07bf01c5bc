"""KTable operators. Values flowing between them are ``Change(new, old)`` pairs; ``None`` is absence, so
a tombstone deletes and a filtered-out row becomes a delete of the row it used to be.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from edge.processor.api import Processor, ProcessorContext
from edge.processor.context import forward_all
from edge.processor.ops.dropped import skip_record
from edge.processor.ops.forwarder import TableEmitter
from edge.processor.record import Change, Record
from edge.processor.record_warnings import warn_record

log = logging.getLogger(__name__)
_new = object.__new__


class KTableSource(Processor):
    """Kafka's ``KTableSource``: a table built from a topic (``builder.table``) or a stream (``to_table``).

    Materialized (``store_name`` given): upserts each record into the store and emits the change, with
    the old value only when ``send_old_values`` (a downstream operator asked for it); an update older
    than the stored one is applied but logged (Kafka's "Detected out-of-order KTable update").
    Unmaterialized: forwards ``Change(value, None)``. A null key is skipped, logged and counted.
    """

    def __init__(self, store_name: str | None, send_old_values: bool = True) -> None:
        self._store_name = store_name
        self._send_old_values = send_old_values

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._forward = forward_all(context)
        if self._store_name is not None:
            self._emitter = TableEmitter(context, self._store_name, self._send_old_values)
            self._get = self._emitter.store.get

    def process(self, record: Record) -> None:
        key = record.key
        if key is None:
            skip_record(self.context, "null key")
            return
        if self._store_name is None:
            self._forward(Record(key, Change(record.value, None), record.timestamp, record.headers))
            return
        old = self._get(key)
        if old is not None and record.timestamp < old[1]:
            ctx = self.context
            warn_record(
                log,
                "Detected out-of-order KTable updates",
                "Detected out-of-order KTable update for %s, old timestamp=[%s] new timestamp=[%s]. "
                "topic=[%s] partition=[%s] offset=[%s].",
                self._store_name,
                old[1],
                record.timestamp,
                ctx.topic,
                ctx.partition,
                ctx.offset,
            )
        self._emitter.emit(
            key, record.value, None if old is None else old[0], record.timestamp, record.headers
        )


class KTableFilter(Processor):
    """Kafka's ``KTableFilter``. Without old values (``send_old_values`` False: the parent is not
    materialized) a rejected record is forwarded as a delete, because the filter cannot know whether
    the key was in its output; with them, a record that was out and stays out is skipped."""

    def __init__(
        self,
        predicate: Callable[[Any, Any], bool],
        negate: bool,
        store_name: str | None,
        send_old_values: bool = True,
    ) -> None:
        self._predicate = predicate
        self._negate = negate
        self._store_name = store_name
        self._send_old_values = send_old_values

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        emitter = TableEmitter(context, self._store_name, self._send_old_values)
        self._emit = emitter.emit
        self._store_get = emitter.store.get if emitter.store is not None else None

    def _keep(self, key: Any, value: Any) -> Any:
        if value is None or bool(self._predicate(key, value)) is self._negate:
            return None
        return value

    def process(self, record: Record) -> None:
        key, change = record.key, record.value
        new = self._keep(key, change.new)
        old = None
        if self._send_old_values:
            if self._store_get is not None:
                vt = self._store_get(key)
                old = None if vt is None else vt[0]
            else:
                old = self._keep(key, change.old)
            if new is None and old is None:
                return
        self._emit(key, new, old, record.timestamp, record.headers)


class KTableMapValues(Processor):
    """Kafka's ``KTableMapValues``: the old value is computed only when ``send_old_values``."""

    def __init__(
        self, mapper: Callable[[Any, Any], Any], store_name: str | None, send_old_values: bool = True
    ) -> None:
        self._mapper = mapper
        self._store_name = store_name
        self._send_old_values = send_old_values

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        emitter = TableEmitter(context, self._store_name, self._send_old_values)
        self._emit = emitter.emit
        self._store_get = emitter.store.get if emitter.store is not None else None

    def process(self, record: Record) -> None:
        key, change, mapper = record.key, record.value, self._mapper
        new = None if change.new is None else mapper(key, change.new)
        old = None
        if self._send_old_values:
            if self._store_get is not None:
                vt = self._store_get(key)
                old = None if vt is None else vt[0]
            elif change.old is not None:
                old = mapper(key, change.old)
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
    (as a subtraction) to the old key first, then the new value to the new key. A selector answering
    None, or a pair with a null key or value, skips that half silently, as Kafka's
    ``KTableRepartitionMap`` does (a null is how a Java selector says "not grouped").
    """

    def __init__(
        self, selector: Callable[[Any, Any], tuple[Any, Any]], name: str = "KTable.group_by"
    ) -> None:
        self._selector = selector
        self._name = name

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._forward = forward_all(context)

    def _select(self, key: Any, value: Any) -> tuple[Any, Any] | None:
        pair = self._selector(key, value)
        if pair is None:
            return None
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(
                f"KTable.group_by ({self._name}): the selector must return a (key, value) pair, "
                f"got {pair!r} for key {key!r}"
            )
        return pair[0], pair[1]

    def process(self, record: Record) -> None:
        key, change, select = record.key, record.value, self._select
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

    def __init__(self, store_name: str | None, send_old_values: bool = True) -> None:
        self._store_name = store_name
        self._send_old_values = send_old_values

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        emitter = TableEmitter(context, self._store_name, self._send_old_values)
        self._emit = emitter.emit
        self._store_get = None if emitter.store is None else emitter.store.get

    def process(self, record: Record) -> None:
        change = record.value
        old = change.old
        if self._store_get is not None and self._send_old_values:
            vt = self._store_get(record.key)  # Kafka's merger takes the old value from its store
            old = None if vt is None else vt[0]
        self._emit(record.key, change.new, old, record.timestamp, record.headers)

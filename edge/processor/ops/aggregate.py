"""Stream and table aggregations. Results live in a timestamped store; the result's timestamp is the
newest of the input record and the previous aggregate (Kafka Streams' rule), and every update is
emitted as a ``Change`` (collapsed by the record cache when the store caches).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from edge.processor.api import Processor, ProcessorContext
from edge.processor.ops.dropped import skip_record
from edge.processor.ops.forwarder import TableEmitter
from edge.processor.record import Record

log = logging.getLogger(__name__)


class _StoreBacked(Processor):
    #: Kafka's ``sendOldValues`` of an aggregation: whether updates carry the previous aggregate. The DSL
    #: sets it per processor from what downstream operators asked for (``edge.dsl.ktable.OldValuesRequest``);
    #: off, a cached store's flush reads no old value per key, as Kafka's does not. A processor built
    #: by hand keeps sending them.
    send_old_values = True

    def __init__(self, store_name: str) -> None:
        self._store_name = store_name

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        emitter = TableEmitter(context, self._store_name, self.send_old_values)
        self._emit = emitter.emit
        self._get = emitter.store.get

    def _skip(self, why: str) -> None:
        """Kafka's aggregate processors: log the skipped record and count it as dropped."""
        skip_record(self.context, why)


class KStreamAggregate(_StoreBacked):
    """Folds each record into its key's aggregate; records with a null key or value are skipped."""

    def __init__(
        self, store_name: str, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any]
    ) -> None:
        super().__init__(store_name)
        self._initializer = initializer
        self._aggregator = aggregator

    def process(self, record: Record) -> None:
        key, value = record.key, record.value
        if key is None or value is None:
            self._skip("a null key or value")
            return
        old = self._get(key)
        ts = record.timestamp
        if old is None:
            old_agg = None
            agg = self._initializer()
        else:
            old_agg = agg = old[0]
            if old[1] > ts:
                ts = old[1]
        self._emit(key, self._aggregator(key, value, agg), old_agg, ts, record.headers)


class KStreamCount(_StoreBacked):
    """``KGroupedStream.count``: ``KStreamAggregate`` with the initializer ``0`` and the aggregator
    ``agg + 1`` written out, so a count costs no Python call into either (same outputs, timestamps and
    skips)."""

    def process(self, record: Record) -> None:
        key = record.key
        if key is None or record.value is None:
            self._skip("a null key or value")
            return
        old = self._get(key)
        ts = record.timestamp
        if old is None:
            self._emit(key, 1, None, ts, record.headers)
            return
        old_agg = old[0]
        if old[1] > ts:
            ts = old[1]
        self._emit(key, old_agg + 1, old_agg, ts, record.headers)


class KStreamReduce(_StoreBacked):
    def __init__(self, store_name: str, reducer: Callable[[Any, Any], Any]) -> None:
        super().__init__(store_name)
        self._reducer = reducer

    def process(self, record: Record) -> None:
        key, value = record.key, record.value
        if key is None or value is None:
            self._skip("a null key or value")
            return
        old = self._get(key)
        ts = record.timestamp
        if old is None:
            self._emit(key, value, None, ts, record.headers)
            return
        if old[1] > ts:
            ts = old[1]
        self._emit(key, self._reducer(old[0], value), old[0], ts, record.headers)


class KTableAggregate(_StoreBacked):
    """Table aggregation: the old value of a change is subtracted, the new one added."""

    def __init__(
        self,
        store_name: str,
        initializer: Callable[[], Any],
        adder: Callable[[Any, Any, Any], Any],
        subtractor: Callable[[Any, Any, Any], Any],
    ) -> None:
        super().__init__(store_name)
        self._initializer = initializer
        self._adder = adder
        self._subtractor = subtractor

    def process(self, record: Record) -> None:
        key, change = record.key, record.value
        if key is None:
            self._skip("a null key")
            return
        if change.new is None and change.old is None:
            return
        old = self._get(key)
        old_agg = None if old is None else old[0]
        ts = record.timestamp if old is None else max(record.timestamp, old[1])
        agg = old_agg
        if change.old is not None and agg is not None:
            agg = self._subtractor(key, change.old, agg)
        if change.new is not None:
            agg = self._adder(key, change.new, self._initializer() if agg is None else agg)
        self._emit(key, agg, old_agg, ts, record.headers)


class KTableReduce(_StoreBacked):
    def __init__(
        self, store_name: str, adder: Callable[[Any, Any], Any], subtractor: Callable[[Any, Any], Any]
    ) -> None:
        super().__init__(store_name)
        self._adder = adder
        self._subtractor = subtractor

    def process(self, record: Record) -> None:
        key, change = record.key, record.value
        if key is None:
            self._skip("a null key")
            return
        if change.new is None and change.old is None:
            return
        old = self._get(key)
        old_agg = None if old is None else old[0]
        ts = record.timestamp if old is None else max(record.timestamp, old[1])
        agg = old_agg
        if change.old is not None and agg is not None:
            agg = self._subtractor(agg, change.old)
        if change.new is not None:
            agg = change.new if agg is None else self._adder(agg, change.new)
        self._emit(key, agg, old_agg, ts, record.headers)

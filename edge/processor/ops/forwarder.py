"""How a KTable node emits a change: write its store (if materialized) and forward, unless the store
caches, in which case the cache forwards collapsed changes when it flushes (Kafka's
TimestampedTupleForwarder + CacheFlushListener). This is where record-cache collapsing reaches downstream.
"""

from __future__ import annotations

from typing import Any

from edge.processor.api import ProcessorContext
from edge.processor.context import forward_all
from edge.processor.record import Change, Headers, Record
from edge.serde import ValueAndTimestamp
from edge.state.metered import DISCARD_CHANGES

_tuple_new = tuple.__new__
_new = object.__new__


class TableEmitter:
    """``send_old_values`` False forwards ``Change(new, None)`` (Kafka's TimestampedTupleForwarder with
    sendOldValues off): downstream operators that did not ask for old values never see them. A cached
    store keeps each dirty key's headers, so the flushed update carries the headers of the record that
    last wrote the key, as Kafka's cache does (its LRU entries keep the full record context)."""

    __slots__ = ("_caching", "_forward", "_put_cached", "_put_ts", "_send_old_values", "store")

    def __init__(
        self, context: ProcessorContext, store_name: str | None, send_old_values: bool = True
    ) -> None:
        self._forward = forward_all(context)
        self._send_old_values = send_old_values
        self.store: Any = None
        self._caching = False
        if store_name is not None:
            self.store = context.get_state_store(store_name)
            # old values only when a downstream operator asked for them: flushing then reads no old
            # value per key (Kafka's TimestampedTupleForwarder passes sendOldValues the same way)
            # a node without children gets nothing from the flushed changes: the cache still writes
            # them (and skips deletes of absent keys) but they are neither deserialized nor forwarded
            listener = self._on_flush if getattr(context, "has_children", True) else DISCARD_CHANGES
            self._caching = bool(self.store.set_flush_listener(listener, send_old_values))
            self._put_ts = _timestamped_put(self.store)
            if self._caching:
                self._put_cached = _cached_put(self.store)

    def _on_flush(self, key: Any, new: Any, old: Any, timestamp: int, headers: Headers | None = None) -> None:
        # the cache calls this only for a key that has a new value or had an old one (a delete of an
        # absent key is skipped there); ``old`` is None unless old values are sent
        new_value = None if new is None else new[0]
        old_value = None if old is None else old[0]
        self._forward(Record(key, Change(new_value, old_value), timestamp, headers))

    def emit(self, key: Any, new: Any, old: Any, timestamp: int, headers: Headers | None) -> None:
        """Record ``key``'s change to ``new`` (None = delete) from ``old``."""
        if self.store is not None:
            if self._caching:
                self._put_cached(key, new, timestamp, headers)
                return
            self._put_ts(key, new, timestamp)
        # Record(key, Change(new, old), timestamp, headers) without two __init__ frames
        change = _new(Change)
        change.new = new
        change.old = old if self._send_old_values else None
        record = _new(Record)
        record.key = key
        record.value = change
        record.timestamp = timestamp
        record.headers = headers
        self._forward(record)


def _timestamped_put(store: Any) -> Any:
    """``put_ts(key, new, timestamp)``: store ``ValueAndTimestamp(new, timestamp)`` (None: None); a metered
    store does it without building the tuple when it can (a count's store)."""
    put_ts = getattr(store, "put_timestamped", None)
    if put_ts is not None:
        return put_ts
    put = store.put

    def put_ts(key: Any, new: Any, timestamp: int) -> None:
        value = None if new is None else _tuple_new(ValueAndTimestamp, (new, timestamp))
        put(key, value, timestamp)

    return put_ts


def _cached_put(store: Any) -> Any:
    """``put_cached(key, new, timestamp, headers)``: a caching store's write of ``ValueAndTimestamp(new,
    timestamp)``, keeping the record's headers with the dirty entry when the store can (a metered store;
    a count's packs the bytes directly)."""
    put_cached = getattr(store, "put_timestamped_with_headers", None)
    if put_cached is not None:
        return put_cached
    put_with_headers = getattr(store, "put_with_headers", None)
    if put_with_headers is None:
        put = store.put

        def put_with_headers(key: Any, value: Any, timestamp: int, _headers: Headers | None) -> None:
            put(key, value, timestamp)

    def put_cached(key: Any, new: Any, timestamp: int, headers: Headers | None) -> None:
        value = None if new is None else _tuple_new(ValueAndTimestamp, (new, timestamp))
        put_with_headers(key, value, timestamp, headers)

    return put_cached

"""Metered (outermost, typed) key-value store: serdes, record timestamps, metrics, flush listener.

Hot-path design: serializer/deserializer bound methods and the inner store's bound methods are cached
as attributes on ``init``; when ``StoreContext.metrics`` is set, timed variants of the operations are
bound as instance attributes instead, so the untimed path carries no metrics branch at all.
"""

from __future__ import annotations

from collections.abc import Iterable
from time import perf_counter_ns
from typing import Any

from edge.errors import StateStoreError
from edge.serde import Serde, ValueAndTimestamp
from edge.serde.timestamped import _TS_LONG, _TS_LONG_UNPACK, _LongValueAndTimestampSerde
from edge.state.api import FlushListener, StoreContext, StoreMetrics, changelog_topic_name
from edge.state.iterators import DeserializingIterator

_tuple_new = tuple.__new__
_pack_long_ts = _TS_LONG.pack
_unpack_long_ts = _TS_LONG_UNPACK


def _packed_long(value: Any, timestamp: int) -> bytes | None:
    """The 16 stored bytes of ``ValueAndTimestamp(value, timestamp)`` in a long-valued store (the serde's
    ``_TS_LONG.pack(timestamp, value)``), or None when the serde must decide (None, not an int, out of
    range)."""
    if value.__class__ is not int:
        return None
    try:
        return _pack_long_ts(timestamp, value)
    except Exception:
        return None


def DISCARD_CHANGES(*_: Any) -> None:
    """The flush listener of a table node without children (a sentinel, compared by identity): see
    :meth:`MeteredKeyValueStore.set_flush_listener`."""


def _discard(*_: Any) -> None:
    """The bytes-level listener behind ``DISCARD_CHANGES`` (one call per flushed key, nothing else)."""


class MeteredKeyValueStore:
    def __init__(self, wrapped, key_serde: Serde, value_serde: Serde) -> None:
        self.wrapped = wrapped
        self.name: str = wrapped.name
        self.persistent: bool = wrapped.persistent
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._kser = key_serde.serialize
        self._kde = key_serde.deserialize
        self._vser = value_serde.serialize
        self._vde = value_serde.deserialize
        self._topic = ""
        self._listener: FlushListener | None = None
        self._metrics: StoreMetrics | None = None
        self._context: StoreContext | None = None
        self._ts = _no_timestamp

    # -- lifecycle ---------------------------------------------------------------------------------
    def init(self, context: StoreContext) -> None:
        if self.wrapped.is_open:
            raise StateStoreError("store is already initialised", store=self.name, task_id=context.task_id)
        self._context = context
        self._topic = context.changelog_topic or changelog_topic_name(context.application_id, self.name)
        self._ts = context.record_timestamp
        self.wrapped.init(context)
        self._metrics = context.metrics
        self._bind()

    def _bind(self) -> None:
        inner = self.wrapped
        self._iget = inner.get
        self._iput = inner.put
        self._idelete = inner.delete
        d = self.__dict__
        for name in _TIMED:
            d.pop(name, None)
        d.pop("put_timestamped", None)
        d.pop("put_timestamped_with_headers", None)
        if self._metrics is not None:
            for name in _TIMED:
                d[name] = getattr(self, "_timed_" + name)
        elif type(self.value_serde) is _LongValueAndTimestampSerde:
            # counts: the 16 stored bytes are packed and unpacked here, without building the
            # ValueAndTimestamp the serde would take apart again and without a call into the serde
            # (timed stores keep the generic paths, which time ``get`` and ``put``)
            d["put_timestamped"] = self._put_long_timestamped
            d["put_timestamped_with_headers"] = self._put_long_timestamped_with_headers
            d["get"] = self._get_long_timestamped

    @property
    def is_open(self) -> bool:
        return self.wrapped.is_open

    @property
    def context(self) -> StoreContext | None:
        return self._context

    @property
    def metrics(self) -> StoreMetrics | None:
        return self._metrics

    def flush(self) -> None:
        self.wrapped.flush()

    def close(self) -> None:
        self.wrapped.close()
        self._bind()

    def set_flush_listener(self, listener: FlushListener | None, send_old_values: bool = True) -> bool:
        """Returns True when the stack caches (the processor must not forward; the cache will).

        ``listener=DISCARD_CHANGES``: the processor has nowhere to forward to (no children), so flushed
        changes are not deserialized for it; the cache writes and skips exactly as with a listener."""
        layer = self.wrapped
        while layer is not None:
            setter = getattr(layer, "set_flush_listener", None)
            if setter is not None:
                self._listener = listener
                if listener is DISCARD_CHANGES:
                    setter(_discard, send_old_values)
                else:
                    setter(None if listener is None else self._on_flush, send_old_values)
                return True
            layer = getattr(layer, "wrapped", None)
        return False

    def _on_flush(
        self, key: bytes, new: bytes | None, old: bytes | None, timestamp: int, headers: Any = None
    ) -> None:
        topic = self._topic
        vde = self._vde
        args = (
            self._kde(topic, key),
            None if new is None else vde(topic, new),
            None if old is None else vde(topic, old),
            timestamp,
        )
        if headers is None:
            self._listener(*args)  # type: ignore[misc]
        else:
            self._listener(*args, headers)  # type: ignore[misc]

    def inner_most(self):
        """The innermost bytes store (RocksDB / in-memory)."""
        layer = self.wrapped
        while hasattr(layer, "wrapped"):
            layer = layer.wrapped
        return layer

    def restore_batch(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Apply raw changelog records (bypasses cache and logging): used by the runtime's restore."""
        self.wrapped.restore_batch(records)

    # -- serialization helpers ---------------------------------------------------------------------
    def _key_bytes(self, key: Any) -> bytes:
        if key is None:
            raise StateStoreError("state store keys must not be None", store=self.name)
        return self._kser(self._topic, key)  # type: ignore[return-value]

    # -- operations (untimed) ----------------------------------------------------------------------
    def get(self, key: Any) -> Any:
        topic = self._topic
        if key is None:
            return None
        return self._vde(topic, self._iget(self._kser(topic, key)))

    def put(self, key: Any, value: Any, timestamp: int | None = None) -> None:
        if timestamp is None:
            timestamp = self._ts()
        if key is None:
            raise StateStoreError("state store keys must not be None", store=self.name)
        topic = self._topic
        self._iput(self._kser(topic, key), self._vser(topic, value), timestamp)

    def put_timestamped(self, key: Any, value: Any, timestamp: int) -> None:
        """``put(key, ValueAndTimestamp(value, timestamp), timestamp)`` (``value=None``: put None), for a
        store whose values are timestamped; a long-valued store packs the bytes directly (same bytes)."""
        self.put(key, None if value is None else _tuple_new(ValueAndTimestamp, (value, timestamp)), timestamp)

    def _get_long_timestamped(self, key: Any) -> Any:
        """``get`` of a ``ValueAndTimestampSerde(Serdes.long())`` store: the serde's fast path inlined;
        anything that is not 16 bytes goes to the serde, which decodes -- or fails -- as before."""
        if key is None:
            return None
        topic = self._topic
        data = self._iget(self._kser(topic, key))
        if data is None:
            return None
        try:
            ts, v = _unpack_long_ts(data)
        except Exception:
            return self._vde(topic, data)
        return _tuple_new(ValueAndTimestamp, (v, ts))

    def _put_long_timestamped(self, key: Any, value: Any, timestamp: int) -> None:
        """``put_timestamped`` of a ``ValueAndTimestampSerde(Serdes.long())`` store: the serde's fast path
        inlined (``_packed_long``); anything else takes the generic path, which serializes -- or fails --
        exactly as before."""
        vb = _packed_long(value, timestamp)
        if vb is None or key is None:
            MeteredKeyValueStore.put_timestamped(self, key, value, timestamp)
            return
        self._iput(self._kser(self._topic, key), vb, timestamp)

    def put_with_headers(self, key: Any, value: Any, timestamp: int, headers: Any) -> None:
        """``put`` into a caching stack that keeps ``headers`` with the dirty entry, so the flush
        listener forwards the update with them (only for stores whose ``set_flush_listener`` was True)."""
        if key is None:
            raise StateStoreError("state store keys must not be None", store=self.name)
        topic = self._topic
        self._iput(self._kser(topic, key), self._vser(topic, value), timestamp, headers)

    def put_timestamped_with_headers(self, key: Any, value: Any, timestamp: int, headers: Any) -> None:
        """``put_with_headers(key, ValueAndTimestamp(value, timestamp), timestamp, headers)`` (``value=None``:
        put None): a cached aggregate's write; a long-valued store packs the bytes directly."""
        vt = None if value is None else _tuple_new(ValueAndTimestamp, (value, timestamp))
        self.put_with_headers(key, vt, timestamp, headers)

    def _put_long_timestamped_with_headers(self, key: Any, value: Any, timestamp: int, headers: Any) -> None:
        """``put_timestamped_with_headers`` of a count's store: ``_put_long_timestamped``'s fast path."""
        vb = _packed_long(value, timestamp)
        if vb is None or key is None:
            MeteredKeyValueStore.put_timestamped_with_headers(self, key, value, timestamp, headers)
            return
        self._iput(self._kser(self._topic, key), vb, timestamp, headers)

    def put_if_absent(self, key: Any, value: Any, timestamp: int | None = None) -> Any:
        if timestamp is None:
            timestamp = self._ts()
        topic = self._topic
        vb = self._vser(topic, value)
        if vb is None:
            raise StateStoreError("put_if_absent needs a non-None value", store=self.name)
        return self._vde(topic, self.wrapped.put_if_absent(self._key_bytes(key), vb, timestamp))

    def put_all(self, entries: Iterable[tuple[Any, Any]], timestamp: int | None = None) -> None:
        if timestamp is None:
            timestamp = self._ts()
        topic = self._topic
        kser = self._kser
        vser = self._vser
        name = self.name
        batch = []
        for k, v in entries:
            if k is None:
                raise StateStoreError("state store keys must not be None", store=name)
            batch.append((kser(topic, k), vser(topic, v), timestamp))
        self.wrapped.put_all(batch)

    def delete(self, key: Any, timestamp: int | None = None) -> Any:
        if timestamp is None:
            timestamp = self._ts()
        topic = self._topic
        return self._vde(topic, self._idelete(self._key_bytes(key), timestamp))

    def range(self, from_key: Any, to_key: Any) -> DeserializingIterator:
        topic = self._topic
        kser = self._kser
        it = self.wrapped.range(
            None if from_key is None else kser(topic, from_key),
            None if to_key is None else kser(topic, to_key),
        )
        return DeserializingIterator(it, self._kde, self._vde, topic)

    def prefix_scan(self, prefix: Any, prefix_serde: Serde | None = None) -> DeserializingIterator:
        topic = self._topic
        ser = self._kser if prefix_serde is None else prefix_serde.serialize
        pb = ser(topic, prefix)
        if pb is None:
            raise StateStoreError("prefix_scan needs a non-None prefix", store=self.name)
        return DeserializingIterator(self.wrapped.prefix_scan(pb), self._kde, self._vde, topic)

    def all(self) -> DeserializingIterator:
        return DeserializingIterator(self.wrapped.all(), self._kde, self._vde, self._topic)

    def approximate_num_entries(self) -> int:
        return self.wrapped.approximate_num_entries()

    # -- timed variants (bound as instance attributes when metrics are enabled) ---------------------
    # get/put are inlined (no nested call, no try/finally): an operation that raises is not timed.
    def _timed_get(self, key: Any) -> Any:
        t0 = perf_counter_ns()
        topic = self._topic
        v = None if key is None else self._vde(topic, self._iget(self._kser(topic, key)))
        m = self._metrics
        m.get_ns += perf_counter_ns() - t0  # type: ignore[union-attr]
        m.get_count += 1  # type: ignore[union-attr]
        return v

    def _timed_put(self, key: Any, value: Any, timestamp: int | None = None) -> None:
        t0 = perf_counter_ns()
        if timestamp is None:
            timestamp = self._ts()
        if key is None:
            raise StateStoreError("state store keys must not be None", store=self.name)
        topic = self._topic
        self._iput(self._kser(topic, key), self._vser(topic, value), timestamp)
        m = self._metrics
        m.put_ns += perf_counter_ns() - t0  # type: ignore[union-attr]
        m.put_count += 1  # type: ignore[union-attr]

    def _timed_delete(self, key: Any, timestamp: int | None = None) -> Any:
        t0 = perf_counter_ns()
        try:
            return MeteredKeyValueStore.delete(self, key, timestamp)
        finally:
            m = self._metrics
            m.delete_count += 1  # type: ignore[union-attr]
            m.delete_ns += perf_counter_ns() - t0  # type: ignore[union-attr]

    def _timed_put_if_absent(self, key: Any, value: Any, timestamp: int | None = None) -> Any:
        t0 = perf_counter_ns()
        try:
            return MeteredKeyValueStore.put_if_absent(self, key, value, timestamp)
        finally:
            m = self._metrics
            m.put_if_absent_count += 1  # type: ignore[union-attr]
            m.put_if_absent_ns += perf_counter_ns() - t0  # type: ignore[union-attr]

    def _timed_put_all(self, entries: Iterable[tuple[Any, Any]], timestamp: int | None = None) -> None:
        t0 = perf_counter_ns()
        try:
            MeteredKeyValueStore.put_all(self, entries, timestamp)
        finally:
            m = self._metrics
            m.put_all_count += 1  # type: ignore[union-attr]
            m.put_all_ns += perf_counter_ns() - t0  # type: ignore[union-attr]

    def _timed_range(self, from_key: Any, to_key: Any) -> DeserializingIterator:
        t0 = perf_counter_ns()
        try:
            return MeteredKeyValueStore.range(self, from_key, to_key)
        finally:
            m = self._metrics
            m.range_count += 1  # type: ignore[union-attr]
            m.range_ns += perf_counter_ns() - t0  # type: ignore[union-attr]

    def _timed_prefix_scan(self, prefix: Any, prefix_serde: Serde | None = None) -> DeserializingIterator:
        t0 = perf_counter_ns()
        try:
            return MeteredKeyValueStore.prefix_scan(self, prefix, prefix_serde)
        finally:
            m = self._metrics
            m.prefix_scan_count += 1  # type: ignore[union-attr]
            m.prefix_scan_ns += perf_counter_ns() - t0  # type: ignore[union-attr]

    def _timed_all(self) -> DeserializingIterator:
        t0 = perf_counter_ns()
        try:
            return MeteredKeyValueStore.all(self)
        finally:
            m = self._metrics
            m.all_count += 1  # type: ignore[union-attr]
            m.all_ns += perf_counter_ns() - t0  # type: ignore[union-attr]

    def _timed_flush(self) -> None:
        t0 = perf_counter_ns()
        try:
            self.wrapped.flush()
        finally:
            m = self._metrics
            m.flush_count += 1  # type: ignore[union-attr]
            m.flush_ns += perf_counter_ns() - t0  # type: ignore[union-attr]

    def __repr__(self) -> str:
        layers = []
        layer: Any = self
        while layer is not None:
            layers.append(type(layer).__name__)
            layer = getattr(layer, "wrapped", None)
        return f"<{' -> '.join(layers)} {self.name!r}>"


_TIMED = ("get", "put", "delete", "put_if_absent", "put_all", "range", "prefix_scan", "all", "flush")


def _no_timestamp() -> int:
    raise StateStoreError("store used before init(): no record timestamp accessor")

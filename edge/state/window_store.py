"""Window and session stores (Kafka's WindowStore / SessionStore), typed, on the key-value stack.

Stack built by the builders of :mod:`edge.state.window` (outer -> inner)::

    MeteredWindowStore | MeteredSessionStore  typed keys/values <-> Kafka's store key schemas
    CachingKeyValueStore                      optional record cache (collapses updates per window)
    ChangeLoggingKeyValueStore                changelog records keyed by the store key bytes
    SegmentedBytesStore                       time segments (RocksDB or memory), retention

Changelog keys are Kafka's (``key + start + seqnum`` for windows, ``key + end + start`` for sessions),
so a changelog written by either implementation restores the other.

Reads return lists wrapped in a closeable iterator: window fetches are short (one key's windows), and an
eager list never pins a RocksDB iterator past the call. Results follow key-bytes order, then time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from edge.errors import StateStoreError
from edge.serde.windowed import (
    MAX_TIME,
    SessionWindow,
    TimeWindow,
    Windowed,
    session_store_key,
    session_store_key_parts,
    window_store_key,
    window_store_key_parts,
    window_store_key_timestamp,
)
from edge.state.api import FlushListener, StoreContext, changelog_topic_name
from edge.state.segments import SegmentedBytesStore

if TYPE_CHECKING:
    from edge.serde import Serde

_MAX_SEQ = 0x7FFFFFFF
_MIN_SEQ = 0


class ListIterator:
    """A closeable iterator over a list of ``(key, value)`` pairs (Kafka's KeyValueIterator shape)."""

    __slots__ = ("_i", "_items")

    def __init__(self, items: list[tuple[Any, Any]]) -> None:
        self._items = items
        self._i = 0

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return self

    def __next__(self) -> tuple[Any, Any]:
        i = self._i
        if i >= len(self._items):
            raise StopIteration
        self._i = i + 1
        return self._items[i]

    def peek_next_key(self) -> Any:
        return self._items[self._i][0] if self._i < len(self._items) else None

    def has_next(self) -> bool:
        return self._i < len(self._items)

    def close(self) -> None:
        self._i = len(self._items)

    def __enter__(self) -> ListIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _drain(it: Any) -> list[tuple[bytes, bytes]]:
    with it:
        return list(it)


class _MeteredWindowed:
    """What window and session stores share: lifecycle, serdes, flush listener plumbing."""

    def __init__(self, wrapped: Any, key_serde: Serde, value_serde: Serde, retention_ms: int) -> None:
        self.wrapped = wrapped
        self.name: str = wrapped.name
        self.persistent: bool = wrapped.persistent
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.retention_ms = retention_ms
        self._kser = key_serde.serialize
        self._kde = key_serde.deserialize
        self._vser = value_serde.serialize
        self._vde = value_serde.deserialize
        self._topic = ""
        self._listener: FlushListener | None = None
        self._send_old = True
        self._context: StoreContext | None = None
        self._ts = _no_timestamp
        #: the innermost (segmented) store, found once at init: its time bounds are read per record
        self._inner: Any = None

    def init(self, context: StoreContext) -> None:
        if self.wrapped.is_open:
            raise StateStoreError("store is already initialised", store=self.name, task_id=context.task_id)
        self._context = context
        self._topic = context.changelog_topic or changelog_topic_name(context.application_id, self.name)
        self._ts = context.record_timestamp
        self.wrapped.init(context)
        self._inner = self.inner_most()

    @property
    def is_open(self) -> bool:
        return self.wrapped.is_open

    @property
    def context(self) -> StoreContext | None:
        return self._context

    @property
    def metrics(self) -> Any:
        return self._context.metrics if self._context else None

    def flush(self) -> None:
        self.wrapped.flush()

    def close(self) -> None:
        self.wrapped.close()

    def inner_most(self) -> SegmentedBytesStore:
        layer = self.wrapped
        while hasattr(layer, "wrapped"):
            layer = layer.wrapped
        return layer

    @property
    def observed_stream_time(self) -> int:
        return self.inner_most().observed_stream_time

    def restore_batch(self, records: Any) -> None:
        self.wrapped.restore_batch(records)

    def approximate_num_entries(self) -> int:
        return self.wrapped.approximate_num_entries()

    def set_flush_listener(self, listener: FlushListener | None, send_old_values: bool = True) -> bool:
        """Same contract as the key-value store: True when a cache forwards on flush."""
        layer = self.wrapped
        while layer is not None:
            setter = getattr(layer, "set_flush_listener", None)
            if setter is not None:
                self._listener = listener
                self._send_old = send_old_values
                setter(None if listener is None else self._on_flush, send_old_values)
                return True
            layer = getattr(layer, "wrapped", None)
        return False

    def _on_flush(self, key: bytes, new: bytes | None, old: bytes | None, timestamp: int) -> None:
        topic, vde = self._topic, self._vde
        self._listener(  # type: ignore[misc]
            self._windowed(key),
            None if new is None else vde(topic, new),
            None if old is None or not self._send_old else vde(topic, old),
            timestamp,
        )

    def _windowed(self, store_key: bytes) -> Windowed:  # pragma: no cover - abstract
        raise NotImplementedError

    def _key_bytes(self, key: Any) -> bytes:
        if key is None:
            raise StateStoreError("state store keys must not be None", store=self.name)
        return self._kser(self._topic, key) or b""

    def _min_live(self) -> int:
        inner = self._inner or self.inner_most()
        return inner.min_live_time() if inner.observed_stream_time >= 0 else -(1 << 63)

    def __repr__(self) -> str:
        layers = []
        layer: Any = self
        while layer is not None:
            layers.append(type(layer).__name__)
            layer = getattr(layer, "wrapped", None)
        return f"<{' -> '.join(layers)} {self.name!r}>"


class MeteredWindowStore(_MeteredWindowed):
    """Kafka's WindowStore: values by (key, window start). ``retain_duplicates`` (stream-stream join
    stores) keeps every put under its own sequence number instead of overwriting."""

    def __init__(
        self,
        wrapped: Any,
        key_serde: Serde,
        value_serde: Serde,
        *,
        window_size_ms: int,
        retention_ms: int,
        retain_duplicates: bool = False,
    ) -> None:
        super().__init__(wrapped, key_serde, value_serde, retention_ms)
        self.window_size_ms = window_size_ms
        self.retain_duplicates = retain_duplicates
        self._seqnum = 0

    def _windowed(self, store_key: bytes) -> Windowed:
        key, start, _ = window_store_key_parts(store_key)
        return Windowed(self._kde(self._topic, key), self._window(start))

    def _window(self, start: int) -> TimeWindow:
        end = start + self.window_size_ms
        return TimeWindow(start, end if end > start else start + 1)

    # -- writes ------------------------------------------------------------------------------------
    def put(self, key: Any, value: Any, window_start: int, timestamp: int | None = None) -> None:
        """``value=None`` deletes the window (ignored when retaining duplicates, as in Kafka)."""
        if value is None and self.retain_duplicates:
            return
        if timestamp is None:
            timestamp = self._ts()
        seq = 0
        if self.retain_duplicates:
            self._seqnum = seq = (self._seqnum + 1) & 0x7FFFFFFF
        store_key = window_store_key(self._key_bytes(key), window_start, seq)
        self.wrapped.put(store_key, None if value is None else self._vser(self._topic, value), timestamp)

    def fetch_for_update(self, key: Any, window_start: int) -> tuple[bytes, Any]:
        """``(store key, fetch(key, window_start))``: the read of a read-modify-write of one window (a
        windowed aggregation's per-record step), serializing the key once for the read and for the
        write that follows through :meth:`put_store_key`. Not for stores that retain duplicates."""
        if key is None:
            raise StateStoreError("state store keys must not be None", store=self.name)
        topic = self._topic
        store_key = window_store_key(self._kser(topic, key) or b"", window_start, 0)
        if window_start < self._min_live():
            return store_key, None
        raw = self.wrapped.get(store_key)
        return store_key, None if raw is None else self._vde(topic, raw)

    def put_store_key(self, store_key: bytes, value: Any, timestamp: int) -> None:
        """:meth:`put` of a non-None value under a key from :meth:`fetch_for_update`."""
        self.wrapped.put(store_key, self._vser(self._topic, value), timestamp)

    # -- reads -------------------------------------------------------------------------------------
    def fetch(self, key: Any, *times: int) -> Any:
        """Kafka's overloads by arity:

        * ``fetch(key, window_start)`` -> the value or None;
        * ``fetch(key, time_from, time_to)`` -> iterator of ``(window_start, value)``, start in range;
        * ``fetch(key_from, key_to, time_from, time_to)`` -> iterator of ``(Windowed, value)``.
        """
        if len(times) == 1:
            if key is None:
                return None
            start = times[0]
            if start < self._min_live():
                return None
            raw = self.wrapped.get(window_store_key(self._key_bytes(key), start, 0))
            return None if raw is None else self._vde(self._topic, raw)
        if len(times) == 2:
            return ListIterator(self._fetch_key(key, times[0], times[1]))
        if len(times) == 3:
            return ListIterator(self._fetch_range(key, times[0], times[1], times[2]))
        raise TypeError(
            "fetch(key, time) | fetch(key, time_from, time_to) | fetch(k_from, k_to, t_from, t_to)"
        )

    def backward_fetch(self, key: Any, *times: int) -> ListIterator:
        if len(times) == 2:
            return ListIterator(self._fetch_key(key, times[0], times[1])[::-1])
        if len(times) == 3:
            return ListIterator(self._fetch_range(key, times[0], times[1], times[2])[::-1])
        raise TypeError(
            "backward_fetch(key, time_from, time_to) | backward_fetch(k_from, k_to, t_from, t_to)"
        )

    def _fetch_key(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, Any]]:
        if key is None:
            raise StateStoreError("a window store fetch needs a key", store=self.name)
        kb = self._key_bytes(key)
        time_from = max(time_from, self._min_live(), 0)
        if time_from > time_to:
            return []
        lo, hi = window_store_key(kb, time_from, _MIN_SEQ), window_store_key(kb, time_to, _MAX_SEQ)
        scan = getattr(self.wrapped, "range_items", None)
        # the time bounds let a segmented store skip segments that cannot hold this key's windows
        raw = scan(lo, hi, time_from, time_to) if scan is not None else _drain(self.wrapped.range(lo, hi))
        topic, vde, n = self._topic, self._vde, len(kb)
        out = []
        for sk, v in raw:
            if len(sk) == n + 12 and sk.startswith(kb):
                out.append((window_store_key_timestamp(sk), vde(topic, v)))
        return out

    def _fetch_range(
        self, key_from: Any, key_to: Any, time_from: int, time_to: int
    ) -> list[tuple[Windowed, Any]]:
        kf = None if key_from is None else self._key_bytes(key_from)
        kt = None if key_to is None else self._key_bytes(key_to)
        if kf is not None and kt is not None and kf > kt:
            return []
        time_from = max(time_from, self._min_live(), 0)
        lower = None if kf is None else window_store_key(kf, time_from, _MIN_SEQ)
        upper = None if kt is None else window_store_key(kt, time_to, _MAX_SEQ)
        return self._decode(_drain(self.wrapped.range(lower, upper)), kf, kt, time_from, time_to)

    def fetch_all(self, time_from: int, time_to: int) -> ListIterator:
        """Every window whose start lies in ``[time_from, time_to]``: ``(Windowed, value)``."""
        time_from = max(time_from, self._min_live())
        return ListIterator(self._decode(_drain(self.wrapped.all()), None, None, time_from, time_to))

    def backward_fetch_all(self, time_from: int, time_to: int) -> ListIterator:
        items = list(self.fetch_all(time_from, time_to))
        return ListIterator(items[::-1])

    def all(self) -> ListIterator:
        return ListIterator(self._decode(_drain(self.wrapped.all()), None, None, self._min_live(), MAX_TIME))

    def backward_all(self) -> ListIterator:
        return ListIterator(list(self.all())[::-1])

    def _decode(
        self, raw: list, kf: bytes | None, kt: bytes | None, time_from: int, time_to: int
    ) -> list[tuple[Windowed, Any]]:
        topic, kde, vde = self._topic, self._kde, self._vde
        out = []
        for sk, v in raw:
            key, start, _ = window_store_key_parts(sk)
            if start < time_from or start > time_to:
                continue
            if (kf is not None and key < kf) or (kt is not None and key > kt):
                continue
            out.append((Windowed(kde(topic, key), self._window(start)), vde(topic, v)))
        return out


class MeteredSessionStore(_MeteredWindowed):
    """Kafka's SessionStore: aggregates by (key, session start, session end)."""

    def _windowed(self, store_key: bytes) -> Windowed:
        key, start, end = session_store_key_parts(store_key)
        return Windowed(self._kde(self._topic, key), SessionWindow(start, end))

    def _store_key(self, session_key: Windowed) -> bytes:
        if not isinstance(session_key, Windowed):
            raise StateStoreError(
                f"session store keys are Windowed(key, SessionWindow), got {session_key!r}", store=self.name
            )
        w = session_key.window
        return session_store_key(self._key_bytes(session_key.key), w.start, w.end)

    def put(self, session_key: Windowed, aggregate: Any, timestamp: int | None = None) -> None:
        """``aggregate=None`` removes the session."""
        if timestamp is None:
            timestamp = self._ts()
        raw = None if aggregate is None else self._vser(self._topic, aggregate)
        self.wrapped.put(self._store_key(session_key), raw, timestamp)

    def remove(self, session_key: Windowed, timestamp: int | None = None) -> None:
        self.put(session_key, None, timestamp)

    def fetch_session(self, key: Any, session_start: int, session_end: int) -> Any:
        if key is None:
            return None
        if session_end < self._min_live():
            return None
        raw = self.wrapped.get(session_store_key(self._key_bytes(key), session_start, session_end))
        return None if raw is None else self._vde(self._topic, raw)

    def find_sessions(self, key: Any, *args: int) -> ListIterator:
        """``find_sessions(key, earliest_session_end, latest_session_start)`` or
        ``find_sessions(key_from, key_to, earliest_session_end, latest_session_start)``: sessions that
        end at or after the first time and start at or before the second, by key, then end, then start."""
        if len(args) == 2:
            kb = self._key_bytes(key)
            return ListIterator(self._find(kb, kb, args[0], args[1]))
        if len(args) == 3:
            kf = None if key is None else self._key_bytes(key)
            kt = None if args[0] is None else self._key_bytes(args[0])
            return ListIterator(self._find(kf, kt, args[1], args[2]))
        raise TypeError("find_sessions(key, earliest_end, latest_start) | find_sessions(k_from, k_to, ...)")

    def backward_find_sessions(self, key: Any, *args: int) -> ListIterator:
        return ListIterator(list(self.find_sessions(key, *args))[::-1])

    def fetch(self, key: Any, key_to: Any = ..., /) -> ListIterator:
        """All sessions of ``key`` (or of keys in ``[key, key_to]``)."""
        if key_to is ...:
            return self.find_sessions(key, 0, MAX_TIME)
        return self.find_sessions(key, key_to, 0, MAX_TIME)

    def backward_fetch(self, key: Any, key_to: Any = ..., /) -> ListIterator:
        return ListIterator(list(self.fetch(key, key_to))[::-1])

    def all(self) -> ListIterator:
        return ListIterator(self._find(None, None, 0, MAX_TIME))

    def _find(self, kf: bytes | None, kt: bytes | None, earliest_end: int, latest_start: int) -> list:
        if kf is not None and kt is not None and kf > kt:
            return []
        # negative times sort after positive ones as big-endian bytes: clamp, as Kafka does
        earliest_end = max(earliest_end, self._min_live(), 0)
        latest_start = max(latest_start, -1)
        if latest_start < 0:
            return []
        lower = None if kf is None else session_store_key(kf, 0, earliest_end)
        upper = None if kt is None else session_store_key(kt, MAX_TIME, MAX_TIME)
        raw = _drain(self.wrapped.range(lower, upper))
        topic, kde, vde = self._topic, self._kde, self._vde
        out = []
        for sk, v in raw:
            key, start, end = session_store_key_parts(sk)
            if end < earliest_end or start > latest_start:
                continue
            if (kf is not None and key < kf) or (kt is not None and key > kt):
                continue
            out.append((Windowed(kde(topic, key), SessionWindow(start, end)), vde(topic, v)))
        return out


def _no_timestamp() -> int:
    raise StateStoreError("store used before init(): no record timestamp accessor")

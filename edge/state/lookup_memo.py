"""Table rows read again and again, deserialized once: what a stream-table join's look-ups cost.

A stream-table join reads one table row per stream record, and a row changes far less often than it
is read; yet each read parsed the stored JSON again, a sixth of the enrichment benchmark's stream
thread. Kafka Streams does the same work per read, in compiled code. This memo remembers what stored
bytes deserialize to, from a row's second read on, keyed by the bytes themselves, so it can never
answer with a stale row: a changed row is different bytes. (The record cache hands back the same
bytes object on each hit, whose hash Python keeps, so a hit is one dict look-up.)

Every read still gets an object of its own, as a fresh parse would give it, so a joiner that changes
the row it was handed changes nothing for the next read: immutable values are shared, a flat object
or array (every member immutable) is copied, and anything nested is parsed every time, never kept.

Only Streamhouse's JSON serde (``Serdes.json()``, alone or inside a ``ValueAndTimestamp``) is
memoized: its result is a function of the bytes alone. A user's deserializer may not be (a schema
looked up by time, a counter), so it is called on every read as before. One memo serves every store
and task reading through the same serde instance (what the bytes mean does not depend on the key or
the partition) while any of them is open; it is emptied whenever the serialized bytes it holds pass
its budget. Under several stream threads its counters and byte count are approximate (a race can only
empty it early or late); what a read returns is not.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import orjson

from edge.serde.builtin import JsonSerde
from edge.serde.timestamped import ValueAndTimestamp, ValueAndTimestampSerde, _unpack_ts_from

#: serialized bytes a memo holds (rows kept or only marked) before it starts over; the parsed objects
#: take a few times that
DEFAULT_MEMO_MAX_BYTES = 4 * 1024 * 1024
#: longer rows are parsed on every read: holding and copying them would gain little
MAX_MEMOIZED_VALUE_BYTES = 1024
#: the memo's marks for a row read once so far, and for one it never keeps
_SEEN_ONCE = object()
_NOT_KEPT = object()

_IMMUTABLE = frozenset({str, int, float, bool, type(None)})
_tuple_new = tuple.__new__
_loads = orjson.loads


def _same(value: Any) -> Any:
    return value


def _copier_of(value: Any) -> Callable[[Any], Any] | None:
    """How to hand out ``value`` again as a fresh parse would: shared, shallow-copied, or (None) not at
    all, because it holds containers a reader could change."""
    kind = value.__class__
    if kind in _IMMUTABLE:
        return _same
    if kind is dict:
        return dict.copy if all(v.__class__ in _IMMUTABLE for v in value.values()) else None
    if kind is list:
        return list.copy if all(v.__class__ in _IMMUTABLE for v in value) else None
    return None


class LookupMemo:
    """``deserialize(topic, data)`` as the serde's, remembering what each ``data`` parsed to."""

    __slots__ = (
        "__weakref__",
        "_bytes",
        "_deserialize",
        "_memo",
        "_timestamped",
        "hits",
        "max_bytes",
        "misses",
        "serde",
    )

    def __init__(self, serde: Any, max_bytes: int = DEFAULT_MEMO_MAX_BYTES) -> None:
        #: held, so that its id names no other serde while the memo lives
        self.serde = serde
        self._deserialize = serde.deserialize
        self._timestamped = isinstance(serde, ValueAndTimestampSerde)
        #: data -> (parsed value, its timestamp or 0, how to hand it out), or a mark: read once so far,
        #: or never to be kept (it holds containers)
        self._memo: dict[bytes, Any] = {}
        self._bytes = 0
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        memo = self._memo
        entry = memo.get(data)
        if entry.__class__ is tuple:
            self.hits += 1
            value, ts, copy = entry  # type: ignore[misc]
            if self._timestamped:
                return _tuple_new(ValueAndTimestamp, (copy(value), ts))
            return copy(value)
        self.misses += 1
        # the serde's own parse written out (two calls less); anything unusual takes the serde's path,
        # so a bad row raises the serde's error with its context, as without the memo
        try:
            if self._timestamped:
                parsed = _tuple_new(ValueAndTimestamp, (_loads(data[8:]), _unpack_ts_from(data)[0]))
            else:
                parsed = _loads(data)
        except Exception:
            parsed = self._deserialize(topic, data)
        size = len(data)
        if entry is _NOT_KEPT or size > MAX_MEMOIZED_VALUE_BYTES:
            return parsed
        if entry is None:
            # a row is kept from its second read on: where rows change faster than they are read again
            # (every read a miss), a read costs one dict write more, not a copy and a parsed entry
            if self._bytes + size > self.max_bytes:
                memo.clear()
                self._bytes = 0
            memo[data] = _SEEN_ONCE
            self._bytes += size
            return parsed
        value, ts = (parsed[0], parsed[1]) if self._timestamped else (parsed, 0)
        copy = _copier_of(value)
        if copy is None:
            memo[data] = _NOT_KEPT
            return parsed
        # the memo keeps a copy of its own: the caller may change the object it was handed
        memo[data] = (copy(value), ts, copy)
        return parsed

    def __len__(self) -> int:
        """Rows kept parsed."""
        return sum(1 for entry in self._memo.values() if entry.__class__ is tuple)


#: id(serde) -> its memo, for as long as some store's reader holds the memo
_memos: weakref.WeakValueDictionary[int, LookupMemo] = weakref.WeakValueDictionary()
_memos_lock = threading.Lock()


def lookup_memo_for(serde: Any) -> LookupMemo | None:
    """The memo shared by every reader through ``serde``, or None when its results may not be a
    function of the bytes alone (any serde but the JSON one, plain or timestamped)."""
    inner = serde.inner if isinstance(serde, ValueAndTimestampSerde) else serde
    if type(inner) is not JsonSerde:
        return None
    with _memos_lock:
        memo = _memos.get(id(serde))
        if memo is None or memo.serde is not serde:
            memo = _memos[id(serde)] = LookupMemo(serde)
        return memo

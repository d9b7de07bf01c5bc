"""In-memory bytes key-value store (non-persistent; rebuilt from the changelog on restart).

A plain dict for point operations plus a lazily rebuilt sorted key list for range/prefix scans: writes
of new keys only invalidate the list (O(1)), so stores that are never scanned pay nothing for order.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable

from edge.errors import StateStoreError
from edge.state.api import StoreContext
from edge.state.iterators import BaseKeyValueIterator, EmptyIterator, SnapshotIterator, prefix_successor

_MISSING = object()


class InMemoryKeyValueStore:
    persistent = False

    def __init__(self, name: str) -> None:
        self.name = name
        self._data: dict[bytes, bytes] = {}
        self._sorted: list[bytes] | None = None
        self._iters: set = set()
        self._open = False
        self._context: StoreContext | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def init(self, context: StoreContext) -> None:
        if self._open:
            raise StateStoreError("store is already initialised", store=self.name, task_id=context.task_id)
        self._context = context
        self._open = True
        self.get = self._data.get  # type: ignore[method-assign]

    @property
    def is_open(self) -> bool:
        return self._open

    def flush(self) -> None:
        pass

    def close(self) -> None:
        for it in list(self._iters):
            it.close()
        self._open = False
        self._data.clear()  # non-persistent: state lives on in the changelog only
        self._sorted = None
        self.get = self._closed_get  # type: ignore[method-assign]

    def _closed_get(self, key: bytes) -> bytes | None:
        raise self._closed_error()

    def _closed_error(self) -> StateStoreError:
        ctx = self._context
        return StateStoreError(
            "state store is not open (not initialised yet or already closed)",
            store=self.name,
            task_id=ctx.task_id if ctx else None,
        )

    # -- point operations --------------------------------------------------------------------------
    def get(self, key: bytes) -> bytes | None:  # replaced by dict.get on init
        raise self._closed_error()

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        get = self.get
        return [get(k) for k in keys]

    def put(self, key: bytes, value: bytes | None, timestamp: int = 0) -> None:
        data = self._data
        if value is None:
            if data.pop(key, _MISSING) is not _MISSING:
                self._sorted = None
            return
        if key not in data:
            if not self._open:
                raise self._closed_error()
            self._sorted = None
        data[key] = value

    def put_if_absent(self, key: bytes, value: bytes, timestamp: int = 0) -> bytes | None:
        old = self.get(key)
        if old is None:
            self.put(key, value, timestamp)
        return old

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None, int]]) -> None:
        put = self.put
        for k, v, ts in entries:
            put(k, v, ts)

    def delete(self, key: bytes, timestamp: int = 0) -> bytes | None:
        old = self.get(key)
        if old is not None:
            del self._data[key]
            self._sorted = None
        return old

    def delete_range(self, start: bytes, end: bytes) -> None:
        """Delete every key in ``[start, end)`` (a window store dropping a whole time segment)."""
        if not self._open:
            raise self._closed_error()
        doomed = [k for k in self._data if start <= k < end]
        for k in doomed:
            del self._data[k]
        if doomed:
            self._sorted = None

    def restore_batch(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        if not self._open:
            raise self._closed_error()
        put = self.put
        for k, v in records:
            put(k, v)

    # -- scans -------------------------------------------------------------------------------------
    def _keys(self) -> list[bytes]:
        keys = self._sorted
        if keys is None:
            if not self._open:
                raise self._closed_error()
            keys = self._sorted = sorted(self._data)
        return keys

    def range(self, from_key: bytes | None, to_key: bytes | None) -> BaseKeyValueIterator:
        keys = self._keys()
        if from_key is not None and to_key is not None and from_key > to_key:
            return EmptyIterator(self.name)
        lo = 0 if from_key is None else bisect_left(keys, from_key)
        hi = len(keys) if to_key is None else bisect_right(keys, to_key)
        return SnapshotIterator(keys[lo:hi], self._data.get, self.name, self._iters)

    def prefix_scan(self, prefix: bytes) -> BaseKeyValueIterator:
        keys = self._keys()
        lo = bisect_left(keys, prefix)
        end = prefix_successor(prefix)
        hi = len(keys) if end is None else bisect_left(keys, end, lo)
        return SnapshotIterator(keys[lo:hi], self._data.get, self.name, self._iters)

    def all(self) -> BaseKeyValueIterator:
        return self.range(None, None)

    def approximate_num_entries(self) -> int:
        if not self._open:
            raise self._closed_error()
        return len(self._data)

"""Write-back record cache (Kafka Streams' CachingKeyValueStore + NamedCache), bounded in bytes.

* Writes land in an LRU ``OrderedDict`` and a dirty-key dict (insertion order = write order; a re-write
  moves the key to the end). Repeated updates of a key between flushes collapse into one entry, so the
  changelog/inner store and the flush listener see only the last value.
* ``flush()`` (on commit) writes all dirty entries in dirty order through the wrapped store in one
  ``put_all`` (one RocksDB WriteBatch, one changelog record each), then calls the flush listener.
* When the budget is exceeded the least-recently-used entry is evicted; if it is dirty, all dirty
  entries are flushed first (as NamedCache does) so changelog order stays consistent.
* Entry size = key + value + ``ENTRY_OVERHEAD`` bytes. ``cache_max_bytes == 0`` switches to a
  write-through mode (no caching) that still calls the listener synchronously on every write.
* A dirty entry written with headers (a KTable update) keeps them; the flush listener receives them as a
  fifth argument, so a cache-flushed update carries the headers of the record that last wrote the key
  (Kafka's LRU cache entries keep the record context).
* Reads of keys not in the cache go to the wrapped store; hits are cached as clean entries. Range/prefix
  scans merge a sorted snapshot of cache entries with the wrapped store's iterator.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable

from edge.errors import StateStoreError
from edge.state.api import StoreContext
from edge.state.iterators import BaseKeyValueIterator, EmptyIterator, MergedCacheIterator, prefix_successor

#: approximate per-entry bookkeeping bytes counted against the budget (dict slots, list, tuple)
ENTRY_OVERHEAD = 64

_MISSING = object()

BytesFlushListener = Callable[[bytes, "bytes | None", "bytes | None", int], None]


class CachingKeyValueStore:
    def __init__(self, wrapped) -> None:
        self.wrapped = wrapped
        self.name = wrapped.name
        self.persistent = wrapped.persistent
        self._cache: OrderedDict[bytes, bytes | None] = OrderedDict()
        self._dirty: dict[bytes, int] = {}
        self._headers: dict[bytes, object] = {}  # headers of dirty entries written with headers
        self._size = 0
        self._max = 0
        self._sorted: list[bytes] | None = None
        self._listener: BytesFlushListener | None = None
        self._send_old = True
        self._iters: set = set()
        self._context: StoreContext | None = None
        self._metrics = None
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self._reported = (0, 0, 0)

    # -- lifecycle ---------------------------------------------------------------------------------
    def init(self, context: StoreContext) -> None:
        self.wrapped.init(context)
        self._context = context
        self._metrics = context.metrics
        self._max = max(0, int(context.cache_max_bytes))
        self._bind()

    _WRITES = ("put", "put_if_absent", "put_all", "delete")
    _READS = ("get", "range", "prefix_scan", "all")

    def _bind(self, closed: bool = False) -> None:
        """(Re)bind hot-path callables: inner ``get`` is swapped by the inner store on open/close."""
        inner = self.wrapped
        self._inner_get = inner.get
        d = self.__dict__
        for name in self._WRITES + self._READS:
            d.pop(name, None)
        if closed:
            for name in self._WRITES:
                d[name] = self._closed_write
            return
        if self._max == 0:
            self.put = self._wt_put  # type: ignore[method-assign]
            self.put_if_absent = self._wt_put_if_absent  # type: ignore[method-assign]
            self.put_all = self._wt_put_all  # type: ignore[method-assign]
            self.delete = self._wt_delete  # type: ignore[method-assign]
            self.get = inner.get  # type: ignore[method-assign]
            self.range = inner.range  # type: ignore[method-assign]
            self.prefix_scan = inner.prefix_scan  # type: ignore[method-assign]
            self.all = inner.all  # type: ignore[method-assign]

    @property
    def is_open(self) -> bool:
        return self.wrapped.is_open

    @property
    def caching_active(self) -> bool:
        return self._max > 0

    def set_flush_listener(self, listener: BytesFlushListener | None, send_old_values: bool = True) -> bool:
        self._listener = listener
        self._send_old = send_old_values
        return True

    def flush(self) -> None:
        self._flush_dirty()
        self.wrapped.flush()
        self._report_metrics()

    def discard_unflushed(self) -> None:
        """Drop dirty entries without writing or forwarding them (a dirty close, as Kafka Streams'
        ``closeDirty``: the aborted work is redone from the committed offsets)."""
        cache = self._cache
        for key in self._dirty:
            v = cache.pop(key, _MISSING)
            if v is not _MISSING:
                self._size -= len(key) + ENTRY_OVERHEAD + (0 if v is None else len(v))  # type: ignore[arg-type]
        self._dirty = {}
        self._headers = {}
        self._sorted = None

    def close(self) -> None:
        """Flush dirty entries (like Kafka Streams), close open iterators, drop the cache, close inner."""
        try:
            if self.wrapped.is_open:
                self._flush_dirty()
        finally:
            for it in list(self._iters):
                it.close()
            self._cache.clear()
            self._dirty.clear()
            self._headers.clear()
            self._size = 0
            self._sorted = None
            self._report_metrics()
            self.wrapped.close()
            self._bind(closed=True)

    def _closed_write(self, *_: object) -> None:
        self._check_open()

    def _report_metrics(self) -> None:
        m = self._metrics
        if m is not None:
            h, mi, ev = self._reported
            m.cache_hits += self.hits - h
            m.cache_misses += self.misses - mi
            m.evictions += self.evictions - ev
            self._reported = (self.hits, self.misses, self.evictions)

    def cache_size_bytes(self) -> int:
        return self._size

    def cache_entries(self) -> int:
        return len(self._cache)

    # -- cached operations -------------------------------------------------------------------------
    def get(self, key: bytes) -> bytes | None:
        cache = self._cache
        v = cache.get(key, _MISSING)
        if v is not _MISSING:
            cache.move_to_end(key)
            self.hits += 1
            return v  # type: ignore[return-value]
        self.misses += 1
        v = self._inner_get(key)
        if v is not None:
            cache[key] = v
            self._sorted = None
            self._size += len(key) + len(v) + ENTRY_OVERHEAD
            if self._size > self._max:
                self._evict()
        return v

    def put(self, key: bytes, value: bytes | None, timestamp: int, headers: object = None) -> None:
        if headers is not None:
            self._headers[key] = headers
        elif self._headers:
            self._headers.pop(key, None)
        cache = self._cache
        old = cache.get(key, _MISSING)
        if old is _MISSING:
            self._size += len(key) + ENTRY_OVERHEAD + (0 if value is None else len(value))
            self._sorted = None
        else:
            cache.move_to_end(key)
            self._size += (0 if value is None else len(value)) - (0 if old is None else len(old))  # type: ignore[arg-type]
        cache[key] = value
        dirty = self._dirty
        if key in dirty:
            del dirty[key]
        dirty[key] = timestamp
        if self._size > self._max:
            self._evict()

    def put_if_absent(self, key: bytes, value: bytes, timestamp: int) -> bytes | None:
        old = self.get(key)
        if old is None:
            self.put(key, value, timestamp)
        return old

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None, int]]) -> None:
        put = self.put
        for k, v, ts in entries:
            put(k, v, ts)

    def delete(self, key: bytes, timestamp: int) -> bytes | None:
        old = self.get(key)
        self.put(key, None, timestamp)
        return old

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        get = self.get
        return [get(k) for k in keys]

    # -- eviction / flush --------------------------------------------------------------------------
    def _evict(self) -> None:
        cache = self._cache
        while self._size > self._max and cache:
            key = next(iter(cache))
            if key in self._dirty:
                self._flush_dirty()
                if key in self._dirty:  # the listener wrote this key again: keep it, evict another
                    cache.move_to_end(key)
                    continue
            value = cache.pop(key, _MISSING)
            if value is _MISSING:  # re-entrant listener changed the cache
                continue
            self._size -= len(key) + ENTRY_OVERHEAD + (0 if value is None else len(value))  # type: ignore[arg-type]
            self._sorted = None
            self.evictions += 1

    def _flush_dirty(self) -> None:
        dirty = self._dirty
        if not dirty:
            return
        self._dirty = {}  # listener may write to this store again: those go to a fresh dirty set
        headers = self._headers
        self._headers = {}
        cache = self._cache
        entries = [(k, cache[k], ts) for k, ts in dirty.items()]
        listener = self._listener
        if listener is None:
            self.wrapped.put_all(entries)
            return
        send_old = self._send_old
        if send_old:
            olds = self.wrapped.get_many([e[0] for e in entries])
            # Key absent below and deleted in cache: nothing to write nor forward (as Kafka Streams).
            pairs = [
                (e, old) for e, old in zip(entries, olds, strict=True) if e[1] is not None or old is not None
            ]
        else:
            # Without old values Kafka reads the store only for a delete (to skip one of an absent key):
            # flushing a table's initial load costs no read per key
            deletes = [e[0] for e in entries if e[1] is None]
            present: set[bytes] = set()
            if deletes:
                olds = self.wrapped.get_many(deletes)
                present = {k for k, old in zip(deletes, olds, strict=True) if old is not None}
            pairs = [(e, None) for e in entries if e[1] is not None or e[0] in present]
        self.wrapped.put_all([e for e, _ in pairs])
        for (k, v, ts), old in pairs:
            h = headers.get(k) if headers else None
            if h is None:
                listener(k, v, old if send_old else None, ts)
            else:
                listener(k, v, old if send_old else None, ts, h)

    # -- write-through mode (cache_max_bytes == 0) -------------------------------------------------
    def _wt_put(self, key: bytes, value: bytes | None, timestamp: int, headers: object = None) -> None:
        listener = self._listener
        if listener is None:
            self.wrapped.put(key, value, timestamp)
            return
        old = self.wrapped.get(key)
        if value is None and old is None:
            return
        self.wrapped.put(key, value, timestamp)
        if headers is None:
            listener(key, value, old if self._send_old else None, timestamp)
        else:
            listener(key, value, old if self._send_old else None, timestamp, headers)

    def _wt_put_if_absent(self, key: bytes, value: bytes, timestamp: int) -> bytes | None:
        old = self.wrapped.get(key)
        if old is None:
            self._wt_put(key, value, timestamp)
        return old

    def _wt_put_all(self, entries: Iterable[tuple[bytes, bytes | None, int]]) -> None:
        if self._listener is None:
            self.wrapped.put_all(entries)
            return
        for k, v, ts in entries:
            self._wt_put(k, v, ts)

    def _wt_delete(self, key: bytes, timestamp: int) -> bytes | None:
        old = self.wrapped.get(key)
        if old is not None:
            self._wt_put(key, None, timestamp)
        return old

    # -- scans -------------------------------------------------------------------------------------
    def _sorted_keys(self) -> list[bytes]:
        keys = self._sorted
        if keys is None:
            keys = self._sorted = sorted(self._cache)
        return keys

    def _check_open(self) -> None:
        if not self.wrapped.is_open:
            ctx = self._context
            raise StateStoreError(
                "state store is not open (not initialised yet or already closed)",
                store=self.name,
                task_id=ctx.task_id if ctx else None,
            )

    def range(self, from_key: bytes | None, to_key: bytes | None) -> BaseKeyValueIterator:
        self._check_open()
        if from_key is not None and to_key is not None and from_key > to_key:
            return EmptyIterator(self.name)
        keys = self._sorted_keys()
        lo = 0 if from_key is None else bisect_left(keys, from_key)
        hi = len(keys) if to_key is None else bisect_right(keys, to_key)
        cache = self._cache
        items = [(k, cache[k]) for k in keys[lo:hi]]
        return MergedCacheIterator(items, self.wrapped.range(from_key, to_key), self.name, self._iters)

    def prefix_scan(self, prefix: bytes) -> BaseKeyValueIterator:
        self._check_open()
        keys = self._sorted_keys()
        lo = bisect_left(keys, prefix)
        end = prefix_successor(prefix)
        hi = len(keys) if end is None else bisect_left(keys, end, lo)
        cache = self._cache
        items = [(k, cache[k]) for k in keys[lo:hi]]
        return MergedCacheIterator(items, self.wrapped.prefix_scan(prefix), self.name, self._iters)

    def all(self) -> BaseKeyValueIterator:
        return self.range(None, None)

    def approximate_num_entries(self) -> int:
        """Inner estimate plus unflushed new values (approximate: updates of flushed keys count twice)."""
        cache = self._cache
        pending = sum(1 for k in self._dirty if cache[k] is not None)
        return self.wrapped.approximate_num_entries() + pending

    def restore_batch(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Bypass the cache; drop cached copies of restored keys so reads see the restored values."""
        if not self._cache:
            self.wrapped.restore_batch(records)
            return
        records = list(records)
        cache = self._cache
        for k, _ in records:
            if k in self._dirty:
                continue  # a pending local write is newer than anything restored
            v = cache.pop(k, _MISSING)
            if v is not _MISSING:
                self._size -= len(k) + ENTRY_OVERHEAD + (0 if v is None else len(v))  # type: ignore[arg-type]
                self._sorted = None
        self.wrapped.restore_batch(records)

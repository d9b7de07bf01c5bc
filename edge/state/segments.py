"""Time-segmented bytes store: the innermost layer of window and session stores.

Kafka Streams keeps windowed state in segments (one RocksDB per time interval) so that retention is
enforced by dropping whole segments instead of deleting records one by one. This store does the same
and otherwise behaves as a bytes key-value store, so the record cache, the change-logging layer,
restore and standbys work on it unchanged.

* Every key carries its time (window start, or session end) -- ``time_of(key)`` reads it -- and lives
  in segment ``time // segment_interval``. All segments of a store share one RocksDB (or in-memory
  store), ``rocksdb/<store>``, each under an 8-byte big-endian segment-id prefix, and a segment is
  dropped with one range tombstone. Kafka gives each segment its own RocksDB; opening and destroying
  one costs ~50 ms here, and a 1-minute window store rolls a segment every minute of event time, which
  took half of a windowed count's time in the benchmark.
* Observed stream time is the largest key time written or restored. A segment whose whole interval
  is older than ``observed - retention`` is closed and destroyed; writes into it are skipped (with a
  warning, as Kafka logs "Skipping record for expired segment"), and reads never return records older
  than ``observed - retention + 1`` even while their segment still exists.
* Scans merge the live segments' iterators by key bytes, so the caching layer's merge stays correct.
* Deferred writes (``defer_writes``, set by the runtime on active tasks): like
  :class:`~edge.state.rocksdb.RocksDBKeyValueStore`, nothing reaches a segment's RocksDB before
  :meth:`persist` (after the commit), and an expired segment is only hidden until then -- it is
  destroyed by :meth:`persist`, so a crash before the commit finds it intact, as the committed state had
  it.
"""

from __future__ import annotations

import heapq
import logging
import struct
from collections.abc import Callable, Iterable
from pathlib import Path

from edge.errors import StateStoreError
from edge.state.api import StoreContext
from edge.state.iterators import BaseKeyValueIterator, prefix_successor
from edge.state.memory import InMemoryKeyValueStore
from edge.state.rocksdb import RocksDBKeyValueStore, store_dir

log = logging.getLogger(__name__)

#: Kafka's minimum segment interval (``Math.max(retention / 2, 60_000)``)
MIN_SEGMENT_INTERVAL_MS = 60_000


def default_segment_interval(retention_ms: int) -> int:
    return max(retention_ms // 2, MIN_SEGMENT_INTERVAL_MS)


class _MergedIterator(BaseKeyValueIterator):
    """Key-ordered merge of the segments' iterators (a key lives in exactly one segment)."""

    __slots__ = ("_inners", "_merged")

    def __init__(self, inners: list, store: str, registry: set) -> None:
        super().__init__(store, registry)
        self._inners = inners
        self._merged = heapq.merge(*inners, key=_first) if len(inners) > 1 else iter(inners[0])

    def _advance(self) -> tuple:
        return next(self._merged)

    def _release(self) -> None:
        for it in self._inners:
            it.close()
        self._inners = []
        self._merged = iter(())


def _first(kv: tuple) -> bytes:
    return kv[0]


class _Filtered(BaseKeyValueIterator):
    """Hides records older than the retention horizon (their segment may outlive them a little)."""

    __slots__ = ("_inner", "_min_time", "_time_of")

    def __init__(self, inner: BaseKeyValueIterator, time_of, min_time: int, store: str, registry: set):
        super().__init__(store, registry)
        self._inner = inner
        self._time_of = time_of
        self._min_time = min_time

    def _advance(self) -> tuple:
        time_of, min_time = self._time_of, self._min_time
        for kv in self._inner:
            if time_of(kv[0]) >= min_time:
                return kv
        raise StopIteration

    def _release(self) -> None:
        self._inner.close()


_SEGMENT_ID = struct.Struct(">q")


class _Stripped(BaseKeyValueIterator):
    """A shared-store scan limited to one segment's prefix, with the prefix removed from the keys."""

    __slots__ = ("_inner", "_n", "_prefix")

    def __init__(self, inner: BaseKeyValueIterator, prefix: bytes, store: str, registry: set) -> None:
        super().__init__(store, registry)
        self._inner = inner
        self._prefix = prefix
        self._n = len(prefix)

    def _advance(self) -> tuple:
        k, v = next(self._inner)
        if not k.startswith(self._prefix):
            raise StopIteration
        return (k[self._n :], v)

    def _release(self) -> None:
        self._inner.close()


class _Segment:
    """One time segment: a key prefix in the store's shared bytes store."""

    __slots__ = ("_shared", "id", "name", "prefix", "registry")

    def __init__(self, shared, segment_id: int, name: str, registry: set) -> None:  # type: ignore[no-untyped-def]
        self._shared = shared
        self.id = segment_id
        self.name = name
        self.prefix = _SEGMENT_ID.pack(segment_id)
        self.registry = registry

    def get(self, key: bytes) -> bytes | None:
        return self._shared.get(self.prefix + key)

    def put(self, key: bytes, value: bytes | None, timestamp: int = 0) -> None:
        self._shared.put(self.prefix + key, value, timestamp)

    def range(self, from_key: bytes | None, to_key: bytes | None) -> BaseKeyValueIterator:
        p = self.prefix
        inner = self._shared.range(p + (from_key or b""), None if to_key is None else p + to_key)
        return _Stripped(inner, p, self.name, self.registry)

    def prefix_scan(self, prefix: bytes) -> BaseKeyValueIterator:
        return _Stripped(
            self._shared.prefix_scan(self.prefix + prefix), self.prefix, self.name, self.registry
        )

    def all(self) -> BaseKeyValueIterator:
        return _Stripped(self._shared.prefix_scan(self.prefix), self.prefix, self.name, self.registry)

    def drop(self) -> None:
        """Every record of the segment, with one range tombstone (deferred stores: at the next persist)."""
        end = prefix_successor(self.prefix)
        self._shared.delete_range(self.prefix, end if end is not None else self.prefix + b"\xff" * 64)


class SegmentedBytesStore:
    def __init__(
        self,
        name: str,
        *,
        retention_ms: int,
        time_of: Callable[[bytes], int],
        persistent: bool = True,
        segment_interval_ms: int | None = None,
        time_first: bool = False,
    ) -> None:
        self.name = name
        self.persistent = persistent
        self.retention_ms = retention_ms
        #: Kafka's time-ordered window store (``TimeFirstWindowKeySchema``, what an ON_WINDOW_CLOSE
        #: aggregation gets) keeps a window readable until ``start < observedStreamTime - retention``,
        #: one millisecond longer than the key-first stores' ``+ 1`` bound (Kafka's own comment: with
        #: retention = grace the ``+ 1`` would leave no window to emit)
        self.time_first = time_first
        self.segment_interval_ms = segment_interval_ms or default_segment_interval(retention_ms)
        self.time_of = time_of
        self.observed_stream_time = -1
        self.expired_records = 0
        self._segments: dict[int, _Segment] = {}
        self._context: StoreContext | None = None
        self._open = False
        self._iters: set = set()
        self._defer = False
        #: expired segments hidden from reads, dropped on the next persist (deferred writes only)
        self._doomed: list[_Segment] = []
        self._shared = None
        #: the oldest live segment id last checked for expired segments (None: check on the next write);
        #: segments below it are gone, so a write in the same or an older floor scans nothing
        self._expiry_floor: int | None = None
        #: segments opened by a write since the last persist while writes are deferred: RocksDB holds
        #: nothing of theirs yet, so a scan reads them from the write buffer alone
        self._buffered_only: set[int] = set()

    @property
    def defer_writes(self) -> bool:
        return self._defer

    @defer_writes.setter
    def defer_writes(self, value: bool) -> None:
        self._defer = bool(value)
        self._buffered_only.clear()
        if self._shared is not None and hasattr(self._shared, "defer_writes"):
            self._shared.defer_writes = self._defer

    # -- lifecycle ---------------------------------------------------------------------------------
    def init(self, context: StoreContext) -> None:
        if self._open:
            raise StateStoreError("store is already initialised", store=self.name, task_id=context.task_id)
        self._context = context
        shared = RocksDBKeyValueStore(self.name) if self.persistent else InMemoryKeyValueStore(self.name)
        shared.init(context)
        if self._defer and hasattr(shared, "defer_writes"):
            shared.defer_writes = True
        self._shared = shared
        self._open = True
        # the segments a previous run left: one seek per segment over the id prefixes
        lower = b""
        while True:
            with shared.range(lower, None) as it:
                first = next(it, None)
            if first is None or len(first[0]) < 8:
                break
            segment_id = _SEGMENT_ID.unpack_from(first[0])[0]
            self._open_segment(segment_id)
            lower = _SEGMENT_ID.pack(segment_id + 1)

    @property
    def is_open(self) -> bool:
        return self._open

    def _segment_name(self, segment_id: int) -> str:
        """Kafka's segment name, ``<store>.<segment start>`` (logs and errors)."""
        return f"{self.name}.{segment_id * self.segment_interval_ms}"

    def _open_segment(self, segment_id: int) -> _Segment:
        segment = _Segment(self._shared, segment_id, self._segment_name(segment_id), self._iters)
        self._segments[segment_id] = segment
        self._expiry_floor = None
        return segment

    def _check_open(self) -> None:
        if not self._open:
            ctx = self._context
            raise StateStoreError(
                "state store is not open (not initialised yet or already closed)",
                store=self.name,
                task_id=ctx.task_id if ctx else None,
            )

    def flush(self) -> None:
        self._check_open()
        self._buffered_only.clear()
        self._shared.flush()

    def persist(self) -> None:
        """Write the buffered writes (after the commit) and drop the segments that expired meanwhile."""
        self._check_open()
        doomed, self._doomed = self._doomed, []
        self._buffered_only.clear()
        for segment in doomed:
            segment.drop()  # queued: applied by persist() after the buffered writes
        persist = getattr(self._shared, "persist", None)
        if persist is not None:
            persist()
        else:
            self._shared.flush()

    def discard_unflushed(self) -> None:
        """Dirty close: drop buffered writes; expired segments stay (the commit never dropped them)."""
        discard = getattr(self._shared, "discard_unflushed", None)
        if discard is not None:
            discard()

    def close(self) -> None:
        if not self._open:
            return
        for it in list(self._iters):
            it.close()
        self._doomed = []  # not dropped: their expiry was never committed
        self._segments.clear()
        self._buffered_only.clear()
        self._open = False
        shared, self._shared = self._shared, None
        shared.close()

    # -- time and segments -------------------------------------------------------------------------
    def min_live_time(self) -> int:
        """The oldest key time still readable (Kafka: ``observedStreamTime - retention + 1``, or without
        the ``+ 1`` for a time-first store)."""
        return self.observed_stream_time - self.retention_ms + (0 if self.time_first else 1)

    def _observe(self, time: int) -> None:
        if time > self.observed_stream_time:
            self.observed_stream_time = time
            self._drop_expired()

    def _drop_expired(self) -> None:
        min_live = (self.observed_stream_time - self.retention_ms) // self.segment_interval_ms
        # stream time advances with nearly every write, the oldest live segment once per segment interval
        floor = self._expiry_floor
        if floor is not None and min_live <= floor:
            return
        self._expiry_floor = min_live
        for segment_id in [s for s in self._segments if s < min_live]:
            segment = self._segments.pop(segment_id)
            if self._defer:
                self._doomed.append(segment)
            else:
                segment.drop()

    def _segment_for_write(self, key: bytes):
        time = self.time_of(key)
        self._observe(time)
        segment_id = time // self.segment_interval_ms
        if segment_id < (self.observed_stream_time - self.retention_ms) // self.segment_interval_ms:
            self.expired_records += 1
            # summarised per interval (a late batch writes many); imported here: the state layer is
            # imported by the processor package, and only this path needs it
            from edge.processor.record_warnings import warn_record

            warn_record(
                log,
                "skipping writes for expired segments",
                "skipping a write to store %s for an expired segment (time %d, stream time %d, "
                "retention %d ms)",
                self.name,
                time,
                self.observed_stream_time,
                self.retention_ms,
            )
            return None
        segment = self._segments.get(segment_id)
        if segment is not None:
            return segment
        if self._defer:
            self._buffered_only.add(segment_id)
        return self._open_segment(segment_id)

    # -- point operations --------------------------------------------------------------------------
    def get(self, key: bytes) -> bytes | None:
        if not self._open:
            self._check_open()
        time = self.time_of(key)
        # min_live_time() written out: a window aggregation reads once per record
        if time < self.observed_stream_time - self.retention_ms + (0 if self.time_first else 1):
            return None
        segment_id = time // self.segment_interval_ms
        segment = self._segments.get(segment_id)
        if segment is None:
            return None
        if segment_id in self._buffered_only:  # a new window of a windowed aggregation: no RocksDB read
            buffered_get = getattr(self._shared, "buffered_get", None)
            if buffered_get is not None:
                return buffered_get(segment.prefix + key)
        return self._shared.get(segment.prefix + key)

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        return [self.get(k) for k in keys]

    def put(self, key: bytes, value: bytes | None, timestamp: int = 0) -> None:
        if not self._open:
            self._check_open()
        # the common case written out: a live segment that is already open
        time = self.time_of(key)
        if time > self.observed_stream_time:
            self._observe(time)
        interval = self.segment_interval_ms
        segment_id = time // interval
        if segment_id >= (self.observed_stream_time - self.retention_ms) // interval:
            segment = self._segments.get(segment_id)
            if segment is not None:
                self._shared.put(segment.prefix + key, value, timestamp)
                return
        segment = self._segment_for_write(key)  # opens the segment, or warns of an expired one
        if segment is not None:
            self._shared.put(segment.prefix + key, value, timestamp)

    def put_if_absent(self, key: bytes, value: bytes, timestamp: int = 0) -> bytes | None:
        old = self.get(key)
        if old is None:
            self.put(key, value, timestamp)
        return old

    def delete(self, key: bytes, timestamp: int = 0) -> bytes | None:
        old = self.get(key)
        if old is not None:
            self.put(key, None, timestamp)
        return old

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None, int]]) -> None:
        for key, value, timestamp in entries:
            self.put(key, value, timestamp)

    def restore_batch(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        self._check_open()
        batch: list[tuple[bytes, bytes | None]] = []
        for key, value in records:
            segment = self._segment_for_write(key)
            if segment is not None:
                batch.append((segment.prefix + key, value))
        # restored records go straight to RocksDB: no segment is the write buffer's alone any more
        # (cleared after the loop, which may have opened segments as buffered-only)
        self._buffered_only.clear()
        # a record later in the batch may have expired an earlier one's segment: keep only live ones
        live = {seg.prefix for seg in self._segments.values()}
        self._shared.restore_batch([kv for kv in batch if kv[0][:8] in live])

    # -- scans -------------------------------------------------------------------------------------
    def _scan(self, open_one: Callable) -> BaseKeyValueIterator:
        self._check_open()
        inners = [open_one(self._segments[s]) for s in sorted(self._segments)]
        if not inners:
            inners = [_EmptyList(self.name)]
        merged = _MergedIterator(inners, self.name, self._iters)
        if self.observed_stream_time < 0:
            return merged
        return _Filtered(merged, self.time_of, self.min_live_time(), self.name, self._iters)

    def range(self, from_key: bytes | None, to_key: bytes | None) -> BaseKeyValueIterator:
        return self._scan(lambda s: s.range(from_key, to_key))

    def range_items(
        self, from_key: bytes, to_key: bytes, time_from: int | None = None, time_to: int | None = None
    ) -> list[tuple[bytes, bytes]]:
        """``list(range(from_key, to_key))`` without iterator objects (see the shared store's
        ``range_items``): a window fetch per record builds no merge, filter or strip iterators.

        ``time_from``/``time_to``: the caller wants only keys whose time lies in that range (one key's
        window fetch), so only the segments that can hold such keys are scanned -- a join's fetch
        spans one or two of a store's three segments; keys of other times may be left out."""
        if not self._open:
            self._check_open()
        shared = self._shared
        scan = getattr(shared, "range_items", None)
        buffered_only = self._buffered_only
        scan_buffer = getattr(shared, "buffered_range_items", None) if buffered_only else None
        out: list[tuple[bytes, bytes]] = []
        parts = 0
        segments = self._segments
        ids = sorted(segments)
        if time_from is not None and time_to is not None:
            interval = self.segment_interval_ms
            first, last = time_from // interval, time_to // interval
            ids = [i for i in ids if first <= i <= last]
        for segment_id in ids:
            p = segments[segment_id].prefix
            if scan_buffer is not None and segment_id in buffered_only:
                found = scan_buffer(p + from_key, p + to_key)
            elif scan is not None:
                found = scan(p + from_key, p + to_key)
            else:
                with shared.range(p + from_key, p + to_key) as it:
                    found = list(it)
            if found:
                parts += 1
                out.extend((k[8:], v) for k, v in found)
        if parts > 1:
            out.sort(key=_first)  # a key lives in exactly one segment: no two entries share a key
        if self.observed_stream_time >= 0 and out:
            time_of, min_time = self.time_of, self.min_live_time()
            out = [kv for kv in out if time_of(kv[0]) >= min_time]
        return out

    def prefix_scan(self, prefix: bytes) -> BaseKeyValueIterator:
        return self._scan(lambda s: s.prefix_scan(prefix))

    def all(self) -> BaseKeyValueIterator:
        return self._scan(lambda s: s.all())

    def approximate_num_entries(self) -> int:
        self._check_open()
        return self._shared.approximate_num_entries()

    def store_path(self) -> Path | None:
        """The RocksDB directory holding every segment (None when in memory)."""
        if not self.persistent or self._context is None:
            return None
        return store_dir(self._context, self.name)

    @property
    def segment_ids(self) -> list[int]:
        return sorted(self._segments)


class _EmptyList(BaseKeyValueIterator):
    __slots__ = ()

    def __init__(self, store: str) -> None:
        super().__init__(store, None)

    def _advance(self) -> tuple:
        raise StopIteration

"""RocksDB bytes key-value store on rocksdict: one DB per store per task.

Layout: ``<state_dir>/<application_id>/<task_id>/rocksdb/<store_name>``. The DB runs in raw (bytes)
mode. Durability model (what :meth:`flush` guarantees before the runtime writes its checkpoint):

* normal writes go through the (unsynced) write-ahead log and :meth:`flush` only fsyncs the WAL --
  about a millisecond, versus tens of milliseconds for Kafka Streams' memtable flush per commit, which
  matters with short (exactly-once) commit intervals;
* ``restore_batch`` writes skip the WAL (restoration is idempotent and re-runs from the old checkpoint
  after a crash), so the next :meth:`flush` after a restore flushes memtables to SST files instead.

Write buffer: point writes (``put``/``delete``/``put_all``) land in a per-store dict (``_pending``) and
reach RocksDB as one ``WriteBatch`` on :meth:`flush` (or :meth:`persist`, see below). Reads look in the
buffer first, and scans merge it (a sorted snapshot of its keys) with the RocksDB iterator, so every
read sees every write without publishing anything. Per record this replaces a WAL-logged ``Rdict.put``
(~2.8 us) and often an ``Rdict.get`` (~1.1 us) by dict operations (~0.1 us), and repeated writes of a
key between commits collapse.

Deferred writes (``defer_writes = True``, set by the runtime on active tasks' stores): the store is
never ahead of the committed input offsets. :meth:`flush` (called by the layers above while the commit
sends changelog records) writes nothing; the runtime calls :meth:`persist` only after the input offsets
were committed (or the transaction committed), so uncommitted writes reach RocksDB -- and its
write-ahead log, which survives a kill -9 -- only together with the commit. Reading (metrics,
interactive queries, scans) never drains the buffer; a buffer over ``PENDING_MAX`` keys asks the task
for an early commit (``StoreContext.request_commit``) instead of draining. A close without a commit
(a crash path) drops the buffer. Without deferral (the test driver, standbys, library use) ``flush``
writes the buffer as before.

Live RocksDB iterators pin the DB (and its LOCK), so every iterator is tracked and closed on
:meth:`close`.
"""

from __future__ import annotations

import logging
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterable
from itertools import islice
from pathlib import Path
from typing import Any

from rocksdict import (
    BlockBasedOptions,
    Cache,
    DBCompressionType,
    Options,
    Rdict,
    ReadOptions,
    WriteBatch,
    WriteBufferManager,
    WriteOptions,
)

from edge.errors import StateStoreError
from edge.paths import remove_tree_inside, resolve_inside
from edge.state.api import StoreContext
from edge.state.iterators import (
    BaseKeyValueIterator,
    EmptyIterator,
    MergedCacheIterator,
    prefix_successor,
)

log = logging.getLogger(__name__)

#: records per WriteBatch when restoring / writing big batches (bounds memory of one batch)
BATCH_SIZE = 10_000
#: distinct keys buffered in memory before the write buffer is written to RocksDB (deferred: before an
#: early commit is requested)
PENDING_MAX = 20_000

_BLOCK_CACHE: Cache | None = None
_WRITE_BUFFERS: WriteBufferManager | None = None
_BLOCK_CACHE_BYTES = 64 * 1024 * 1024
_WRITE_BUFFER_BYTES = 128 * 1024 * 1024


def configure_rocksdb_memory(
    *, block_cache_bytes: int | None = None, write_buffer_bytes: int | None = None
) -> None:
    """Process-wide RocksDB memory bounds shared by every store (call before the first store opens).

    One task per partition per store means many DB instances; without shared bounds each one would
    take its own memtables (16 MiB x 3) and block cache. Kafka Streams users get the same effect with
    a RocksDBConfigSetter sharing a Cache and WriteBufferManager.
    """
    global _BLOCK_CACHE_BYTES, _WRITE_BUFFER_BYTES, _BLOCK_CACHE, _WRITE_BUFFERS
    if block_cache_bytes is not None:
        _BLOCK_CACHE_BYTES = int(block_cache_bytes)
        _BLOCK_CACHE = None
    if write_buffer_bytes is not None:
        _WRITE_BUFFER_BYTES = int(write_buffer_bytes)
        _WRITE_BUFFERS = None


def _shared_block_cache() -> Cache:
    global _BLOCK_CACHE
    if _BLOCK_CACHE is None:
        _BLOCK_CACHE = Cache(_BLOCK_CACHE_BYTES)
    return _BLOCK_CACHE


def _shared_write_buffers() -> WriteBufferManager:
    global _WRITE_BUFFERS
    if _WRITE_BUFFERS is None:
        _WRITE_BUFFERS = WriteBufferManager(_WRITE_BUFFER_BYTES, False)
    return _WRITE_BUFFERS


def default_options() -> Options:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.set_write_buffer_size(16 * 1024 * 1024)
    opts.set_max_write_buffer_number(3)
    opts.set_compression_type(DBCompressionType.lz4())
    opts.set_keep_log_file_num(2)
    opts.set_write_buffer_manager(_shared_write_buffers())
    table = BlockBasedOptions()
    table.set_block_cache(_shared_block_cache())
    table.set_bloom_filter(10, False)
    table.set_block_size(16 * 1024)
    opts.set_block_based_table_factory(table)
    return opts


def store_dir(context: StoreContext, name: str) -> Path:
    return context.task_dir / "rocksdb" / name


def destroy_store_dir(path: Path | str) -> None:
    """Wipe a store's RocksDB directory (corrupt state): the runtime then restores from the changelog."""
    path = Path(path)
    if path.exists():
        # the store name has no separators: the store's directory must lie inside its parent
        resolve_inside(path, path.parent, what="a corrupt store")
        try:
            Rdict.destroy(str(path), Options(raw_mode=True))
        except Exception:
            pass
        remove_tree_inside(path, path.parent, what="a corrupt store", ignore_errors=True)


_MISSING = object()


class RocksDBIterator(BaseKeyValueIterator):
    __slots__ = ("_items", "_next", "_prefix", "_read_opts")

    def __init__(self, items, read_opts, prefix: bytes | None, store: str, registry: set) -> None:
        super().__init__(store, registry)
        self._items = items
        # The native iterator borrows the upper-bound buffer of its ReadOptions: keep them alive together.
        self._read_opts = read_opts
        self._next = items.__next__
        self._prefix = prefix  # only set when no finite upper bound exists (all-0xff prefix)

    def _advance(self) -> tuple:
        kv = self._next()
        p = self._prefix
        if p is not None and not kv[0].startswith(p):
            raise StopIteration
        return kv

    def _release(self) -> None:
        # Dropping the last refs frees the native iterator (CPython refcounting), unpinning the DB.
        self._next = None  # type: ignore[assignment]
        self._items = None
        self._read_opts = None


class _OutsideRanges(BaseKeyValueIterator):
    """A RocksDB scan without the keys of range deletions that wait for the next persist (a deferred
    store's uncommitted ``delete_range``): what was deleted is not read back."""

    __slots__ = ("_inner", "_ranges")

    def __init__(
        self, inner: BaseKeyValueIterator, ranges: list[tuple[bytes, bytes]], store: str, registry: set
    ):
        super().__init__(store, registry)
        self._inner = inner
        self._ranges = ranges

    def _advance(self) -> tuple:
        ranges = self._ranges
        for kv in self._inner:
            k = kv[0]
            if not any(start <= k < end for start, end in ranges):
                return kv
        raise StopIteration

    def _release(self) -> None:
        self._inner.close()


class RocksDBKeyValueStore:
    persistent = True

    def __init__(self, name: str, options_factory=default_options) -> None:
        self.name = name
        self._options_factory = options_factory
        self._db: Rdict | None = None
        self._iters: set = set()
        self._context: StoreContext | None = None
        self.path: Path | None = None
        self._wal_flag = False  # WAL-logged writes not yet fsynced
        self._mem_dirty = False  # un-logged (restore) writes not yet flushed to SST files
        self._pending: dict[bytes, bytes | None] = {}  # write buffer (None = delete)
        #: sorted snapshot of the buffer's keys for scans (keys are only ever added to the buffer until
        #: it is cleared, so an equal length means the same key set)
        self._sorted_keys: list[bytes] | None = None
        self._db_get = None
        #: see the module doc: writes wait for :meth:`persist` (the runtime's post-commit step)
        self.defer_writes = False
        #: ``[start, end)`` ranges to delete at the next :meth:`persist` (deferred writes only)
        self._range_deletes: list[tuple[bytes, bytes]] = []
        self._request_commit: Callable[[], None] | None = None
        self._commit_requested = False
        #: one RocksDB iterator re-positioned by every short scan (:meth:`range_items`): seeking costs
        #: a fraction of creating one. It reads the database as of its creation, so every write to
        #: RocksDB (a write batch, a range deletion) drops it; buffered writes are merged in as for any
        #: scan
        self._seek_iter: Any = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def init(self, context: StoreContext) -> None:
        if self._db is not None:
            raise StateStoreError("store is already initialised", store=self.name, task_id=context.task_id)
        self._context = context
        path = self.path = store_dir(context, self.name)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._error(f"cannot create the store directory: {exc}") from exc
        try:
            db = Rdict(str(path), options=self._options_factory())
        except Exception as exc:
            msg = str(exc)
            locked = "lock" in msg.lower()
            if locked:
                raise self._error(
                    f"cannot open RocksDB, its directory is locked by another open instance ({msg}); "
                    f"close the other store instance (or stop the other process using this state.dir)"
                ) from exc
            raise self._error(
                f"cannot open RocksDB ({msg}); the local state is unusable -- wipe the directory "
                f"(edge.state.rocksdb.destroy_store_dir) and restore from the changelog",
                corrupt=True,
            ) from exc
        self._no_wal = WriteOptions()
        self._no_wal.disable_wal = True
        self._db = db
        self._seek_iter = None
        self._db_get = db.get  # Rdict.get returns None when missing
        self._pending = {}
        self._sorted_keys = None
        self._request_commit = getattr(context, "request_commit", None)
        self._commit_requested = False
        self.get = self._buffered_get  # type: ignore[method-assign]
        self._wal_flag = self._mem_dirty = False

    def _error(self, message: str, corrupt: bool = False) -> StateStoreError:
        ctx = self._context
        return StateStoreError(
            message,
            store=self.name,
            task_id=ctx.task_id if ctx else None,
            partition=ctx.partition if ctx else None,
            path=str(self.path) if self.path else None,
            corrupt=corrupt,
        )

    def _closed_error(self) -> StateStoreError:
        return self._error("state store is not open (not initialised yet or already closed)")

    @property
    def is_open(self) -> bool:
        return self._db is not None

    @property
    def _wal_dirty(self) -> bool:
        """Writes not yet fsynced: in the WAL or still in the write buffer."""
        return self._wal_flag or bool(self._pending)

    def _drain(self) -> None:
        """Write the write buffer to RocksDB (one WriteBatch, WAL-logged)."""
        pending = self._pending
        if pending:
            self._pending = {}
            self._sorted_keys = None
            self._write_batches(pending.items(), None)
            self._wal_flag = True
        self._commit_requested = False

    def _over_limit(self) -> None:
        """The buffer reached ``PENDING_MAX`` keys: deferred stores ask for a commit, others drain."""
        if not self.defer_writes:
            self._drain()
        elif not self._commit_requested:
            self._commit_requested = True
            if self._request_commit is not None:
                self._request_commit()

    def flush(self) -> None:
        """Make the buffered writes durable -- unless writes are deferred (then :meth:`persist` does)."""
        if self.defer_writes:
            if self._db is None:
                raise self._closed_error()
            return
        self.persist()

    def persist(self) -> None:
        """Write the buffer to RocksDB as one WriteBatch and fsync the WAL (the runtime calls this after
        the commit, so what reaches RocksDB is always committed)."""
        db = self._db
        if db is None:
            raise self._closed_error()
        try:
            # range deletions first: the buffer holds only writes made after them (a deletion drops
            # the buffered writes in its range), so a key written into a deleted range survives
            ranges, self._range_deletes = self._range_deletes, []
            for start, end in ranges:
                self._seek_iter = None
                db.delete_range(start, end)
                self._wal_flag = True
            self._drain()
            if self._mem_dirty:
                db.flush(True)  # memtables -> SST (also covers WAL-logged writes)
            elif self._wal_flag:
                db.flush_wal(True)
        except Exception as exc:
            raise self._error(f"flushing RocksDB failed: {exc}") from exc
        self._wal_flag = self._mem_dirty = False

    def discard_unflushed(self) -> None:
        """Drop the write buffer (a dirty close: those writes belong to work redone from the commit)."""
        self._range_deletes = []
        self._pending = {}
        self._sorted_keys = None
        self._commit_requested = False

    def close(self) -> None:
        db = self._db
        if db is None:
            return
        for it in list(self._iters):
            it.close()
        try:
            if self.defer_writes:
                if self._pending:
                    # the runtime persists after every commit, a clean close included: anything left is
                    # uncommitted and must not outlive this instance
                    log.debug(
                        "store %s: dropping %d uncommitted buffered writes on close",
                        self.name,
                        len(self._pending),
                    )
                self.discard_unflushed()
            else:
                self._drain()
        finally:
            self._db = None
            self._seek_iter = None  # before the close: an iterator keeps the database open
            self._db_get = None
            self.get = self._closed_get  # type: ignore[method-assign]
        try:
            if self._mem_dirty or self._wal_dirty:
                db.flush(True)
            db.close()
        except Exception as exc:
            raise self._error(f"error while closing RocksDB: {exc}") from exc
        finally:
            del db

    def _closed_get(self, key: bytes) -> bytes | None:
        raise self._closed_error()

    def delete_range(self, start: bytes, end: bytes) -> None:
        """Delete every key in ``[start, end)`` with one range tombstone (how a window store drops a
        whole time segment); buffered writes in the range go too. Deferred stores apply it at
        :meth:`persist`, so an uncommitted deletion never reaches RocksDB."""
        db = self._db
        if db is None:
            raise self._closed_error()
        pending = self._pending
        doomed = [k for k in pending if start <= k < end]
        for k in doomed:
            del pending[k]
        if doomed:
            self._sorted_keys = None
        if self.defer_writes:
            self._range_deletes.append((start, end))
            return
        self._seek_iter = None
        try:
            db.delete_range(start, end)
        except Exception as exc:
            raise self._error(f"deleting a key range failed: {exc}") from exc
        self._wal_flag = True

    # -- point operations --------------------------------------------------------------------------
    def get(self, key: bytes) -> bytes | None:  # replaced by _buffered_get on init
        raise self._closed_error()

    def _buffered_get(self, key: bytes) -> bytes | None:
        v = self._pending.get(key, _MISSING)
        if v is _MISSING:
            if self._range_deletes and any(start <= key < end for start, end in self._range_deletes):
                return None  # deleted by a range deletion that waits for the next persist
            return self._db_get(key)  # type: ignore[misc]
        return v  # type: ignore[return-value]

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        db = self._db
        if db is None:
            raise self._closed_error()
        pending = self._pending
        ranges = self._range_deletes
        if not pending and not ranges:
            return db.get(keys)  # multi-get
        missing = [k for k in keys if k not in pending]
        found = dict(zip(missing, db.get(missing), strict=True)) if missing else {}
        if ranges:
            for k in missing:
                if any(start <= k < end for start, end in ranges):
                    found[k] = None  # deleted by a range deletion that waits for the next persist
        return [pending[k] if k in pending else found[k] for k in keys]

    def put(self, key: bytes, value: bytes | None, timestamp: int = 0) -> None:
        if self._db is None:
            raise self._closed_error()
        pending = self._pending
        pending[key] = value
        if len(pending) >= PENDING_MAX:
            self._over_limit()

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
        if self._db is None:
            raise self._closed_error()
        pending = self._pending
        for k, v, _ in entries:
            pending[k] = v
        if len(pending) >= PENDING_MAX:
            self._over_limit()

    def restore_batch(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        if not self.defer_writes:
            self._drain()
        self._write_batches(records, self._no_wal)
        self._mem_dirty = True

    def _write_batches(self, records: Iterable[tuple[bytes, bytes | None]], write_opt) -> None:
        db = self._db
        if db is None:
            raise self._closed_error()
        self._seek_iter = None
        wb = WriteBatch(raw_mode=True)
        put = wb.put
        delete = wb.delete
        n = 0
        for k, v in records:
            if v is None:
                delete(k)
            else:
                put(k, v)
            n += 1
            if n == BATCH_SIZE:
                db.write(wb, write_opt)
                wb = WriteBatch(raw_mode=True)
                put = wb.put
                delete = wb.delete
                n = 0
        if n:
            db.write(wb, write_opt)

    # -- scans -------------------------------------------------------------------------------------
    def _iterate(self, start: bytes | None, upper: bytes | None, prefix: bytes | None) -> RocksDBIterator:
        db = self._db
        if db is None:
            raise self._closed_error()
        ro = ReadOptions()
        if upper is not None:
            ro.set_iterate_upper_bound(upper)
        items = db.items(from_key=start, read_opt=ro)
        it: BaseKeyValueIterator = RocksDBIterator(items, ro, prefix, self.name, self._iters)
        if self._range_deletes:
            it = _OutsideRanges(it, list(self._range_deletes), self.name, self._iters)
        pending = self._pending
        if not pending:
            return it
        # merge the write buffer into the scan (buffered values win, a buffered None hides the key)
        keys = self._buffered_keys_sorted()
        lo = 0 if start is None else bisect_left(keys, start)
        hi = len(keys) if upper is None else bisect_left(keys, upper)
        overlay = [(k, pending[k]) for k in keys[lo:hi]]
        if prefix is not None:
            overlay = [kv for kv in overlay if kv[0].startswith(prefix)]
        if not overlay:
            return it
        return MergedCacheIterator(overlay, it, self.name, self._iters)

    def _buffered_keys_sorted(self) -> list[bytes]:
        """The write buffer's keys in order, for merging it into a scan (kept between scans)."""
        keys = self._sorted_keys
        pending = self._pending
        if keys is None:
            keys = self._sorted_keys = sorted(pending)
        elif len(keys) != len(pending):
            keys = self._sort_in_new_keys(keys, pending)
        return keys

    def _sort_in_new_keys(self, keys: list[bytes], pending: dict[bytes, bytes | None]) -> list[bytes]:
        """Bring the sorted key list up to date with the keys buffered since it was built.

        Re-sorting the whole buffer per scan made a stream-stream join (a window fetch per record, a put
        between fetches) quadratic in the records of a commit interval: 62 % of its stream thread went to
        ``sorted(pending)``. Keys only join the buffer until it is cleared and a dict keeps insertion
        order, so the keys the list lacks are the newest ones: a few are inserted in place (a binary
        search and one move each), many are sorted in with the rest."""
        missing = len(pending) - len(keys)
        if missing > 64:
            keys = self._sorted_keys = sorted(pending)
            return keys
        for key in islice(reversed(pending), missing):
            insort(keys, key)
        return keys

    def range_items(self, from_key: bytes, to_key: bytes) -> list[tuple[bytes, bytes]]:
        """``list(range(from_key, to_key))`` without iterator objects, for the short scans a window
        fetch makes per record (a stream-stream join: one per input record, usually 0-2 rows)."""
        db = self._db
        if db is None:
            raise self._closed_error()
        if from_key > to_key:
            return []
        it = self._seek_iter
        if it is None:
            it = self._seek_iter = db.iter(ReadOptions())
        it.seek(from_key)
        items = []
        valid, key, value, step = it.valid, it.key, it.value, it.next
        while valid():
            k = key()
            if k > to_key:
                break
            items.append((k, value()))
            step()
        ranges = self._range_deletes
        if ranges:
            items = [kv for kv in items if not any(start <= kv[0] < end for start, end in ranges)]
        pending = self._pending
        if not pending:
            return items
        keys = self._buffered_keys_sorted()
        lo = bisect_left(keys, from_key)
        hi = bisect_right(keys, to_key)
        if lo == hi:
            return items
        merged = dict(items)
        for k in keys[lo:hi]:
            merged[k] = pending[k]  # buffered values win; a buffered None hides the key
        return sorted(kv for kv in merged.items() if kv[1] is not None)

    def buffered_get(self, key: bytes) -> bytes | None:
        """:meth:`get` from the write buffer alone (see :meth:`buffered_range_items`)."""
        if self._db is None:
            raise self._closed_error()
        return self._pending.get(key)

    def buffered_range_items(self, from_key: bytes, to_key: bytes) -> list[tuple[bytes, bytes]]:
        """:meth:`range_items` of the write buffer alone: for a caller that knows RocksDB holds no key
        in the range (a segment opened since the last persist), so no RocksDB seek is needed."""
        if self._db is None:
            raise self._closed_error()
        pending = self._pending
        if not pending or from_key > to_key:
            return []
        keys = self._buffered_keys_sorted()
        lo = bisect_left(keys, from_key)
        hi = bisect_right(keys, to_key)
        return [(k, v) for k in keys[lo:hi] if (v := pending[k]) is not None]

    def range(self, from_key: bytes | None, to_key: bytes | None) -> BaseKeyValueIterator:
        if from_key is not None and to_key is not None and from_key > to_key:
            if self._db is None:
                raise self._closed_error()
            return EmptyIterator(self.name)
        # inclusive upper bound: the smallest key greater than to_key is to_key + b"\x00"
        return self._iterate(from_key, None if to_key is None else to_key + b"\x00", None)

    def prefix_scan(self, prefix: bytes) -> BaseKeyValueIterator:
        end = prefix_successor(prefix)
        return self._iterate(prefix or None, end, prefix if (end is None and prefix) else None)

    def all(self) -> BaseKeyValueIterator:
        return self._iterate(None, None, None)

    def approximate_num_entries(self) -> int:
        db = self._db
        if db is None:
            raise self._closed_error()
        try:
            n = db.property_int_value("rocksdb.estimate-num-keys")
        except Exception:
            n = None
        # buffered writes are counted, never drained: a metric must not publish uncommitted state
        buffered = sum(1 for v in self._pending.values() if v is not None)
        return (int(n) if n is not None else 0) + buffered

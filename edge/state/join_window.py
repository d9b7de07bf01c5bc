"""A stream-stream join's window store with its recent records indexed in memory.

Each side of a windowed join writes every record to its window store and looks up the other side's
store for every record: one RocksDB seek per record per segment the join window spans, half of the
join's per-record cost in the hot-path benchmark. Those look-ups only ever reach back one join window
from stream time, so the store also keeps its recent records in memory, by key, and answers a fetch
from there whenever its time range lies wholly within what the index is known to hold. Kafka Streams
has no such index; its stores and changelogs are unchanged by it: every write still goes down the
stack (changelog, RocksDB), and restores, standbys, interactive queries and fetches reaching further
back read the store as before.

What the index holds is tracked by one bound, the **horizon**: every record of the store whose time is
at or after it is in the index. At ``init`` it is past the store's newest segment (what a restore or
an earlier run wrote is on disk only); it moves up past every record evicted from the index and
past every batch restored into an open store. A fetch from ``time_from >= horizon`` is answered from
the index, others from the store. Records leave the index when they fall out of the store's retention,
or oldest first when the index outgrows its byte budget (``join.index.max.bytes``).
"""

from __future__ import annotations

import bisect
from collections import deque
from typing import Any

from edge.serde.windowed import window_store_key
from edge.state.api import StoreContext
from edge.state.window_store import MeteredWindowStore

#: a join window store's default in-memory index budget (bytes of keys and values, plus the overhead below)
DEFAULT_JOIN_INDEX_MAX_BYTES = 16 * 1024 * 1024
#: Python's cost per indexed record beyond its key and value bytes (tuple, ints, list and deque slots)
_ENTRY_OVERHEAD = 160
#: expired records stay indexed up to retention / this past the retention (their bytes still count)
_EVICT_SLACK_DIVISOR = 16
#: ``_min_live`` before the store has seen a record: nothing has expired
_NO_MIN_LIVE = -(1 << 63)


class IndexedJoinWindowStore(MeteredWindowStore):
    """The window store of one side of a stream-stream join (``retain_duplicates``), with the index."""

    def __init__(self, *args: Any, index_max_bytes: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: None: the context's ``join_index_max_bytes`` (the app's ``join.index.max.bytes``)
        self._configured_max_bytes = index_max_bytes
        self.index_max_bytes = 0
        #: key bytes -> (time, seqnum, value bytes), or a list of them sorted as the store sorts them when
        #: the key has more than one record
        self._index: dict[bytes, tuple[int, int, bytes] | list[tuple[int, int, bytes]]] = {}
        #: (time, key bytes) in write order: who to evict first
        self._order: deque[tuple[int, bytes]] = deque()
        self._bytes = 0
        self._evict_slack = 0
        self.horizon = 0
        #: fetches answered from the index / from the store (the tests and metrics read them)
        self.index_hits = 0
        self.index_misses = 0

    # -- lifecycle ---------------------------------------------------------------------------------
    def init(self, context: StoreContext) -> None:
        super().init(context)
        budget = self._configured_max_bytes
        if budget is None:
            budget = getattr(context, "join_index_max_bytes", DEFAULT_JOIN_INDEX_MAX_BYTES)
        self.index_max_bytes = max(0, int(budget))
        #: how far past the retention the oldest indexed record may be before expired ones are evicted
        self._evict_slack = max(0, self.retention_ms // _EVICT_SLACK_DIVISOR)
        inner = self._inner
        #: min_live = the segments' stream time - this (``_min_live`` written out: two calls per record)
        self._live_back = inner.retention_ms - (0 if inner.time_first else 1)
        self._reset_index()

    def _reset_index(self) -> None:
        """Empty the index; only records written from now on (after the current stream time) are in it."""
        self._index = {}
        self._order = deque()
        self._bytes = 0
        inner = self._inner
        if inner is None:
            self.horizon = 0
            return
        # what is on disk (an earlier run's, a restore's): the store does not know the newest time it
        # holds until it writes again, only its segments, so the horizon is the end of the newest one
        ids = inner.segment_ids
        on_disk = (ids[-1] + 1) * inner.segment_interval_ms if ids else 0
        self.horizon = max(0, self.observed_stream_time + 1, on_disk)

    def restore_batch(self, records: Any) -> None:
        super().restore_batch(records)
        self.horizon = max(self.horizon, self.observed_stream_time + 1)

    def discard_unflushed(self) -> None:
        """A dirty close: the index may hold writes the store will not keep."""
        self._reset_index()

    def close(self) -> None:
        self._index = {}
        self._order = deque()
        self._bytes = 0
        super().close()

    # -- writes ------------------------------------------------------------------------------------
    def put(self, key: Any, value: Any, window_start: int, timestamp: int | None = None) -> None:
        if value is None:
            return  # a join store keeps duplicates: a None value deletes nothing (as in Kafka)
        if timestamp is None:
            timestamp = self._ts()
        self._seqnum = seq = (self._seqnum + 1) & 0x7FFFFFFF
        kb = self._key_bytes(key)
        vb = self._vser(self._topic, value)
        self.wrapped.put(window_store_key(kb, window_start, seq), vb, timestamp)
        budget = self.index_max_bytes
        if budget <= 0:
            return
        observed = self._inner.observed_stream_time
        min_live = observed - self._live_back if observed >= 0 else _NO_MIN_LIVE
        if window_start < min_live:
            return  # the store skipped (or will never return) this expired record
        # one record per key is the common case (an order, its payment): a bare tuple, which the garbage
        # collector stops tracking, rather than a one-element list it would traverse on every full pass
        index = self._index
        entry = (window_start, seq, vb)
        held = index.get(kb)
        if held is None:
            index[kb] = entry
        elif held.__class__ is tuple:
            index[kb] = [held, entry] if held[0] <= window_start else [entry, held]  # type: ignore[index]
        elif held[-1][0] <= window_start:  # type: ignore[index]
            held.append(entry)  # type: ignore[union-attr]
        else:
            bisect.insort(held, entry)  # type: ignore[arg-type]
        order = self._order
        order.append((window_start, kb))
        self._bytes += len(kb) + len(vb) + _ENTRY_OVERHEAD
        # expired records go in bulk, once the oldest is a slack past the retention: one call per ~slack
        # of stream time instead of one per record (a fetch never reads them: it starts at min_live)
        if order[0][0] < min_live - self._evict_slack or self._bytes > budget:
            self._evict(min_live)

    def _evict(self, min_live: int) -> None:
        """Drop records older than the retention, then the oldest while over budget. Each drop removes the
        key's oldest record, which is what a fetch would reach last; the horizon moves past it."""
        order, index = self._order, self._index
        budget = self.index_max_bytes
        while order and (order[0][0] < min_live or self._bytes > budget):
            _, kb = order.popleft()
            held = index.get(kb)
            if held is None:
                continue
            if held.__class__ is tuple:
                time, _, vb = held  # type: ignore[misc]
                del index[kb]
            else:
                time, _, vb = held.pop(0)  # type: ignore[union-attr]
                if len(held) == 1:  # type: ignore[arg-type]
                    index[kb] = held[0]  # type: ignore[index]
            self._bytes -= len(kb) + len(vb) + _ENTRY_OVERHEAD
            if time >= self.horizon:
                self.horizon = time + 1

    # -- reads -------------------------------------------------------------------------------------
    def _fetch_key(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, Any]]:
        if key is None or self.index_max_bytes <= 0:
            return super()._fetch_key(key, time_from, time_to)
        observed = self._inner.observed_stream_time
        min_live = observed - self._live_back if observed >= 0 else _NO_MIN_LIVE
        if time_from < min_live:
            time_from = min_live
        if time_from < 0:
            time_from = 0
        if time_from < self.horizon:
            self.index_misses += 1
            return super()._fetch_key(key, time_from, time_to)
        self.index_hits += 1
        if time_from > time_to:
            return []
        held = self._index.get(self._kser(self._topic, key) or b"")
        if held is None:
            return []
        topic, vde = self._topic, self._vde
        if held.__class__ is tuple:
            t = held[0]  # type: ignore[index]
            return [(t, vde(topic, held[2]))] if time_from <= t <= time_to else []  # type: ignore[index]
        return [(t, vde(topic, vb)) for t, _, vb in held if time_from <= t <= time_to]  # type: ignore[union-attr]

    def fetch_list(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, Any]]:
        """``list(fetch(key, time_from, time_to))`` without the iterator (the join's per-record look-up)."""
        if key is None:
            return super()._fetch_key(key, time_from, time_to)  # raises: a fetch needs a key
        return self._fetch_key(key, time_from, time_to)

    @property
    def indexed_records(self) -> int:
        return len(self._order)

    @property
    def indexed_bytes(self) -> int:
        return self._bytes

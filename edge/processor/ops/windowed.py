"""Windowed aggregations over time windows (Kafka's ``KStreamWindowAggregate`` and the shared
``AbstractKStreamTimeWindowAggregateProcessor``), plus what sliding and session aggregations share:
emit-on-update forwarding through the window cache, emit-on-window-close (KIP-825), late-record
accounting and the value getters of windowed tables.

Kafka's rules, kept exactly:

* each processor tracks its own observed stream time (the largest timestamp it saw; not restored on a
  restart, as in Kafka) and a window closes once ``observed - grace`` reaches its end;
* a record for a closed window is dropped with a warning naming key, timestamp, window, expiration and
  stream time, and counted in the task's ``dropped_records``; the warnings of a late batch are
  summarised (the first as Kafka logs it, then one line per interval, see
  :mod:`edge.processor.record_warnings`), the metric counts every record;
* on update, a window's result carries the largest timestamp of its records; with caching the cache
  forwards collapsed updates on flush (old values included), without it every update is forwarded;
* on window close, closed windows are fetched by time range once the close time progresses (throttled by
  ``emit_interval_ms_kstreams_windowed_aggregation`` of wall-clock time) and forwarded once each,
  ordered like Kafka's time-ordered store (window start, then key bytes). The last emitted close time is
  kept in a small key-value store with a changelog (Kafka keeps it in the commit metadata), so a
  restarted task neither re-emits nor skips windows.

One deliberate addition: our window stores hide a window as soon as its start falls below
``observed - retention + 1`` (Kafka's key-ordered rule), while Kafka's time-ordered emit-final store still
shows the window whose start equals ``observed - retention``. So an emit-final processor emits the closed
windows *before* a write that would move the store's observed time (and hide them), even when the wall-clock
throttle would skip; this changes no result, only when one is sent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from edge.processor.api import Processor, ProcessorContext
from edge.processor.context import forward_all
from edge.processor.record import Change, Headers, Record
from edge.processor.record_warnings import warn_record
from edge.serde import ValueAndTimestamp
from edge.serde.windowed import TimeWindow, Window, Windowed

log = logging.getLogger(__name__)

_tuple_new = tuple.__new__
_new = object.__new__

#: Kafka's ``ConsumerRecord.NO_TIMESTAMP``
NO_TIMESTAMP = -1
#: Kafka's default of the internal ``emit.interval.ms.kstreams.windowed.aggregation``
DEFAULT_EMIT_INTERVAL_MS = 1000


def _task(context: ProcessorContext) -> Any:
    return getattr(context, "_task", None)


def count_dropped(context: ProcessorContext) -> None:
    """Count a record dropped by an operator (Kafka's task-level dropped-records sensor)."""
    task = _task(context)
    if task is not None and hasattr(task, "dropped_records"):
        task.dropped_records += 1


def emit_interval_ms(context: ProcessorContext) -> int:
    """The windowed-aggregation emit throttle of the task's config (Kafka's internal setting)."""
    config = getattr(_task(context), "config", None)
    value = getattr(config, "emit_interval_ms_kstreams_windowed_aggregation", None)
    return DEFAULT_EMIT_INTERVAL_MS if value is None else int(value)


def _where(context: ProcessorContext) -> str:
    if context.topic is None:
        return "Topic, partition, and offset not known."
    return f"topic=[{context.topic}] partition=[{context.partition}] offset=[{context.offset}]"


def log_skipped_null_key(context: ProcessorContext, what: str = "null key") -> None:
    warn_record(log, f"Skipping record due to {what}", "Skipping record due to %s. %s", what, _where(context))
    count_dropped(context)


class WindowedAggregateProcessor(Processor):
    """What every windowed aggregation shares: the store, forwarding on update (directly or through the
    cache's flush listener), and the emit-on-window-close machinery. Subclasses implement ``process``
    and the emit range (``_emit_range``) and order (``_closed_windows``)."""

    #: the forwarded timestamp of a window on flush: the value's (time windows) or the window end (sessions)
    _session = False
    #: Kafka's ``sendOldValues`` (see ``edge.processor.ops.aggregate._StoreBacked``)
    send_old_values = True

    def __init__(self, store_name: str, emit_final: bool, metadata_store: str | None) -> None:
        self._store_name = store_name
        self._emit_final = emit_final
        self._metadata_store_name = metadata_store
        self.observed_stream_time = NO_TIMESTAMP
        self.last_emit_window_close_time = NO_TIMESTAMP
        self._next_time_to_emit = 0
        self._emit_interval = DEFAULT_EMIT_INTERVAL_MS
        self._caching = False
        self._max_key_time = NO_TIMESTAMP
        self._metadata: Any = None
        self._loaded = True

    def _load_emit_state(self) -> None:
        """Read what the stores remember (last emitted close time, the window store's time) on the first
        record, not in ``init``: the runtime restores stores from their changelogs after ``init``."""
        self._loaded = True
        if self._metadata is not None:
            last = self._metadata.get(self._store_name)
            if last is not None:
                self.last_emit_window_close_time = last
        self._max_key_time = self.store.observed_stream_time

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._forward = forward_all(context)
        self.store = context.get_state_store(self._store_name)
        if self._emit_final:
            self._emit_interval = emit_interval_ms(context)
            if self._metadata_store_name is not None:
                self._metadata = context.get_state_store(self._metadata_store_name)
            self._loaded = False
        else:
            self._caching = bool(self.store.set_flush_listener(self._on_flush, self.send_old_values))

    # -- emit on update ---------------------------------------------------------------------------------
    def _on_flush(self, key: Windowed, new: Any, old: Any, timestamp: int) -> None:
        if self._session:
            # the cache calls this only for a session that exists now or did before; without old values
            # a merged-away session is forwarded as Change(None, None), Kafka's tombstone for it
            self._forward(Record(key, Change(new, old), key.window.end))
            return
        new_value = None if new is None else new[0]
        old_value = None if old is None else old[0]
        if new_value is None and old_value is None:
            return
        self._forward(Record(key, Change(new_value, old_value), timestamp if new is None else new[1]))

    def forward_update(
        self, key: Windowed, old: Any, new: Any, timestamp: int, headers: Headers | None
    ) -> None:
        """Kafka's ``maybeForwardUpdate``: nothing on window close, nothing when the cache forwards."""
        if self._emit_final or self._caching:
            return
        self._forward(Record(key, Change(new, old if self.send_old_values else None), timestamp, headers))

    # -- late records -----------------------------------------------------------------------------------
    def log_expired(self, key: Any, timestamp: int, window_expire: int, window: str) -> None:
        # Kafka's message, then the key (Kafka's does not name it; an operator wants it); summarised per
        # interval (a late batch is one line per 10 s, not one per record), counted record by record
        warn_record(
            log,
            "Skipping record for expired window",
            "Skipping record for expired window. %s timestamp=[%d] window=%s expiration=[%d] streamTime=[%d] "
            "key=[%s]",
            _where(self.context),
            timestamp,
            window,
            window_expire,
            self.observed_stream_time,
            key,
        )
        count_dropped(self.context)

    # -- emit on window close ---------------------------------------------------------------------------
    def before_writes(self, record: Record, window_close_time: int, max_key_time: int) -> None:
        """Emit closed windows now if this record's writes will move the store's observed time (which
        hides the oldest windows); see the module docstring."""
        if not self._loaded:
            self._load_emit_state()
        if max_key_time <= self._max_key_time:
            return
        self._max_key_time = max_key_time
        if (
            self.last_emit_window_close_time == NO_TIMESTAMP
            or self.last_emit_window_close_time < window_close_time
        ):
            self._emit_closed(record, window_close_time)

    def maybe_forward_final_result(self, record: Record, window_close_time: int) -> None:
        """Kafka's ``maybeForwardFinalResult`` (throttled by wall-clock time)."""
        if not self._emit_final:
            return
        if not self._loaded:
            self._load_emit_state()
        now = self.context.wall_clock_time
        if now < self._next_time_to_emit:
            return
        self._next_time_to_emit = now + self._emit_interval
        if (
            self.last_emit_window_close_time != NO_TIMESTAMP
            and self.last_emit_window_close_time >= window_close_time
        ):
            return
        self._emit_closed(record, window_close_time)

    def _emit_closed(self, record: Record, window_close_time: int) -> None:
        bounds = self._emit_range(window_close_time)
        if bounds is None:
            return
        headers = record.headers
        forward = self._forward
        for key, value, timestamp in self._closed_windows(*bounds):
            forward(Record(key, Change(value, None), timestamp, headers))
        self.last_emit_window_close_time = window_close_time
        if self._metadata is not None:
            self._metadata.put(self._store_name, window_close_time)

    def _emit_range(self, window_close_time: int) -> tuple[int, int] | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _closed_windows(self, lower: int, upper: int) -> list[tuple[Windowed, Any, int]]:
        """Windows whose start lies in ``[lower, upper]`` as ``(key, value, timestamp)``, ordered like
        Kafka's time-ordered window store: by start, then key bytes."""
        store = self.store
        ser = store.key_serde.serialize
        topic = store.name
        with store.fetch_all(lower, upper) as it:
            items = [(k.window.start, ser(topic, k.key) or b"", k, vt) for k, vt in it]
        items.sort(key=_start_and_key)
        return [(k, vt[0], vt[1]) for _, _, k, vt in items]


def _start_and_key(item: tuple) -> tuple[int, bytes]:
    return item[0], item[1]


class KStreamWindowAggregate(WindowedAggregateProcessor):
    """Tumbling and hopping windows: a record updates every window it falls into that has not closed
    (Kafka's condition ``windowEnd > closeTime``), starting from ``initializer()``."""

    def __init__(
        self,
        store_name: str,
        windows: Any,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        emit_final: bool = False,
        metadata_store: str | None = None,
    ) -> None:
        super().__init__(store_name, emit_final, metadata_store)
        self._windows = windows
        self._initializer = initializer
        self._aggregator = aggregator
        self._last_window: TimeWindow | None = None
        #: tumbling windows emitting on update through a store with a fused read-modify-write (``init``)
        self._tumbling = False

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        windows = self._windows
        fetch_for_update = getattr(self.store, "fetch_for_update", None)
        # tumbling windows, emit on update, a store with a fused read-modify-write: one window per record
        # and one key serialization for its fetch and put; _process_windows gives the same results
        if (
            not self._emit_final
            and fetch_for_update is not None
            and not getattr(self.store, "retain_duplicates", False)
            and getattr(windows, "advance_ms", None) == windows.size_ms
        ):
            self._fetch_for_update = fetch_for_update
            self._put_store_key = self.store.put_store_key
            self._tumbling = True

    def process(self, record: Record) -> None:
        # the task binds ``process`` before ``init``: the choice of path is a flag, not a rebinding
        if not self._tumbling:
            self._process_windows(record)
            return
        key = record.key
        if key is None:
            log_skipped_null_key(self.context)
            return
        timestamp = record.timestamp
        if timestamp > self.observed_stream_time:
            self.observed_stream_time = timestamp
        if timestamp < 0:  # no window holds a negative timestamp (Kafka's windowsFor)
            return
        size = self._windows.size_ms
        close_time = self.observed_stream_time - self._windows.grace_ms
        start = timestamp - timestamp % size
        end = start + size
        if end <= close_time:
            self.log_expired(key, timestamp, close_time, f"[{start},{end})")
            return
        window = self._last_window
        if window is None or window.start != start:
            window = self._last_window = TimeWindow(start, end)
        store_key, old = self._fetch_for_update(key, start)
        if old is None:
            old_agg = self._initializer()
            new_ts = timestamp
        else:
            old_agg = old[0]
            new_ts = old[1] if old[1] > timestamp else timestamp
        new_agg = self._aggregator(key, record.value, old_agg)
        # tuple.__new__ / object.__new__: no NamedTuple, Record or Change __init__ frames per record
        self._put_store_key(store_key, _tuple_new(ValueAndTimestamp, (new_agg, new_ts)), new_ts)
        if self._caching:
            return
        change = _new(Change)
        change.new = new_agg
        change.old = old_agg if self.send_old_values else None
        out = _new(Record)
        out.key = Windowed(key, window)
        out.value = change
        out.timestamp = new_ts
        out.headers = record.headers
        self._forward(out)

    def _process_windows(self, record: Record) -> None:
        """Every window the record falls into (hopping windows, emit on close, any window store)."""
        key = record.key
        if key is None:
            log_skipped_null_key(self.context)
            return
        timestamp = record.timestamp
        if timestamp > self.observed_stream_time:
            self.observed_stream_time = timestamp
        windows = self._windows
        close_time = self.observed_stream_time - windows.grace_ms
        matched = windows.windows_for(timestamp)
        if self._emit_final and matched:
            self.before_writes(record, close_time, max(matched))
        store = self.store
        for start, window in matched.items():
            end = window.end
            if end > close_time:
                old = store.fetch(key, start)
                if old is None:
                    old_agg = self._initializer()
                    new_ts = timestamp
                else:
                    old_agg = old[0]
                    new_ts = old[1] if old[1] > timestamp else timestamp
                new_agg = self._aggregator(key, record.value, old_agg)
                store.put(key, ValueAndTimestamp(new_agg, new_ts), start, new_ts)
                self.forward_update(Windowed(key, window), old_agg, new_agg, new_ts, record.headers)
            else:
                self.log_expired(key, timestamp, close_time, f"[{start},{end})")
        self.maybe_forward_final_result(record, close_time)

    def _emit_range(self, window_close_time: int) -> tuple[int, int] | None:
        size = self._windows.size_ms
        upper = window_close_time - size
        if upper < 0:
            return None
        last = self.last_emit_window_close_time
        lower = 0 if last == NO_TIMESTAMP else max(0, last - size) + 1
        # no window ends between the last emit and now: nothing to fetch (Kafka's shouldRangeFetch)
        if last != NO_TIMESTAMP and self._windows.windows_for(upper) == self._windows.windows_for(lower - 1):
            return None
        return lower, upper


class WindowStoreGetter:
    """Value getter of a windowed table backed by a (timestamped) window store."""

    def __init__(self, store_name: str) -> None:
        self._name = store_name

    def init(self, context: ProcessorContext) -> None:
        self._store = context.get_state_store(self._name)

    def get(self, key: Windowed) -> ValueAndTimestamp | None:
        return self._store.fetch(key.key, key.window.start)


class SessionStoreGetter:
    """Value getter of a session table: the session's aggregate, timestamped with the session end."""

    def __init__(self, store_name: str) -> None:
        self._name = store_name

    def init(self, context: ProcessorContext) -> None:
        self._store = context.get_state_store(self._name)

    def get(self, key: Windowed) -> ValueAndTimestamp | None:
        window: Window = key.window
        value = self._store.fetch_session(key.key, window.start, window.end)
        return None if value is None else ValueAndTimestamp(value, window.end)

"""Session-window aggregation (Kafka's ``KStreamSessionWindowAggregate``).

A record at ``t`` finds its key's sessions overlapping ``[t - gap, t + gap]``, merges them (and their
aggregates, with the session merger) into one session, removes the merged ones -- forwarding a tombstone
for each, stamped with its end: ``Change(None, None)``, or ``Change(None, old)`` when a downstream
operator asked for old values -- and stores the new session. Results are stamped
with the session end (Kafka's rule). A session whose merged end is before ``observed - grace - gap`` is
closed: the record is dropped (logged, counted). Emit on window close forwards each session once, after
it closes, ordered like Kafka's time-ordered session store (end, start, key bytes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from edge.processor.ops.windowed import WindowedAggregateProcessor, log_skipped_null_key
from edge.processor.record import Record
from edge.serde.windowed import SessionWindow, Windowed


class KStreamSessionWindowAggregate(WindowedAggregateProcessor):
    _session = True

    def __init__(
        self,
        store_name: str,
        windows: Any,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        merger: Callable[[Any, Any, Any], Any],
        emit_final: bool = False,
        metadata_store: str | None = None,
    ) -> None:
        super().__init__(store_name, emit_final, metadata_store)
        self._gap = windows.inactivity_gap_ms
        self._grace = windows.grace_ms
        self._initializer = initializer
        self._aggregator = aggregator
        self._merger = merger

    def process(self, record: Record) -> None:
        key = record.key
        if key is None:
            log_skipped_null_key(self.context)
            return
        ts = record.timestamp
        if ts > self.observed_stream_time:
            self.observed_stream_time = ts
        gap = self._gap
        close_time = self.observed_stream_time - self._grace - gap
        if self._emit_final:
            # a session's end is its latest record: ts is the largest end this record may write
            self.before_writes(record, close_time, ts)
        new_window = SessionWindow(ts, ts)
        merged_window = new_window
        agg = self._initializer()
        store = self.store
        # Kafka's store clamps a negative earliest end to 0 (session ends are never negative); ours
        # would compare the negative bound's bytes, which sort after every positive time
        with store.find_sessions(key, max(0, ts - gap), ts + gap) as it:
            merged = list(it)
        for session_key, session_agg in merged:
            agg = self._merger(key, agg, session_agg)
            w = session_key.window
            if w.start < merged_window.start or w.end > merged_window.end:
                merged_window = SessionWindow(
                    min(merged_window.start, w.start), max(merged_window.end, w.end)
                )
        if merged_window.end < close_time:
            self.log_expired(key, ts, close_time, f"[{merged_window.start},{merged_window.end}]")
        else:
            if merged_window != new_window:
                for session_key, session_agg in merged:
                    store.remove(session_key)
                    self._forward_session(session_key, session_agg, None, record)
            agg = self._aggregator(key, record.value, agg)
            session_key = Windowed(key, merged_window)
            store.put(session_key, agg)
            self._forward_session(session_key, None, agg, record)
        self.maybe_forward_final_result(record, close_time)

    def _forward_session(self, session_key: Windowed, old: Any, new: Any, record: Record) -> None:
        # Kafka stamps a session's updates with its end
        self.forward_update(session_key, old, new, session_key.window.end, record.headers)

    def _emit_range(self, window_close_time: int) -> tuple[int, int] | None:
        # session ends are inclusive: a session closed at close time ends at close time - 1 at the latest
        upper = window_close_time - 1
        if upper < 0:
            return None
        lower = max(0, self.last_emit_window_close_time)
        # a session may be a single point [t, t]: fetch even when the bounds are equal
        return (lower, upper) if upper >= lower else None

    def _closed_windows(self, lower: int, upper: int) -> list[tuple[Windowed, Any, int]]:
        """Sessions whose end lies in ``[lower, upper]``, ordered by end, start, key bytes (Kafka's
        time-first session key schema), stamped with their end."""
        store = self.store
        ser = store.key_serde.serialize
        topic = store.name
        with store.all() as it:
            items = [
                (k.window.end, k.window.start, ser(topic, k.key) or b"", k, v)
                for k, v in it
                if lower <= k.window.end <= upper
            ]
        items.sort(key=lambda item: item[:3])
        return [(k, v, k.window.end) for *_, k, v in items]


__all__ = ["KStreamSessionWindowAggregate"]

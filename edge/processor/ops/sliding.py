"""Sliding-window aggregation (KIP-450, Kafka's ``KStreamSlidingWindowAggregate``), ported step by step.

A window ``[start, start + time_difference]`` (both ends inclusive) exists for each distinct set of
records of a key: every record creates its *left* window ``[t - d, t]`` and, when later records fall
within ``d`` after it, its *right* window ``[t + 1, t + 1 + d]``; records update every existing window
they fall into. Records earlier than ``d`` (which would give negative starts) share the window
``[0, d]``. The store is scanned backwards (Kafka uses the reverse iterator whenever the store offers
one, which ours always does), so updates are forwarded latest window first, as in Kafka.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from edge.errors import StreamhouseError
from edge.processor.ops.windowed import NO_TIMESTAMP, WindowedAggregateProcessor, log_skipped_null_key
from edge.processor.record import Record
from edge.serde import ValueAndTimestamp
from edge.serde.windowed import TimeWindow, Windowed

log = logging.getLogger(__name__)


class KStreamSlidingWindowAggregate(WindowedAggregateProcessor):
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
        self._diff = windows.time_difference_ms
        self._grace = windows.grace_ms
        self._initializer = initializer
        self._aggregator = aggregator

    def process(self, record: Record) -> None:
        if record.key is None or record.value is None:
            log_skipped_null_key(self.context, "null key or value")
            return
        ts = record.timestamp
        if ts > self.observed_stream_time:
            self.observed_stream_time = ts
        close_time = self.observed_stream_time - self._grace
        window_end = ts + self._diff
        if window_end < close_time:
            self.log_expired(record.key, ts, close_time, f"[{ts},{window_end}]")
            return
        if self._emit_final:
            # the right window [ts + 1, ...] is the latest start this record may write
            self.before_writes(record, close_time, ts + 1)
        if ts < self._diff:
            # Kafka returns here without checking for closed windows to emit
            self._process_early(record, close_time)
            return
        self._process_reverse(record, close_time)
        self.maybe_forward_final_result(record, close_time)

    def _process_reverse(self, record: Record, close_time: int) -> None:
        ts, diff = record.timestamp, self._diff
        key = record.key
        start_times: set[int] = set()
        left_agg: ValueAndTimestamp | None = None
        right_agg: ValueAndTimestamp | None = None
        left_created = right_created = False
        previous_ts: int | None = None
        with self.store.backward_fetch(key, key, max(0, ts - 2 * diff), ts + 1) as it:
            for windowed, vt in it:
                start = windowed.window.start
                start_times.add(start)
                end = start + diff
                max_record_ts = vt[1]
                if start == ts + 1:
                    right_created = True
                elif end > ts:
                    if right_agg is None:
                        right_agg = vt
                    self._update_window_and_forward(windowed.window, vt, record, close_time)
                elif end == ts:
                    left_created = True
                    self._update_window_and_forward(windowed.window, vt, record, close_time)
                    if max_record_ts < ts:
                        previous_ts = max_record_ts
                    else:
                        return
                elif end < ts:
                    left_agg = vt
                    previous_ts = max_record_ts
                    break
                else:  # pragma: no cover - Kafka's defensive branch
                    raise StreamhouseError(f"unexpected window with start {start} for a record at {ts}")
        self._create_windows(
            record, close_time, start_times, right_agg, left_agg, left_created, right_created, previous_ts
        )

    def _process_early(self, record: Record, close_time: int) -> None:
        """Records with ``0 <= ts < time_difference`` go into the combined window ``[0, d]``; their right
        windows are created or updated as later records arrive."""
        ts, diff = record.timestamp, self._diff
        key = record.key
        if ts < 0 or ts >= diff:  # pragma: no cover - guarded by process
            raise StreamhouseError(f"early record for sliding windows must fall between 0 <= {ts} < {diff}")
        combined: tuple[Windowed, ValueAndTimestamp] | None = None
        right_agg: ValueAndTimestamp | None = None
        right_created = False
        start_times: set[int] = set()
        previous_ts: int | None = None
        with self.store.fetch(key, key, 0, ts + 1) as it:
            for windowed, vt in it:
                start = windowed.window.start
                start_times.add(start)
                max_record_ts = vt[1]
                if start == 0:
                    combined = (windowed, vt)
                    if max_record_ts < ts:
                        previous_ts = max_record_ts
                elif start <= ts:
                    right_agg = vt
                    self._update_window_and_forward(windowed.window, vt, record, close_time)
                elif start == ts + 1:
                    right_created = True
                else:  # pragma: no cover - Kafka's defensive branch
                    raise StreamhouseError(f"unexpected window with start {start} for a record at {ts}")
        if right_agg is None and combined is not None and combined[1][1] > ts:
            right_agg = combined[1]
        if not right_created and self._right_window_not_empty(right_agg, ts):
            self._create_current_right_window(ts, right_agg, record)  # type: ignore[arg-type]
        if previous_ts is not None and previous_ts + 1 not in start_times:
            self._create_previous_right_window(previous_ts + 1, record, close_time)
        if combined is None:
            window = TimeWindow(0, diff)
            self._update_window_and_forward(
                window, ValueAndTimestamp(self._initializer(), ts), record, close_time
            )
        else:
            self._update_window_and_forward(combined[0].window, combined[1], record, close_time)

    def _create_windows(
        self,
        record: Record,
        close_time: int,
        start_times: set[int],
        right_agg: ValueAndTimestamp | None,
        left_agg: ValueAndTimestamp | None,
        left_created: bool,
        right_created: bool,
        previous_ts: int | None,
    ) -> None:
        ts, diff = record.timestamp, self._diff
        # the previous record's right window, if this record falls into it and it does not exist yet
        if previous_ts is not None:
            previous_right_start = previous_ts + 1
            if previous_right_start not in start_times and previous_right_start + diff >= ts:
                self._create_previous_right_window(previous_right_start, record, close_time)
        # this record's left window
        if not left_created:
            if previous_ts is not None and ts - diff <= previous_ts:
                vt = ValueAndTimestamp(left_agg[0], ts)  # type: ignore[index]
            else:
                vt = ValueAndTimestamp(self._initializer(), ts)
            self._update_window_and_forward(TimeWindow(ts - diff, ts), vt, record, close_time)
        # this record's right window, if later records fall into it
        if not right_created and self._right_window_not_empty(right_agg, ts):
            self._create_current_right_window(ts, right_agg, record)  # type: ignore[arg-type]

    def _create_current_right_window(self, ts: int, right_agg: ValueAndTimestamp, record: Record) -> None:
        window = TimeWindow(ts + 1, ts + 1 + self._diff)
        self.store.put(record.key, right_agg, window.start, right_agg[1])
        self.forward_update(Windowed(record.key, window), None, right_agg[0], right_agg[1], record.headers)

    def _create_previous_right_window(self, start: int, record: Record, close_time: int) -> None:
        window = TimeWindow(start, start + self._diff)
        vt = ValueAndTimestamp(self._initializer(), record.timestamp)
        self._update_window_and_forward(window, vt, record, close_time)

    @staticmethod
    def _right_window_not_empty(right_agg: ValueAndTimestamp | None, ts: int) -> bool:
        return right_agg is not None and right_agg[1] > ts

    def _update_window_and_forward(
        self, window: TimeWindow, vt: ValueAndTimestamp, record: Record, close_time: int
    ) -> None:
        start, end = window.start, window.end
        if end >= close_time:
            old_agg = None if vt is None else vt[0]
            new_agg = self._aggregator(record.key, record.value, old_agg)
            new_ts = record.timestamp if old_agg is None else max(record.timestamp, vt[1])
            self.store.put(record.key, ValueAndTimestamp(new_agg, new_ts), start, new_ts)
            self.forward_update(Windowed(record.key, window), old_agg, new_agg, new_ts, record.headers)
        else:
            self.log_expired(record.key, record.timestamp, close_time, f"[{start},{end}]")

    def _emit_range(self, window_close_time: int) -> tuple[int, int] | None:
        # sliding windows include their end: a window closed at close time ends at close time - 1
        upper = window_close_time - self._diff - 1
        if upper < 0:
            return None
        last = self.last_emit_window_close_time
        lower = 0 if last == NO_TIMESTAMP else max(0, last - self._diff)
        return lower, upper

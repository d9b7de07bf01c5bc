"""Windowed stream-stream joins, processor for processor as Kafka Streams runs them
(``KStreamJoinWindow``, ``KStreamKStreamJoin{Left,Right}Side``, the shared ``TimeTracker``).

Topology of ``left.join(right, joiner, windows)``::

    left  -> KSTREAM-WINDOWED-a (put: this-store)  -> KSTREAM-JOINTHIS-c  (fetch: other-store) --+
    right -> KSTREAM-WINDOWED-b (put: other-store) -> KSTREAM-JOINOTHER-d (fetch: this-store)  --+-> MERGE

A left record at ``t`` joins the right records of its key in ``[t - before, t + after]``; a right record
at ``t`` joins the left records in ``[t - after, t + before]``. A joined record carries the larger of the
two timestamps. Each windowed processor forwards *before* storing, so a record never meets itself.

Left/outer joins (``OUTERTHIS``/``OUTEROTHER`` on the side(s) that emit non-matches) do not emit
``joiner(v, None)`` when a record finds no partner, because a partner may still arrive within the window
(Kafka 3.1's spurious-result fix). The record waits in the shared outer store, keyed by
``(timestamp, side, key)`` so a scan visits it in time order; a later match deletes it; once stream time
passes ``timestamp + after + grace`` (its side's look-ahead) it is emitted with its own timestamp.
Both sides of one task share a :class:`TimeTracker` (stream time of both inputs, the earliest waiting
record, and a wall-clock throttle on the scans:
``emit.interval.ms.kstreams.outer.join.spurious.results.fix``).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from typing import Any, NamedTuple

from edge.errors import SerdeError
from edge.processor.api import Processor, ProcessorContext
from edge.processor.context import forward_all
from edge.processor.ops.dropped import skip_record
from edge.processor.record import Record

log = logging.getLogger(__name__)

#: Kafka's default for ``emit.interval.ms.kstreams.outer.join.spurious.results.fix`` in the runtime
DEFAULT_EMIT_INTERVAL_MS = 1000
_NO_MIN_TIME = (1 << 63) - 1

#: a joiner normalised to Kafka's ValueJoinerWithKey shape: ``(key, left_value, right_value)``
KeyJoiner = Callable[[Any, Any, Any], Any]


# -- the outer store's key and value (Kafka's TimestampedKeyAndJoinSide / LeftOrRightValue) ----------
class TimestampedKeyAndJoinSide(NamedTuple):
    """Key of the shared outer store: a non-joined record's timestamp, key and side. Serialized as
    ``<8-byte timestamp><1 byte: 1 left / 0 right><key>``, so a store scan is in timestamp order."""

    timestamp: int
    key: Any
    is_left_side: bool


class LeftOrRightValue(NamedTuple):
    """A waiting record's value: exactly one side's value is set."""

    left_value: Any
    right_value: Any


_TS = struct.Struct(">q")
_INT = struct.Struct(">i")
#: Kafka's ListSerde flag for variable-size elements (``SerializationStrategy.VARIABLE_SIZE.ordinal()``)
_VARIABLE_SIZE = b"\x01"


class TimestampedKeyAndJoinSideSerde:
    """Kafka's ``TimestampedKeyAndJoinSideSerde``, byte for byte (changelogs stay interchangeable)."""

    def __init__(self, key_serde: Any) -> None:
        self.key_serde = key_serde

    def serialize(self, topic: str, value: TimestampedKeyAndJoinSide | None) -> bytes | None:
        if value is None:
            return None
        key = self.key_serde.serialize(topic, value.key) or b""
        return _TS.pack(value.timestamp) + (b"\x01" if value.is_left_side else b"\x00") + key

    def deserialize(self, topic: str, data: bytes | None) -> TimestampedKeyAndJoinSide | None:
        if data is None:
            return None
        if len(data) < 9:
            raise SerdeError(f"an outer-join store key needs at least 9 bytes, got {len(data)}", topic=topic)
        return TimestampedKeyAndJoinSide(
            _TS.unpack_from(data)[0], self.key_serde.deserialize(topic, data[9:]), data[8] == 1
        )


class LeftOrRightValueListSerde:
    """The outer store's values: every record waiting under one ``(timestamp, side, key)``, in arrival
    order. Bytes are Kafka's ``ListSerde(ByteArray)`` of ``LeftOrRightValueSerde`` elements
    (``<flag 1><count><len><1 byte left/right><value>...``), as Kafka's ListValueStore writes them."""

    def __init__(self, left_serde: Any, right_serde: Any) -> None:
        self.left_serde = left_serde
        self.right_serde = right_serde

    def serialize(self, topic: str, values: list[LeftOrRightValue] | None) -> bytes | None:
        if values is None:
            return None
        parts = [_VARIABLE_SIZE, _INT.pack(len(values))]
        for v in values:
            if v.left_value is not None:
                raw = b"\x01" + (self.left_serde.serialize(topic, v.left_value) or b"")
            else:
                raw = b"\x00" + (self.right_serde.serialize(topic, v.right_value) or b"")
            parts.append(_INT.pack(len(raw)))
            parts.append(raw)
        return b"".join(parts)

    def deserialize(self, topic: str, data: bytes | None) -> list[LeftOrRightValue] | None:
        if data is None:
            return None
        if data[:1] != _VARIABLE_SIZE or len(data) < 5:
            raise SerdeError("not a list of outer-join values (Kafka ListSerde, variable size)", topic=topic)
        (count,) = _INT.unpack_from(data, 1)
        pos, out = 5, []
        for _ in range(count):
            (n,) = _INT.unpack_from(data, pos)
            raw = data[pos + 4 : pos + 4 + n]
            pos += 4 + n
            if raw[:1] == b"\x01":
                out.append(LeftOrRightValue(self.left_serde.deserialize(topic, raw[1:]), None))
            else:
                out.append(LeftOrRightValue(None, self.right_serde.deserialize(topic, raw[1:])))
        return out


# -- time shared by both sides of one task ------------------------------------------------------------
class TimeTracker:
    """Kafka's ``KStreamImplJoin.TimeTracker``: one per task, shared by the two join processors."""

    __slots__ = ("emit_interval_ms", "min_time", "next_time_to_emit", "stream_time")

    def __init__(self) -> None:
        self.emit_interval_ms = DEFAULT_EMIT_INTERVAL_MS
        #: the largest timestamp either side has seen (the join's own stream time)
        self.stream_time = -1
        #: a lower bound of the waiting records' timestamps (MAX: none), to skip scans that emit nothing
        self.min_time = _NO_MIN_TIME
        self.next_time_to_emit = 0


class TimeTrackers:
    """Per-task trackers, created by whichever side initialises first and dropped on close."""

    def __init__(self) -> None:
        self._by_task: dict[str, TimeTracker] = {}

    def get(self, task_id: str) -> TimeTracker:
        tracker = self._by_task.get(task_id)
        if tracker is None:
            tracker = self._by_task[task_id] = TimeTracker()
        return tracker

    def remove(self, task_id: str) -> None:
        self._by_task.pop(task_id, None)


def key_joiner(joiner: Callable[..., Any]) -> KeyJoiner:
    """``joiner(left, right)`` or Kafka's ValueJoinerWithKey ``joiner(key, left, right)`` as the latter.
    Decided once, from the signature, when the topology is built."""
    import inspect

    try:
        params = inspect.signature(joiner).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature: assume ValueJoiner
        return lambda key, left, right: joiner(left, right)
    required = [
        p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    if len(required) == 3:
        return joiner
    return lambda key, left, right: joiner(left, right)


def _task_of(context: Any) -> Any:
    return getattr(context, "_task", None)


def emit_interval_of(context: Any) -> int:
    """The configured emit interval (``None``: Kafka's 1000 ms)."""
    task = _task_of(context)
    config = getattr(task, "config", None)
    value = getattr(config, "emit_interval_ms_kstreams_outer_join_spurious_results_fix", None)
    return DEFAULT_EMIT_INTERVAL_MS if value is None else int(value)


def record_dropped(context: Any, reason: str) -> None:
    """Log a skipped record with its position and count it in the task's dropped-records counter (the
    log summarised per reason, see :mod:`edge.processor.record_warnings`)."""
    skip_record(context, reason, logger=log)


# -- processors ------------------------------------------------------------------------------------
class KStreamJoinWindow(Processor):
    """``KSTREAM-WINDOWED-``: forward the record to this side's join processor, then remember it in this
    side's window store (every record is kept: the store retains duplicates)."""

    def __init__(self, store_name: str) -> None:
        self._store_name = store_name

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._store = context.get_state_store(self._store_name)
        self._forward = forward_all(context)

    def process(self, record: Record) -> None:
        self._forward(record)
        if record.key is not None:
            self._store.put(record.key, record.value, record.timestamp)


class KStreamKStreamJoinSide(Processor):
    """One side of the join (Kafka's ``KStreamKStreamJoinProcessor``). ``is_left``: this processor gets
    the left stream's records. ``outer``: this side emits ``joiner`` with None for the other side when a
    record finds no partner. ``join_before``/``join_after``: the other side's range around a record of
    this side (left: ``before``/``after``; right: mirrored). ``outer_store_name``: the shared store of
    waiting records (left and outer joins)."""

    def __init__(
        self,
        other_store_name: str,
        *,
        is_left: bool,
        outer: bool,
        windows_before_ms: int,
        windows_after_ms: int,
        grace_ms: int,
        joiner: KeyJoiner,
        outer_store_name: str | None,
        trackers: TimeTrackers,
    ) -> None:
        self._other_store_name = other_store_name
        self._is_left = is_left
        self._outer = outer
        self._windows_before = windows_before_ms
        self._windows_after = windows_after_ms
        self._join_before = windows_before_ms if is_left else windows_after_ms
        self._join_after = windows_after_ms if is_left else windows_before_ms
        self._grace = grace_ms
        self._joiner = joiner
        self._outer_store_name = outer_store_name
        self._trackers = trackers

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._forward = forward_all(context)
        self._other = context.get_state_store(self._other_store_name)
        fetch_list = getattr(self._other, "fetch_list", None)
        self._fetch_other = fetch_list if fetch_list is not None else self._fetch_other_iterated
        self._tracker = self._trackers.get(context.task_id)
        self._outer_store = None
        if self._outer_store_name is not None:
            self._outer_store = context.get_state_store(self._outer_store_name)
            self._tracker.emit_interval_ms = emit_interval_of(context)

    def close(self) -> None:
        self._trackers.remove(self.context.task_id)

    def _fetch_other_iterated(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, Any]]:
        with self._other.fetch(key, time_from, time_to) as it:
            return list(it)

    def _join(self, key: Any, this: Any, other: Any) -> Any:
        return self._joiner(key, this, other) if self._is_left else self._joiner(key, other, this)

    def process(self, record: Record) -> None:
        ts = record.timestamp
        tracker = self._tracker
        if ts > tracker.stream_time:
            tracker.stream_time = ts
        key, value = record.key, record.value
        if key is None or value is None:
            if self._outer and key is None and value is not None:
                # Kafka 3.7+ (KIP-962): a left/outer join's record without a key cannot match anything,
                # so its non-joined result is emitted at once
                self._forward(record.with_value(self._join(None, value, None)))
                return
            record_dropped(self.context, "null key or value")
            return
        store = self._outer_store
        if store is not None and ts == tracker.stream_time:
            self._emit_non_joined(store, record)
        time_from = max(0, ts - self._join_before)
        time_to = max(0, ts + self._join_after)
        matches = self._fetch_other(key, time_from, time_to)
        if matches:
            forward, headers = self._forward, record.headers
            for other_ts, other_value in matches:
                if store is not None:
                    # the partner waiting in the outer store (if any) is joined now: forget it
                    other_key = TimestampedKeyAndJoinSide(other_ts, key, not self._is_left)
                    if store.get(other_key) is not None:
                        store.put(other_key, None)
                forward(Record(key, self._join(key, value, other_value), max(ts, other_ts), headers))
            return
        if not self._outer:
            return
        if store is None or time_to < tracker.stream_time:
            # its window is already closed (an out-of-order record): no partner can come any more
            self._forward(record.with_value(self._join(key, value, None)))
            return
        if ts < tracker.min_time:
            tracker.min_time = ts
        this_key = TimestampedKeyAndJoinSide(ts, key, self._is_left)
        this_value = LeftOrRightValue(value, None) if self._is_left else LeftOrRightValue(None, value)
        waiting = store.get(this_key)
        store.put(this_key, [this_value] if waiting is None else [*waiting, this_value])

    def _window_open(self, stored: TimestampedKeyAndJoinSide) -> bool:
        tracker = self._tracker
        look_back = self._windows_after if stored.is_left_side else self._windows_before
        return tracker.min_time + look_back + self._grace >= tracker.stream_time

    def _emit_non_joined(self, store: Any, record: Record) -> None:
        """Emit, in timestamp order, the waiting records whose window has closed, and delete them."""
        tracker = self._tracker
        if tracker.min_time + self._join_after + self._grace >= tracker.stream_time:
            return  # nothing waiting can have closed yet
        now = self.context.wall_clock_time
        if now < tracker.next_time_to_emit:
            return  # throttled (a wall-clock interval: the scan is a performance matter, not semantics)
        tracker.next_time_to_emit = now + tracker.emit_interval_ms
        tracker.min_time = _NO_MIN_TIME
        emitted: list[TimestampedKeyAndJoinSide] = []
        left_open = right_open = False
        forward, headers = self._forward, record.headers
        with store.all() as it:
            for stored, values in it:
                for lr in values:
                    tracker.min_time = stored.timestamp
                    if left_open and right_open:
                        break
                    if self._window_open(stored):
                        if stored.is_left_side:
                            left_open = True
                        else:
                            right_open = True
                        continue
                    joined = self._joiner(stored.key, lr.left_value, lr.right_value)
                    forward(Record(stored.key, joined, stored.timestamp, headers))
                    if not emitted or emitted[-1] != stored:
                        emitted.append(stored)
                if left_open and right_open:
                    break
        for stored in emitted:
            store.put(stored, None)

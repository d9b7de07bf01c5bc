"""Window specifications (Kafka's TimeWindows, SlidingWindows, SessionWindows, JoinWindows) and
EmitStrategy. Pure values: which windows a timestamp falls into, how long a window stays open (grace),
and how long its store keeps it (retention). Durations are int milliseconds or ``timedelta``
(:mod:`edge.time`).

Kafka's rules, kept exactly:

* a window ``[start, end)`` closes when stream time reaches ``end + grace``; a record whose window has
  closed is late and dropped;
* hopping windows start at multiples of ``advance`` (epoch-aligned), so a record falls into
  ``size / advance`` windows; tumbling windows are hopping windows with ``advance == size``;
* a window store's default retention is ``size + grace`` (sessions: ``gap + grace``; joins:
  ``before + after + grace``), and a user retention shorter than that is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edge.errors import TopologyError
from edge.serde.windowed import TimeWindow
from edge.time import Duration, to_millis


def _non_negative(value: Any, what: str) -> int:
    ms = to_millis(value, what)
    if ms < 0:
        raise TopologyError(f"{what} must not be negative, got {ms} ms")
    return ms


def _positive(value: Any, what: str) -> int:
    ms = to_millis(value, what)
    if ms <= 0:
        raise TopologyError(f"{what} must be larger than zero, got {ms} ms")
    return ms


@dataclass(frozen=True, slots=True)
class TimeWindows:
    """Tumbling (``advance == size``) or hopping windows of a fixed size, aligned to the epoch."""

    size_ms: int
    advance_ms: int
    grace_ms: int

    @classmethod
    def of_size_with_no_grace(cls, size: Duration) -> TimeWindows:
        size_ms = _positive(size, "window size")
        return cls(size_ms, size_ms, 0)

    @classmethod
    def of_size_and_grace(cls, size: Duration, grace: Duration) -> TimeWindows:
        size_ms = _positive(size, "window size")
        return cls(size_ms, size_ms, _non_negative(grace, "window grace"))

    def advance_by(self, advance: Duration) -> TimeWindows:
        advance_ms = to_millis(advance, "window advance")
        if advance_ms <= 0 or advance_ms > self.size_ms:
            raise TopologyError(
                f"window advance must lie within (0, {self.size_ms}] ms (the window size), got {advance_ms}"
            )
        return TimeWindows(self.size_ms, advance_ms, self.grace_ms)

    def size(self) -> int:
        return self.size_ms

    def grace_period_ms(self) -> int:
        return self.grace_ms

    def windows_for(self, timestamp: int) -> dict[int, TimeWindow]:
        """Every window containing ``timestamp``, by start, in start order (Kafka's ``windowsFor``)."""
        size, advance = self.size_ms, self.advance_ms
        start = (max(0, timestamp - size + advance) // advance) * advance
        windows: dict[int, TimeWindow] = {}
        while start <= timestamp:
            windows[start] = TimeWindow(start, start + size)
            start += advance
        return windows


@dataclass(frozen=True, slots=True)
class SlidingWindows:
    """Windows of ``time_difference`` that slide with the records (KIP-450): a record at ``t`` belongs
    to ``[t - time_difference, t]``; a window exists for each distinct set of records."""

    time_difference_ms: int
    grace_ms: int

    @classmethod
    def of_time_difference_with_no_grace(cls, time_difference: Duration) -> SlidingWindows:
        return cls(_positive(time_difference, "sliding window time difference"), 0)

    @classmethod
    def of_time_difference_and_grace(cls, time_difference: Duration, grace: Duration) -> SlidingWindows:
        return cls(
            _positive(time_difference, "sliding window time difference"),
            _non_negative(grace, "window grace"),
        )

    def size(self) -> int:
        return self.time_difference_ms

    def grace_period_ms(self) -> int:
        return self.grace_ms


@dataclass(frozen=True, slots=True)
class SessionWindows:
    """Sessions: records of a key closer than the inactivity gap (inclusive) share a session."""

    inactivity_gap_ms: int
    grace_ms: int

    @classmethod
    def of_inactivity_gap_with_no_grace(cls, inactivity_gap: Duration) -> SessionWindows:
        return cls(_positive(inactivity_gap, "session inactivity gap"), 0)

    @classmethod
    def of_inactivity_gap_and_grace(cls, inactivity_gap: Duration, grace: Duration) -> SessionWindows:
        return cls(_positive(inactivity_gap, "session inactivity gap"), _non_negative(grace, "window grace"))

    def inactivity_gap(self) -> int:
        return self.inactivity_gap_ms

    def grace_period_ms(self) -> int:
        return self.grace_ms


@dataclass(frozen=True, slots=True)
class JoinWindows:
    """Stream-stream join windows: a left record at ``t`` joins right records in
    ``[t - before, t + after]``. Left/outer non-matches are emitted once ``t + after + grace`` has passed
    (Kafka 3.1+, no spurious results)."""

    before_ms: int
    after_ms: int
    grace_ms: int

    @classmethod
    def of_time_difference_with_no_grace(cls, time_difference: Duration) -> JoinWindows:
        diff = _non_negative(time_difference, "join window time difference")
        return cls(diff, diff, 0)

    @classmethod
    def of_time_difference_and_grace(cls, time_difference: Duration, grace: Duration) -> JoinWindows:
        diff = _non_negative(time_difference, "join window time difference")
        return cls(diff, diff, _non_negative(grace, "window grace"))

    def before(self, time_difference: Duration) -> JoinWindows:
        before = to_millis(time_difference, "join window before")
        return self._checked(before, self.after_ms)

    def after(self, time_difference: Duration) -> JoinWindows:
        after = to_millis(time_difference, "join window after")
        return self._checked(self.before_ms, after)

    def _checked(self, before: int, after: int) -> JoinWindows:
        if before + after < 0:
            raise TopologyError(
                f"join window end must not be before its start: before={before} ms, after={after} ms"
            )
        return JoinWindows(before, after, self.grace_ms)

    def size(self) -> int:
        return self.before_ms + self.after_ms

    def grace_period_ms(self) -> int:
        return self.grace_ms


@dataclass(frozen=True, slots=True)
class EmitStrategy:
    """When a windowed aggregation emits: on every update (default) or once, when the window closes."""

    on_close: bool

    @classmethod
    def on_window_update(cls) -> EmitStrategy:
        return cls(False)

    @classmethod
    def on_window_close(cls) -> EmitStrategy:
        return cls(True)

    def __str__(self) -> str:
        return "ON_WINDOW_CLOSE" if self.on_close else "ON_WINDOW_UPDATE"

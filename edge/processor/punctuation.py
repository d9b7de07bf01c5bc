"""Scheduled punctuators (Kafka's PunctuationQueue): stream-time ones fire as records advance stream
time, wall-clock ones when the task is told the clock moved. Missed intervals fire once, not per interval.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from edge.errors import TopologyError

if TYPE_CHECKING:
    from edge.processor.api import Punctuator
    from edge.processor.context import NodeContext


class PunctuationSchedule:
    __slots__ = ("cancelled", "interval", "next_time", "node", "punctuator")

    def __init__(self, node: NodeContext, interval: int, punctuator: Punctuator, start: int) -> None:
        if interval <= 0:
            raise TopologyError(f"punctuation interval must be positive, got {interval} ms")
        self.node = node
        self.interval = interval
        self.punctuator = punctuator
        self.next_time = start
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class PunctuationQueue:
    __slots__ = ("_schedules",)

    def __init__(self) -> None:
        self._schedules: list[PunctuationSchedule] = []

    def add(self, schedule: PunctuationSchedule) -> PunctuationSchedule:
        self._schedules.append(schedule)
        return schedule

    def __bool__(self) -> bool:
        return bool(self._schedules)

    def due(self, now: int) -> list[PunctuationSchedule]:
        """Schedules due at ``now``, each advanced past ``now``; cancelled ones are dropped."""
        self._schedules = [s for s in self._schedules if not s.cancelled]
        fired = []
        for s in self._schedules:
            if s.next_time <= now:
                fired.append(s)
                nxt = s.next_time + s.interval
                if nxt <= now:  # skip missed intervals, stay aligned to the schedule
                    nxt = now + s.interval - ((now - s.next_time) % s.interval)
                s.next_time = nxt
        return fired

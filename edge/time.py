"""Durations as the edge API takes them: int milliseconds or a ``timedelta``, converted exactly.

Window sizes, grace periods, retentions, suppression limits, windowed-serde sizes and versioned-store
history all take a duration the same way, so they share one parser. It sits at the bottom of
``edge/`` (it needs only :mod:`edge.errors`) so serdes and stores can use it without importing the
DSL. A ``timedelta`` is divided by one millisecond in integer arithmetic (a round trip through float
seconds would truncate large or sub-millisecond values), and a fraction of a millisecond is an error
rather than silently dropped.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from edge.errors import TopologyError

Duration = int | timedelta


def to_millis(value: Any, what: str) -> int:
    """An int ms or a ``timedelta`` as int ms; anything else is a user error naming the parameter."""
    if isinstance(value, bool):
        raise TopologyError(f"{what} must be milliseconds (int) or a timedelta, got {value!r}")
    if isinstance(value, timedelta):
        ms = value // timedelta(milliseconds=1)
        if timedelta(milliseconds=ms) != value:
            raise TopologyError(f"{what} must be a whole number of milliseconds, got {value!r}")
        return ms
    if isinstance(value, int):
        return value
    raise TopologyError(f"{what} must be milliseconds (int) or a timedelta, got {value!r}")

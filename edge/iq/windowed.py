"""Reading window and session stores for interactive queries.

A window store answers a key with the windows it holds (start in ``[from, to]``), a session store with
the sessions that end at or after ``from`` and start at or before ``to`` -- Kafka's ``fetch`` and
``findSessions`` -- so one URL shape (``?from=&to=``) serves both.
"""

from __future__ import annotations

import struct
from typing import Any

from edge.serde.windowed import MAX_TIME, Windowed
from edge.state.suppression_buffer import SuppressionBuffer
from edge.state.window import MeteredSessionStore, MeteredWindowStore

TIME_PARAMS = ("from", "to")
SCAN_TIME_PARAMS = ("time_from", "time_to")

_START = struct.Struct(">q")


class NotQueryableError(Exception):
    """A store that holds no queryable table (a suppression buffer)."""


def store_kind(store: Any) -> str:
    if isinstance(store, SuppressionBuffer):
        raise NotQueryableError(
            f"store {store.name!r} is the buffer of KTable.suppress(): it holds records waiting to be "
            f"emitted, not a table; query the store of the table upstream of suppress()"
        )
    if isinstance(store, MeteredWindowStore):
        return "window"
    if isinstance(store, MeteredSessionStore):
        return "session"
    if getattr(store, "is_versioned", False):
        return "versioned"  # edge.state.versioned: single keys, optionally ?as_of=
    return "key_value"


def fetch_key(store: Any, key: Any, time_from: int | None, time_to: int | None) -> list[tuple[Windowed, Any]]:
    """Every window/session of ``key`` within the bounds (both optional), oldest first."""
    lo = 0 if time_from is None else time_from
    hi = MAX_TIME if time_to is None else time_to
    if isinstance(store, MeteredWindowStore):
        with store.fetch(key, key, lo, hi) as it:
            return list(it)
    with store.find_sessions(key, lo, hi) as it:
        return list(it)


def scan(
    store: Any, lo: Any, hi: Any, time_from: int | None, time_to: int | None, whole: bool
) -> list[tuple[Windowed, Any]]:
    """Windows of the keys in ``[lo, hi]`` (``whole``: every key) within the time bounds."""
    t_lo = 0 if time_from is None else time_from
    t_hi = MAX_TIME if time_to is None else time_to
    if isinstance(store, MeteredWindowStore):
        it = store.fetch_all(t_lo, t_hi) if whole else store.fetch(lo, hi, t_lo, t_hi)
    else:
        it = store.find_sessions(None if whole else lo, None if whole else hi, t_lo, t_hi)
    with it:
        return list(it)


def sort_key(key_serde: Any, windowed: Windowed) -> bytes:
    """Key bytes then window start: the order a window store iterates in."""
    return (key_serde.serialize("", windowed.key) or b"") + _START.pack(windowed.window.start)

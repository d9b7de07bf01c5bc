"""Lifecycle of a StreamsApp instance (Kafka's ``KafkaStreams.State``) and its state listener.

::

    CREATED -> REBALANCING <-> RUNNING -> PENDING_SHUTDOWN -> NOT_RUNNING
        \\            \\            \\-> PENDING_ERROR -> ERROR

Transitions are validated so a bug shows up as an error rather than an impossible state; listeners are
called synchronously on the transitioning thread, outside the lock.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable

from edge.errors import StreamhouseError

log = logging.getLogger(__name__)


class State(enum.Enum):
    CREATED = "CREATED"
    REBALANCING = "REBALANCING"
    RUNNING = "RUNNING"
    PENDING_SHUTDOWN = "PENDING_SHUTDOWN"
    NOT_RUNNING = "NOT_RUNNING"
    PENDING_ERROR = "PENDING_ERROR"
    ERROR = "ERROR"

    @property
    def is_running_or_rebalancing(self) -> bool:
        return self in (State.RUNNING, State.REBALANCING)

    def __call__(self) -> State:
        """The state itself: ``app.state`` is a property, and this makes ``app.state()`` (Java's
        ``KafkaStreams.state()``) answer the same, so code ported from Java runs unchanged."""
        return self


_VALID: dict[State, set[State]] = {
    State.CREATED: {State.REBALANCING, State.PENDING_SHUTDOWN, State.PENDING_ERROR},
    State.REBALANCING: {State.RUNNING, State.REBALANCING, State.PENDING_SHUTDOWN, State.PENDING_ERROR},
    State.RUNNING: {State.REBALANCING, State.PENDING_SHUTDOWN, State.PENDING_ERROR},
    State.PENDING_SHUTDOWN: {State.NOT_RUNNING},
    State.NOT_RUNNING: set(),
    State.PENDING_ERROR: {State.ERROR},
    State.ERROR: set(),
}

StateListener = Callable[[State, State], None]


class IllegalStateTransition(StreamhouseError):
    pass


class Lifecycle:
    def __init__(self) -> None:
        self._state = State.CREATED
        self._lock = threading.Condition()
        self._listeners: list[StateListener] = []

    @property
    def state(self) -> State:
        return self._state

    def add_listener(self, listener: StateListener) -> None:
        self._listeners.append(listener)

    def transition(self, new: State, *, strict: bool = True) -> bool:
        """Move to ``new``; returns False (or raises if ``strict``) when the transition is not allowed."""
        with self._lock:
            old = self._state
            if new == old and new is not State.REBALANCING:
                return False
            if new not in _VALID[old]:
                if strict:
                    raise IllegalStateTransition(f"illegal state transition {old.value} -> {new.value}")
                return False
            self._state = new
            self._lock.notify_all()
        if new != old:
            log.info("state %s -> %s", old.value, new.value)
            for listener in list(self._listeners):
                try:
                    listener(new, old)
                except Exception:
                    log.exception("state listener failed on %s -> %s", old.value, new.value)
        return True

    def wait_for(self, states: set[State], timeout: float | None = None) -> bool:
        with self._lock:
            return self._lock.wait_for(lambda: self._state in states, timeout)

"""Read views of window and session stores for tests (Kafka's ReadOnlyWindowStore/SessionStore facades).

``get_window_store`` unwraps ``ValueAndTimestamp`` values as Kafka's TopologyTestDriver does;
``get_timestamped_window_store`` keeps them. Results are lists: a test asserts on them directly.
"""

from __future__ import annotations

from typing import Any

from edge.serde import ValueAndTimestamp
from edge.serde.windowed import Windowed


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, ValueAndTimestamp) else value


def _keep(value: Any) -> Any:
    return value


class WindowStoreFacade:
    def __init__(self, store: Any, timestamped: bool) -> None:
        self.store = store
        self._v = _keep if timestamped else _plain

    def fetch(self, key: Any, *times: int) -> Any:
        """``fetch(key, start)`` -> value; ``fetch(key, t_from, t_to)`` -> ``[(start, value)]``;
        ``fetch(k_from, k_to, t_from, t_to)`` -> ``[(Windowed, value)]``."""
        result = self.store.fetch(key, *times)
        if len(times) == 1:
            return self._v(result)
        with result as it:
            return [(k, self._v(v)) for k, v in it]

    def backward_fetch(self, key: Any, *times: int) -> list[tuple[Any, Any]]:
        with self.store.backward_fetch(key, *times) as it:
            return [(k, self._v(v)) for k, v in it]

    def fetch_all(self, time_from: int, time_to: int) -> list[tuple[Windowed, Any]]:
        with self.store.fetch_all(time_from, time_to) as it:
            return [(k, self._v(v)) for k, v in it]

    def all(self) -> list[tuple[Windowed, Any]]:
        with self.store.all() as it:
            return [(k, self._v(v)) for k, v in it]


class SessionStoreFacade:
    def __init__(self, store: Any) -> None:
        self.store = store

    def fetch(self, key: Any, key_to: Any = ..., /) -> list[tuple[Windowed, Any]]:
        with self.store.fetch(key, key_to) as it:
            return list(it)

    def find_sessions(self, key: Any, *args: int) -> list[tuple[Windowed, Any]]:
        with self.store.find_sessions(key, *args) as it:
            return list(it)

    def fetch_session(self, key: Any, session_start: int, session_end: int) -> Any:
        return self.store.fetch_session(key, session_start, session_end)

    def all(self) -> list[tuple[Windowed, Any]]:
        with self.store.all() as it:
            return list(it)

"""The stores an instance hosts, as interactive queries and metrics see them (Kafka Streams'
``QueryableStoreProvider``).

Readers outside the runtime (the query server, the metrics renderer, the housekeeping that sizes stores)
ask :class:`StoreProvider` for a store by name and partition instead of walking the runtime's task
registry: which task holds a store, and how tasks are kept, stays the runtime's business. Stores are
not thread-safe: call these on the stream thread (``StreamsApp.run_on_stream_thread``), as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from edge.runtime.global_state import GlobalState
from edge.runtime.tasks import TaskKey, TaskRegistry


class StoreProvider(Protocol):
    """Where the stores of this instance's active tasks and its global stores are found."""

    def active_store(self, name: str, subtopology: int, partition: int) -> Any | None:
        """Store ``name`` of the active task (``subtopology``, ``partition``); None when that task is not
        hosted here (KeyError when the task has no such store: the catalog and the topology disagree)."""

    def active_stores(self, name: str, subtopology: int) -> list[Any]:
        """Store ``name`` of every local active task of ``subtopology``, in partition order."""

    def global_store(self, name: str) -> Any | None:
        """Global store ``name``; None until the global state is loaded (or when there is none)."""

    def store_sizes(self) -> dict[tuple[str, str], int]:
        """Approximate entries per (store, task id) of the active tasks and the global stores
        (``"global"``); stores that cannot tell are left out."""


class TaskStoreProvider:
    """:class:`StoreProvider` over the runtime's :class:`TaskRegistry` and :class:`GlobalState`, plus the
    task-level counters the metrics report."""

    def __init__(self, registry: TaskRegistry, global_state: Callable[[], GlobalState | None]) -> None:
        self._registry = registry
        #: the global state is bootstrapped on the stream thread, after the provider is handed out
        self._global_state = global_state

    def active_store(self, name: str, subtopology: int, partition: int) -> Any | None:
        active = self._registry.tasks.get((subtopology, partition))
        return None if active is None else active.task.stores[name]

    def active_stores(self, name: str, subtopology: int) -> list[Any]:
        return [
            active.task.stores[name]
            for (st, _p), active in sorted(self._registry.tasks.items())
            if st == subtopology and name in active.task.stores
        ]

    def global_store(self, name: str) -> Any | None:
        gs = self._global_state()
        return None if gs is None else gs.stores.get(name)

    def store_sizes(self) -> dict[tuple[str, str], int]:
        sizes: dict[tuple[str, str], int] = {}
        for active in self._registry.tasks.values():
            for name, store in active.task.stores.items():
                try:
                    sizes[(name, active.id)] = store.approximate_num_entries()
                except Exception:
                    continue
        gs = self._global_state()
        if gs is not None:
            for name, store in gs.stores.items():
                try:
                    sizes[(name, "global")] = store.approximate_num_entries()
                except Exception:
                    continue
        return sizes

    # -- task-level figures for /metrics (read from the HTTP thread: a snapshot of the dict first) -----
    def dropped_records(self) -> list[tuple[TaskKey, int]]:
        """Records dropped by each active task (Kafka's task-level dropped-records), by task."""
        return [
            (key, active.task.dropped_records) for key, active in sorted(list(self._registry.tasks.items()))
        ]

    def active_task_count(self) -> int:
        return len(self._registry)

"""The context each processor node gets: forwarding to its children, its stores, its task's clocks.

One instance per node per task, built once at task initialisation with direct references to the
children's ``process`` methods, so ``forward`` is a loop over bound methods and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from edge.errors import TopologyError
from edge.processor.api import Cancellable, PunctuationType, Punctuator, StreamTimeListener
from edge.processor.record import Headers, Record

if TYPE_CHECKING:
    from edge.processor.task import StreamTask


class NodeContext:
    __slots__ = ("_children", "_named", "_stores", "_task", "forward_all", "node_name")

    def __init__(
        self,
        task: StreamTask,
        node_name: str,
        children: dict[str, Callable[[Record], None]],
        stores: list[str],
    ) -> None:
        self._task = task
        self.node_name = node_name
        self._named = children
        self._children = tuple(children.values())
        #: ``forward_all(record)``: the only child's ``process`` itself when there is one child (one call
        #: less per hop), a loop over all children otherwise. DSL operators bind it in ``init``.
        self.forward_all: Callable[[Record], None] = (
            self._children[0] if len(self._children) == 1 else self._forward_many
        )
        self._stores = frozenset(stores)

    @property
    def has_children(self) -> bool:
        """Whether forwarding reaches any processor (a table node without children need not build the
        records it would forward)."""
        return bool(self._children)

    def _forward_many(self, record: Record) -> None:
        for child in self._children:
            child(record)

    def forward(self, record: Record, to: str | None = None) -> None:
        if to is None:
            for child in self._children:
                child(record)
            return
        child = self._named.get(to)
        if child is None:
            raise TopologyError(
                f"processor {self.node_name!r} forwarded to {to!r}, which is not one of its children "
                f"{sorted(self._named)}"
            )
        child(record)

    def get_state_store(self, name: str) -> Any:
        task = self._task
        if name in self._stores:
            store = task.stores.get(name)
            if store is None:
                store = task.global_stores.get(name)
            if store is not None:
                return store
        elif name in task.global_stores:
            return task.global_stores[name]
        raise TopologyError(
            f"processor {self.node_name!r} is not connected to state store {name!r}; pass the store name "
            f"to process()/add_processor(stores=...) (connected: {sorted(self._stores)})"
        )

    def schedule(self, interval_ms: int, kind: PunctuationType, punctuator: Punctuator) -> Cancellable:
        return self._task.schedule(self, interval_ms, kind, punctuator)

    def register_stream_time_listener(self, listener: StreamTimeListener) -> Cancellable:
        """See :meth:`edge.processor.api.ProcessorContext.register_stream_time_listener`."""
        return self._task.register_stream_time_listener(self, listener)

    def commit(self) -> None:
        self._task.commit_requested = True

    @property
    def record_collector(self) -> Any:
        return self._task.collector

    @property
    def application_id(self) -> str:
        return self._task.application_id

    @property
    def task_id(self) -> str:
        return self._task.id

    @property
    def partition(self) -> int:
        return self._task.meta.partition

    @property
    def topic(self) -> str | None:
        return self._task.meta.topic

    @property
    def offset(self) -> int:
        return self._task.meta.offset

    @property
    def timestamp(self) -> int:
        return self._task.meta.timestamp

    @property
    def headers(self) -> Headers | None:
        return self._task.meta.headers

    @property
    def stream_time(self) -> int:
        return self._task.stream_time

    @property
    def wall_clock_time(self) -> int:
        return self._task.wall_clock_time


__all__ = ["NodeContext", "forward_all"]


def forward_all(context: Any) -> Callable[[Record], None]:
    """The fastest "forward to every child" the context offers (works with any ProcessorContext)."""
    return getattr(context, "forward_all", None) or context.forward

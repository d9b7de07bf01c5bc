"""The Processor API: what a custom processor implements and what it may ask of its context.

A ``Processor`` is created per task (one instance per partition) from a supplier, so it may keep
per-partition fields. The DSL's own operators are processors too: there is one code path.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from edge.processor.record import Headers, Record


class PunctuationType(enum.Enum):
    """Stream time advances with record timestamps; wall-clock time with the system (or driver) clock."""

    STREAM_TIME = "stream_time"
    WALL_CLOCK_TIME = "wall_clock_time"


class Cancellable(Protocol):
    def cancel(self) -> None: ...


Punctuator = Callable[[int], None]
#: ``listener(stream_time)``: see :meth:`ProcessorContext.register_stream_time_listener`
StreamTimeListener = Callable[[int], None]


class ProcessorContext(Protocol):
    """What a processor sees of its task. Methods are cheap: safe on the per-record path."""

    @property
    def application_id(self) -> str: ...

    @property
    def task_id(self) -> str: ...

    @property
    def partition(self) -> int: ...

    @property
    def topic(self) -> str | None: ...

    @property
    def offset(self) -> int: ...

    @property
    def timestamp(self) -> int: ...

    @property
    def headers(self) -> Headers | None: ...

    @property
    def stream_time(self) -> int: ...

    @property
    def wall_clock_time(self) -> int: ...

    @property
    def node_name(self) -> str: ...

    def forward(self, record: Record, to: str | None = None) -> None:
        """Send ``record`` to every child, or only to the child named ``to``."""

    def get_state_store(self, name: str) -> Any:
        """A store connected to this processor (or a global store)."""

    def schedule(self, interval_ms: int, kind: PunctuationType, punctuator: Punctuator) -> Cancellable:
        """Call ``punctuator(timestamp)`` every ``interval_ms`` of stream or wall-clock time."""

    def register_stream_time_listener(self, listener: StreamTimeListener) -> Cancellable:
        """Call ``listener(stream_time)`` whenever the task's stream time advances *without* a record.

        Stream time (the largest record timestamp the task has processed) normally moves only when a
        record arrives, and a processor sees that record in ``process`` (``context.stream_time`` is
        already updated then). It can also move with no record: the ``idle.stream.time.advance.ms``
        extension (a quiet task's stream time follows the wall clock) and the TopologyTestDriver's
        ``advance_wall_clock_time`` under that setting. Processors that emit when stream time passes a
        boundary -- windowed aggregations with emit-final, suppress, stream-stream join outer results --
        register here (in ``init``) to close windows then too. The listener runs on the task's thread
        like ``process``, may ``forward`` (records get the listener's timestamp as context timestamp),
        and is called before the stream-time punctuators due at that time. Errors go to the processing
        exception handler. ``cancel()`` the returned handle to unregister. In the runtime an idle task's
        stream time advances at most once per poll-loop iteration (every ``poll.ms``), so keep the
        listener cheap when there is nothing to close.
        """

    def commit(self) -> None:
        """Ask the runtime to commit soon (after this record)."""


class Processor:
    """Base class for custom processors; override ``process`` (and ``init``/``close`` when needed)."""

    context: ProcessorContext

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


ProcessorSupplier = Callable[[], Processor]

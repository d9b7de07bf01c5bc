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

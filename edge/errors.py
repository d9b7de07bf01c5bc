"""User-facing errors of the edge library.

Every error a user can cause (bad topology, undecodable record, broken state directory) raises a
subclass of :class:`StreamhouseError` whose message says what to fix and which carries the context
(topic/partition/offset, store/task) as attributes so handlers can log or route it without parsing text.
"""

from __future__ import annotations


class StreamhouseError(Exception):
    """Base class of all user-facing edge errors."""


class TopologyError(StreamhouseError):
    """The topology (DSL or Processor API graph) is invalid: unknown store, duplicate name, cycle, ..."""


class SerdeError(StreamhouseError):
    """A record could not be (de)serialized.

    The serde itself only knows the topic; the runtime re-raises / enriches with partition and offset via
    :meth:`with_position` so the deserialization exception handler can report the exact record.
    """

    def __init__(
        self,
        message: str,
        *,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.reason = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.topic is not None:
            where.append(f"topic={self.topic!r}")
        if self.partition is not None:
            where.append(f"partition={self.partition}")
        if self.offset is not None:
            where.append(f"offset={self.offset}")
        return f"{self.reason} ({', '.join(where)})" if where else self.reason

    def with_position(
        self, *, topic: str | None = None, partition: int | None = None, offset: int | None = None
    ) -> SerdeError:
        """Return a copy that also names where the record came from (used by the runtime)."""
        err = SerdeError(
            self.reason,
            topic=topic if topic is not None else self.topic,
            partition=partition if partition is not None else self.partition,
            offset=offset if offset is not None else self.offset,
        )
        err.__cause__ = self.__cause__ or self
        return err


class StateStoreError(StreamhouseError):
    """A state store failed: cannot open/lock its directory, corrupt checkpoint, used after close, ...

    ``corrupt`` is True when the on-disk state is unusable and the runtime should wipe the store (and its
    checkpoint) and rebuild it from the changelog.
    """

    def __init__(
        self,
        message: str,
        *,
        store: str | None = None,
        task_id: str | None = None,
        partition: int | None = None,
        path: str | None = None,
        corrupt: bool = False,
    ) -> None:
        self.store = store
        self.task_id = task_id
        self.partition = partition
        self.path = path
        self.corrupt = corrupt
        self.reason = message
        where = []
        if store is not None:
            where.append(f"store={store!r}")
        if task_id is not None:
            where.append(f"task={task_id}")
        if partition is not None:
            where.append(f"partition={partition}")
        if path is not None:
            where.append(f"path={path}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)

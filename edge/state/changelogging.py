"""Change-logging layer: every write that reaches it is also sent to the store's changelog topic.

Sits below the cache, so only collapsed (flushed/evicted) updates are logged. Records go to the
task's partition of ``StoreContext.changelog_topic`` with the write's record timestamp; deletes are
logged as tombstones (``value=None``). With ``changelog_topic=None`` the layer is a pass-through.
"""

from __future__ import annotations

from collections.abc import Iterable

from edge.errors import StateStoreError
from edge.state.api import StoreContext


class ChangeLoggingKeyValueStore:
    def __init__(self, wrapped) -> None:
        self.wrapped = wrapped
        self.name = wrapped.name
        self.persistent = wrapped.persistent
        self._topic: str | None = None
        self._partition = 0
        self._send = None

    def init(self, context: StoreContext) -> None:
        inner = self.wrapped
        inner.init(context)
        topic = context.changelog_topic
        self._bind_reads()
        if topic is None:
            # logging disabled for this instance: become a transparent pass-through
            self.put = inner.put  # type: ignore[method-assign]
            self.put_all = inner.put_all  # type: ignore[method-assign]
            self.put_if_absent = inner.put_if_absent  # type: ignore[method-assign]
            self.delete = inner.delete  # type: ignore[method-assign]
            self._send = None
            return
        sink = context.changelog_sink
        if sink is None:
            inner.close()
            raise StateStoreError(
                f"changelog topic {topic!r} is configured but no changelog_sink was given in the "
                f"StoreContext; pass a sink or set changelog_topic=None to disable logging",
                store=self.name,
                task_id=context.task_id,
                partition=context.partition,
            )
        self._topic = topic
        self._partition = context.partition
        self._send = sink.send
        self._inner_put = inner.put

    def _bind_reads(self) -> None:
        """Reads and scans go straight to the inner store (re-bound after close: inner swaps its get)."""
        inner = self.wrapped
        self.get = inner.get  # type: ignore[method-assign]
        self.get_many = inner.get_many  # type: ignore[method-assign]
        self.range = inner.range  # type: ignore[method-assign]
        self.prefix_scan = inner.prefix_scan  # type: ignore[method-assign]
        self.all = inner.all  # type: ignore[method-assign]
        self.approximate_num_entries = inner.approximate_num_entries  # type: ignore[method-assign]
        self.restore_batch = inner.restore_batch  # type: ignore[method-assign]

    @property
    def is_open(self) -> bool:
        return self.wrapped.is_open

    @property
    def logging_active(self) -> bool:
        return self._send is not None

    def flush(self) -> None:
        self.wrapped.flush()

    def close(self) -> None:
        self.wrapped.close()
        self._bind_reads()
        if self._send is None:
            self.put = self.wrapped.put  # type: ignore[method-assign]
            self.put_all = self.wrapped.put_all  # type: ignore[method-assign]

    # -- writes (the logged path) ------------------------------------------------------------------
    def put(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        self._inner_put(key, value, timestamp)
        self._send(self._topic, self._partition, key, value, timestamp)  # type: ignore[misc]

    def put_if_absent(self, key: bytes, value: bytes, timestamp: int) -> bytes | None:
        old = self.wrapped.put_if_absent(key, value, timestamp)
        if old is None:
            self._send(self._topic, self._partition, key, value, timestamp)  # type: ignore[misc]
        return old

    def delete(self, key: bytes, timestamp: int) -> bytes | None:
        old = self.wrapped.delete(key, timestamp)
        self._send(self._topic, self._partition, key, None, timestamp)  # type: ignore[misc]
        return old

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None, int]]) -> None:
        if not isinstance(entries, list):
            entries = list(entries)
        self.wrapped.put_all(entries)
        send = self._send
        topic = self._topic
        partition = self._partition
        for k, v, ts in entries:
            send(topic, partition, k, v, ts)  # type: ignore[misc]

    # -- reads (rebound to the inner store on init) --------------------------------------------------
    def _not_open(self, *_: object) -> None:
        raise StateStoreError("state store is not initialised", store=self.name)

    get = get_many = range = prefix_scan = all = approximate_num_entries = restore_batch = _not_open

"""Change-logging layer: every write that reaches it is also sent to the store's changelog topic.

Sits below the cache, so only collapsed (flushed/evicted) updates are logged. Records go to the
task's partition of ``StoreContext.changelog_topic`` with the write's record timestamp; deletes are
logged as tombstones (``value=None``). With ``changelog_topic=None`` the layer is a pass-through.

With ``StoreContext.changelog_collapse`` (opt-in: ``StreamsConfig.changelog_collapse``) records are
collapsed per key and sent on ``flush()`` -- i.e. at the commit, before the producer is flushed and the
offsets are committed -- or when ``COLLAPSE_MAX`` keys are pending. Without the record cache that turns
one changelog record per input into one per key per commit (Kafka Streams gets the same from its cache).
Restoring yields the same state; under at-least-once a crash between commits no longer leaves changelog
records of uncommitted input behind (which replaying the input would have counted twice).
"""

from __future__ import annotations

from collections.abc import Iterable

from edge.errors import StateStoreError
from edge.state.api import StoreContext

#: keys whose changelog records may wait for the next flush before they are sent anyway
COLLAPSE_MAX = 20_000


class ChangeLoggingKeyValueStore:
    def __init__(self, wrapped) -> None:
        self.wrapped = wrapped
        self.name = wrapped.name
        self.persistent = wrapped.persistent
        self._topic: str | None = None
        self._partition = 0
        self._send = None
        self._collapse = False
        # pending changelog records: value and timestamp per key in two dicts (no tuple per write: a
        # dict of bytes/ints is not tracked by the garbage collector, 10k live tuples would be)
        self._pending: dict[bytes, bytes | None] = {}
        self._pending_ts: dict[bytes, int] = {}

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
        self._collapse = bool(getattr(context, "changelog_collapse", False))
        if self._collapse:
            self.put = self._collapsed_put  # type: ignore[method-assign]

    def _bind_reads(self) -> None:
        """Reads and scans go straight to the inner store (re-bound after close: inner swaps its get)."""
        inner = self.wrapped
        self.get = inner.get  # type: ignore[method-assign]
        self.get_many = inner.get_many  # type: ignore[method-assign]
        self.range = inner.range  # type: ignore[method-assign]
        #: a list-returning scan, where the inner store has one (window fetches use it when present)
        self.range_items = getattr(inner, "range_items", None)
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
        self._send_pending()
        self.wrapped.flush()

    def discard_unflushed(self) -> None:
        """Drop changelog records not sent yet (a dirty close: they belong to an aborted commit)."""
        self._pending = {}
        self._pending_ts = {}

    def close(self) -> None:
        try:
            if self.wrapped.is_open:
                self._send_pending()
        finally:
            # the inner store closes (and releases its lock) even if sending failed
            self._pending = {}
            self._pending_ts = {}
            self.wrapped.close()
            self._bind_reads()
        if self._send is None:
            self.put = self.wrapped.put  # type: ignore[method-assign]
            self.put_all = self.wrapped.put_all  # type: ignore[method-assign]

    # -- writes (the logged path) ------------------------------------------------------------------
    def put(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        self._inner_put(key, value, timestamp)
        self._send(self._topic, self._partition, key, value, timestamp)  # type: ignore[misc]

    def _collapsed_put(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        self._inner_put(key, value, timestamp)
        pending = self._pending
        pending[key] = value
        self._pending_ts[key] = timestamp
        if len(pending) >= COLLAPSE_MAX:
            self._send_pending()

    def _log(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        if self._collapse:
            pending = self._pending
            pending[key] = value
            self._pending_ts[key] = timestamp
            if len(pending) >= COLLAPSE_MAX:
                self._send_pending()
        else:
            self._send(self._topic, self._partition, key, value, timestamp)  # type: ignore[misc]

    def _send_pending(self) -> None:
        pending = self._pending
        if not pending:
            return
        timestamps = self._pending_ts
        self._pending = {}
        self._pending_ts = {}
        send = self._send
        topic = self._topic
        partition = self._partition
        for k, v in pending.items():
            send(topic, partition, k, v, timestamps[k])  # type: ignore[misc]

    def put_if_absent(self, key: bytes, value: bytes, timestamp: int) -> bytes | None:
        old = self.wrapped.put_if_absent(key, value, timestamp)
        if old is None:
            self._log(key, value, timestamp)
        return old

    def delete(self, key: bytes, timestamp: int) -> bytes | None:
        old = self.wrapped.delete(key, timestamp)
        self._log(key, None, timestamp)
        return old

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None, int]]) -> None:
        if not isinstance(entries, list):
            entries = list(entries)
        self.wrapped.put_all(entries)
        if self._collapse:
            log = self._log
            for k, v, ts in entries:
                log(k, v, ts)
            return
        send = self._send
        topic = self._topic
        partition = self._partition
        for k, v, ts in entries:
            send(topic, partition, k, v, ts)  # type: ignore[misc]

    # -- reads (rebound to the inner store on init) --------------------------------------------------
    def _not_open(self, *_: object) -> None:
        raise StateStoreError("state store is not initialised", store=self.name)

    get = get_many = range = prefix_scan = all = approximate_num_entries = restore_batch = _not_open

"""The suppression processor (Kafka's ``KTableSuppressProcessorSupplier.KTableSuppressProcessor``) and
the suppressed table's value getter.

Per record: buffer the change at its buffer time (window end or record time), then enforce the
constraints -- evict, in ``(buffer time, key)`` order, every entry whose buffer time is at most
``observed stream time - time to wait``; then, if the buffer is over its record or byte limit, either
emit the oldest entries early (eager) or fail (strict). The observed stream time is the largest record
timestamp *this processor* has seen (Kafka's ``observedStreamTime``), so a restarted task emits nothing
until a record arrives; with the ``idle.stream.time.advance.ms`` extension the task's stream-time
listener advances it too.

An emitted record carries the buffered record's timestamp and headers (and, while it is forwarded, the
task's record context is that of the buffered record, so downstream stores and sinks see its metadata).
Final results drop tombstones (``safe_to_drop_tombstones``): nothing was emitted for that window.
"""

from __future__ import annotations

from typing import Any

from edge.errors import StreamhouseError
from edge.processor.api import Processor, ProcessorContext
from edge.processor.context import forward_all
from edge.processor.record import Record
from edge.serde import ValueAndTimestamp
from edge.state.suppression_buffer import BufferedContext, Eviction, SuppressionBuffer


class SuppressionBufferFullError(StreamhouseError):
    """A strict suppression buffer went over its record or byte limit (Kafka: a StreamsException "...
    buffer exceeded its max capacity"). With the default processing handler the task stops."""


class KTableSuppressProcessor(Processor):
    def __init__(
        self,
        store_name: str,
        *,
        time_to_wait_ms: int,
        window_end_time: bool,
        max_records: int,
        max_bytes: int,
        emit_when_full: bool,
        safe_to_drop_tombstones: bool,
    ) -> None:
        self._store_name = store_name
        self._wait_ms = time_to_wait_ms
        self._window_end_time = window_end_time
        self._max_records = max_records
        self._max_bytes = max_bytes
        self._emit_when_full = emit_when_full
        self._drop_tombstones = safe_to_drop_tombstones
        self._observed = -1
        #: results forwarded (Kafka's suppression-emit-total)
        self.emitted = 0
        self._listener: Any = None

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._buffer: SuppressionBuffer = context.get_state_store(self._store_name)
        self._forward = forward_all(context)
        # Where the task keeps the current record's metadata (edge.processor.task.StreamTask.meta):
        # set to the buffered record's while its result is forwarded, as Kafka sets the record context.
        task = getattr(context, "_task", None)
        self._meta = getattr(task, "meta", None)
        register = getattr(context, "register_stream_time_listener", None)
        if register is not None:
            self._listener = register(self._on_stream_time)

    def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            self._listener = None

    def process(self, record: Record) -> None:
        ts = record.timestamp
        if ts > self._observed:
            self._observed = ts
        ctx = self.context
        buffer_time = record.key.window.end if self._window_end_time else ts
        self._buffer.put(
            buffer_time,
            record.key,
            record.value,
            BufferedContext(ts, ctx.offset, ctx.topic, ctx.partition, record.headers),
        )
        self._enforce_constraints()

    def _on_stream_time(self, stream_time: int) -> None:
        """Stream time moved without a record (idle advance): windows may have closed meanwhile."""
        if stream_time > self._observed:
            self._observed = stream_time
            self._enforce_constraints()

    def _over_capacity(self) -> bool:
        buffer = self._buffer
        return buffer.num_records() > self._max_records or buffer.buffer_size() > self._max_bytes

    def _enforce_constraints(self) -> None:
        buffer = self._buffer
        expiry = self._observed - self._wait_ms
        buffer.evict_while(lambda: buffer.min_timestamp() <= expiry, self._emit)
        if self._over_capacity():
            if self._emit_when_full:
                buffer.evict_while(self._over_capacity, self._emit)
                return
            raise SuppressionBufferFullError(
                f"{getattr(self.context, 'node_name', self._store_name)} buffer exceeded its max capacity. "
                f"Currently [{buffer.num_records()}/{self._max_records}] records and "
                f"[{buffer.buffer_size()}/{self._max_bytes}] bytes."
            )

    def _emit(self, eviction: Eviction) -> None:
        change = eviction.value
        if change.new is None and self._drop_tombstones:
            return
        rc = eviction.context
        meta = self._meta
        if meta is None:
            self._forward(Record(eviction.key, change, rc.timestamp, rc.headers))
            self.emitted += 1
            return
        saved = (meta.topic, meta.partition, meta.offset, meta.timestamp, meta.headers)
        meta.topic, meta.partition, meta.offset = rc.topic, rc.partition, rc.offset
        meta.timestamp, meta.headers = rc.timestamp, rc.headers
        try:
            self._forward(Record(eviction.key, change, rc.timestamp, rc.headers))
            self.emitted += 1
        finally:
            meta.topic, meta.partition, meta.offset, meta.timestamp, meta.headers = saved


class SuppressedGetter:
    """The suppressed table's view: a buffered key reads as its prior value (what downstream last saw),
    any other key as the parent table's value (Kafka's KTableSuppressProcessorSupplier.view)."""

    def __init__(self, store_name: str, parent: Any) -> None:
        self._store_name = store_name
        self._parent = parent

    def init(self, context: ProcessorContext) -> None:
        self._parent.init(context)
        self._buffer: SuppressionBuffer = context.get_state_store(self._store_name)

    def get(self, key: Any) -> ValueAndTimestamp | None:
        buffered, value = self._buffer.prior_value_for_buffered(key)
        if buffered:
            return value
        return self._parent.get(key)


__all__ = ["KTableSuppressProcessor", "SuppressedGetter", "SuppressionBufferFullError"]

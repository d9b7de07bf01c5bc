"""The suppression buffer: Kafka Streams' ``InMemoryTimeOrderedKeyValueChangeBuffer``.

A state store holding, per key, the latest ``Change(new, old)`` a suppression has not emitted yet,
ordered by ``(buffer time, key bytes)`` -- the buffer time is the window end (final results) or the
record time (time limit). Decisions, all Kafka's:

* **Non-resetting time.** A key already buffered keeps its place (its first buffer time) when updated;
  only its value and record context change. So a rate limit emits at most once per period per key.
* **Prior value.** Besides the change, each entry keeps the value the key had downstream *before* it was
  first buffered (the ``old`` of the first buffered change). A suppressed table's value getter answers
  with it while the key is buffered: joins against the suppressed table see what was emitted, not what
  is still held back.
* **Record context.** The original record's timestamp, headers, topic, partition and offset are kept and
  restored on emit, so an emitted result carries the timestamp it had when it was buffered.
* **Changelog.** Written on ``flush()`` (the commit), one record per key touched since the last flush:
  the entry (Kafka's version-3 value layout: record context, prior, old, new, buffer time) or a
  tombstone for an evicted key. Because emits and their tombstones go out in the same commit (the same
  transaction under exactly-once), a restored buffer never emits again what was already emitted.
  Kafka also sets a ``v=3`` record header; the changelog sink carries no headers, so ours are read as
  version 3 by construction.
* **Size.** ``buffer_size()`` is Kafka's estimate (8 bytes of time + key + values + record context), so
  ``max_bytes`` bounds trip at the same points.

The store is in memory (``persistent=False``): it is rebuilt from its changelog on every start.
"""

from __future__ import annotations

import dataclasses
import heapq
import struct
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from edge.errors import StateStoreError, TopologyError
from edge.processor.record import Change, Headers
from edge.serde import ValueAndTimestamp
from edge.state.api import changelog_topic_name

if TYPE_CHECKING:
    from edge.serde import Serde
    from edge.state.api import StoreContext

#: Kafka's Long.MAX_VALUE: ``min_timestamp()`` of an empty buffer
MAX_TIME = (1 << 63) - 1

_LONG = struct.Struct(">q")
_INT = struct.Struct(">i")
_LONG_LONG = struct.Struct(">qq")
_NULL = -1
_OLD_IS_PRIOR = -2
#: Kafka's RecordQueue.UNKNOWN: the timestamp the prior-value view reports
UNKNOWN_TIMESTAMP = -1


class BufferedContext:
    """Kafka's ProcessorRecordContext: where a buffered record came from and what it carried."""

    __slots__ = ("headers", "offset", "partition", "timestamp", "topic")

    def __init__(
        self, timestamp: int, offset: int, topic: str | None, partition: int, headers: Headers | None
    ) -> None:
        self.timestamp = timestamp
        self.offset = offset
        self.topic = topic
        self.partition = partition
        self.headers = headers

    def serialize(self) -> bytes:
        topic = None if self.topic is None else self.topic.encode()
        parts = [_LONG_LONG.pack(self.timestamp, self.offset)]
        if topic is None:
            parts.append(_INT.pack(_NULL))
        else:
            parts += (_INT.pack(len(topic)), topic)
        headers = self.headers or ()
        parts.append(_INT.pack(self.partition))
        parts.append(_INT.pack(len(headers)))
        for key, value in headers:
            kb = key.encode()
            parts += (_INT.pack(len(kb)), kb)
            if value is None:
                parts.append(_INT.pack(_NULL))
            else:
                parts += (_INT.pack(len(value)), bytes(value))
        return b"".join(parts)

    def memory_estimate(self) -> int:
        """Kafka's ``residentMemorySizeEstimate`` (topic counted in characters)."""
        size = 8 + 8 + 4 + (len(self.topic) if self.topic is not None else 0)
        for key, value in self.headers or ():
            size += len(key) + (len(value) if value is not None else 0)
        return size

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BufferedContext) and (
            self.timestamp,
            self.offset,
            self.topic,
            self.partition,
            list(self.headers or []),
        ) == (other.timestamp, other.offset, other.topic, other.partition, list(other.headers or []))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"BufferedContext(timestamp={self.timestamp}, offset={self.offset}, topic={self.topic!r}, "
            f"partition={self.partition}, headers={self.headers!r})"
        )


class _Reader:
    """Big-endian reads from a changelog value (Kafka's ByteBuffer gets)."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def long(self) -> int:
        v = _LONG.unpack_from(self.data, self.pos)[0]
        self.pos += 8
        return v

    def int(self) -> int:
        v = _INT.unpack_from(self.data, self.pos)[0]
        self.pos += 4
        return v

    def array(self, length: int) -> bytes | None:
        if length == _NULL:
            return None
        if length < 0 or self.pos + length > len(self.data):
            raise ValueError(f"bad length {length} at byte {self.pos}")
        v = self.data[self.pos : self.pos + length]
        self.pos += length
        return v

    def sized(self) -> bytes | None:
        return self.array(self.int())


def _context_from(reader: _Reader) -> BufferedContext:
    timestamp = reader.long()
    offset = reader.long()
    topic_bytes = reader.sized()
    partition = reader.int()
    count = reader.int()
    headers: Headers = []
    for _ in range(max(count, 0)):  # -1: no headers (Kafka's backward-compatible encoding)
        key = reader.sized()
        headers.append(((key or b"").decode(), reader.sized()))
    topic = None if topic_bytes is None else topic_bytes.decode()
    return BufferedContext(timestamp, offset, topic, partition, headers or None)


class _Entry:
    """One buffered key: Kafka's BufferValue plus its buffer time and a generation for the heap."""

    __slots__ = ("context", "gen", "new", "old", "prior", "size", "time")

    def __init__(
        self,
        time: int,
        gen: int,
        prior: bytes | None,
        old: bytes | None,
        new: bytes | None,
        context: BufferedContext,
    ) -> None:
        self.time = time
        self.gen = gen
        self.prior = prior
        self.old = old
        self.new = new
        self.context = context
        self.size = 0

    def value_estimate(self) -> int:
        """Kafka's BufferValue.residentMemorySizeEstimate: an old value equal to the prior is shared."""
        size = 0 if self.prior is None else len(self.prior)
        if self.old is not None and self.old != self.prior:
            size += len(self.old)
        if self.new is not None:
            size += len(self.new)
        return size + self.context.memory_estimate()

    def serialize(self) -> bytes:
        """Kafka's BufferValue.serialize followed by the buffer time (changelog format version 3)."""
        parts = [self.context.serialize()]
        prior, old, new = self.prior, self.old, self.new
        parts.append(_INT.pack(_NULL) if prior is None else _INT.pack(len(prior)) + prior)
        if old is None:
            parts.append(_INT.pack(_NULL))
        elif old == prior:
            parts.append(_INT.pack(_OLD_IS_PRIOR))
        else:
            parts.append(_INT.pack(len(old)) + old)
        parts.append(_INT.pack(_NULL) if new is None else _INT.pack(len(new)) + new)
        parts.append(_LONG.pack(self.time))
        return b"".join(parts)


def _deserialize_entry(data: bytes) -> tuple[int, bytes | None, bytes | None, bytes | None, BufferedContext]:
    reader = _Reader(data)
    context = _context_from(reader)
    prior = reader.sized()
    old_length = reader.int()
    old = prior if old_length == _OLD_IS_PRIOR else reader.array(old_length)
    new = reader.sized()
    time = reader.long()
    if reader.pos != len(data):
        raise ValueError(f"{len(data) - reader.pos} trailing bytes")
    return time, prior, old, new, context


class Eviction:
    """What ``evict_while`` hands its callback: the key, its change and its original record context."""

    __slots__ = ("context", "key", "value")

    def __init__(self, key: Any, value: Change, context: BufferedContext) -> None:
        self.key = key
        self.value = value
        self.context = context

    def __repr__(self) -> str:
        return f"Eviction(key={self.key!r}, value={self.value!r}, context={self.context!r})"


class SuppressionBuffer:
    """The store (see the module doc). Typed at the edges (keys, ``Change`` values), bytes inside."""

    persistent = False

    def __init__(self, name: str, key_serde: Serde, value_serde: Serde, *, logging: bool = True) -> None:
        self.name = name
        self.logging_enabled = logging
        self._key_ser = key_serde.serialize
        self._key_de = key_serde.deserialize
        self._value_ser = value_serde.serialize
        self._value_de = value_serde.deserialize
        self._index: dict[bytes, _Entry] = {}
        #: (buffer time, key bytes, generation); entries whose generation no longer matches are stale
        self._heap: list[tuple[int, bytes, int]] = []
        self._gen = 0
        #: keys to log on the next flush, in the order they were touched (Kafka: a HashSet)
        self._dirty: dict[bytes, None] = {}
        self._size = 0
        self._open = False
        self._topic = name
        self._changelog_topic: str | None = None
        self._sink: Any = None
        self._partition = 0
        self._timestamp: Callable[[], int] = lambda: 0

    # -- store lifecycle ----------------------------------------------------------------------------------
    def init(self, context: StoreContext) -> None:
        self._changelog_topic = context.changelog_topic if self.logging_enabled else None
        self._sink = context.changelog_sink
        if self._changelog_topic is not None and self._sink is None:
            raise StateStoreError(f"suppression buffer {self.name!r} is logged but has no changelog sink")
        # serdes see the changelog topic, as Kafka's do, even when logging is disabled
        self._topic = changelog_topic_name(context.application_id, self.name)
        self._partition = context.partition
        self._timestamp = context.record_timestamp
        self._open = True

    @property
    def is_open(self) -> bool:
        return self._open

    def flush(self) -> None:
        """Log every key touched since the last flush: its entry, or a tombstone if it was evicted."""
        if self._changelog_topic is None or not self._dirty:
            self._dirty.clear()
            return
        topic, partition, send = self._changelog_topic, self._partition, self._sink.send
        timestamp = self._timestamp()
        index = self._index
        for key in self._dirty:
            entry = index.get(key)
            send(topic, partition, key, None if entry is None else entry.serialize(), timestamp)
        self._dirty.clear()

    def discard_unflushed(self) -> None:
        """Dirty close (aborted transaction): what was not logged is redone from the committed offsets."""
        self._dirty.clear()

    def close(self) -> None:
        """Kafka's close: forget everything (the buffer is rebuilt from the changelog), log nothing."""
        self._open = False
        self._index.clear()
        self._heap.clear()
        self._dirty.clear()
        self._size = 0

    def approximate_num_entries(self) -> int:
        return len(self._index)

    def changelog_value(self, key: bytes) -> bytes | None:
        """The changelog record that reproduces ``key``'s current entry (None: a tombstone); the runtime
        re-sends it to undo changelog records of uncommitted input (:mod:`edge.runtime.markers`)."""
        entry = self._index.get(key)
        return None if entry is None else entry.serialize()

    # -- restore ------------------------------------------------------------------------------------------
    def restore_batch(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Apply changelog records: an entry (version-3 layout) is put as is, a tombstone removes."""
        for key, value in records:
            key = bytes(key)
            if value is None:
                entry = self._index.pop(key, None)
                if entry is not None:
                    self._size -= entry.size
                continue
            try:
                time, prior, old, new, context = _deserialize_entry(bytes(value))
            except (ValueError, struct.error, UnicodeDecodeError) as exc:
                raise StateStoreError(
                    f"suppression buffer {self.name!r}: cannot read changelog record for key {key!r}: {exc}"
                ) from exc
            self._clean_put(time, key, prior, old, new, context)

    # -- the buffer ---------------------------------------------------------------------------------------
    def _clean_put(
        self,
        time: int,
        key: bytes,
        prior: bytes | None,
        old: bytes | None,
        new: bytes | None,
        context: BufferedContext,
    ) -> None:
        """Insert or update ``key``; an update keeps the key's place in time order (non-resetting)."""
        previous = self._index.get(key)
        if previous is None:
            self._gen += 1
            entry = _Entry(time, self._gen, prior, old, new, context)
            heapq.heappush(self._heap, (time, key, self._gen))
            self._index[key] = entry
        else:
            entry = _Entry(previous.time, previous.gen, prior, old, new, context)
            self._index[key] = entry
            self._size -= previous.size
        entry.size = 8 + len(key) + entry.value_estimate()
        self._size += entry.size

    def put(self, time: int, key: Any, change: Change, context: BufferedContext) -> None:
        """Buffer ``change`` for ``key`` at buffer time ``time`` (kept if the key is already buffered).

        The prior value is the ``old`` of the change that first buffered the key."""
        if change is None:
            raise StateStoreError(f"suppression buffer {self.name!r}: a buffered value cannot be None")
        topic = self._topic
        key_bytes = self._key_ser(topic, key)
        if key_bytes is None:
            raise StateStoreError(f"suppression buffer {self.name!r}: keys must not serialize to None")
        key_bytes = bytes(key_bytes)
        old = None if change.old is None else self._value_ser(topic, change.old)
        new = None if change.new is None else self._value_ser(topic, change.new)
        buffered = self._index.get(key_bytes)
        prior = old if buffered is None else buffered.prior
        self._clean_put(time, key_bytes, prior, old, new, context)
        if self._changelog_topic is not None:
            self._dirty[key_bytes] = None

    def _head(self) -> tuple[int, bytes, int] | None:
        """The oldest live heap item, dropping stale ones (keys evicted or removed by a tombstone)."""
        heap, index = self._heap, self._index
        while heap:
            item = heap[0]
            entry = index.get(item[1])
            if entry is not None and entry.gen == item[2]:
                return item
            heapq.heappop(heap)
        return None

    def min_timestamp(self) -> int:
        """The smallest buffer time, ``MAX_TIME`` when empty."""
        head = self._head()
        return MAX_TIME if head is None else head[0]

    def evict_while(self, predicate: Callable[[], bool], callback: Callable[[Eviction], None]) -> int:
        """While the buffer is not empty and ``predicate()`` holds, hand the oldest entry to ``callback``
        and then remove it (so a failing callback leaves it buffered). Returns the number evicted."""
        evicted = 0
        topic = self._topic
        while predicate():
            head = self._head()
            if head is None:
                break
            key = head[1]
            entry = self._index[key]
            new = None if entry.new is None else self._value_de(topic, entry.new)
            old = None if entry.old is None else self._value_de(topic, entry.old)
            callback(Eviction(self._key_de(topic, key), Change(new, old), entry.context))
            heapq.heappop(self._heap)
            del self._index[key]
            self._size -= entry.size
            if self._changelog_topic is not None:
                self._dirty[key] = None
            evicted += 1
        return evicted

    def prior_value_for_buffered(self, key: Any) -> tuple[bool, ValueAndTimestamp | None]:
        """``(True, value)`` when ``key`` is buffered -- the value downstream had before it was buffered
        (``None`` if it had none), timestamp unknown (-1) -- else ``(False, None)``."""
        key_bytes = self._key_ser(self._topic, key)
        entry = None if key_bytes is None else self._index.get(bytes(key_bytes))
        if entry is None:
            return False, None
        if entry.prior is None:
            return True, None
        return True, ValueAndTimestamp(self._value_de(self._topic, entry.prior), UNKNOWN_TIMESTAMP)

    def num_records(self) -> int:
        return len(self._index)

    def buffer_size(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return (
            f"SuppressionBuffer(name={self.name!r}, records={len(self._index)}, bytes={self._size}, "
            f"logged={self._changelog_topic is not None})"
        )


@dataclasses.dataclass(frozen=True, slots=True)
class SuppressionBufferBuilder:
    """Declares a suppression buffer (Kafka's ``InMemoryTimeOrderedKeyValueChangeBuffer.Builder``).

    Never persistent and never cached (``with_caching_*`` are accepted and ignored, as in Kafka);
    logged unless ``with_logging_disabled()``."""

    name: str
    key_serde: Serde
    value_serde: Serde
    logging_enabled: bool = True
    changelog_config: Mapping[str, str] = dataclasses.field(default_factory=dict)
    persistent: bool = False
    caching_enabled: bool = False

    def __init__(
        self,
        name: str,
        key_serde: Serde,
        value_serde: Serde,
        *,
        logging: bool = True,
        changelog_config: Mapping[str, str] | None = None,
    ) -> None:
        if not name or not isinstance(name, str) or any(c in name for c in "/\\"):
            raise TopologyError(f"a suppression buffer needs a non-empty name without slashes, got {name!r}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "key_serde", key_serde)
        object.__setattr__(self, "value_serde", value_serde)
        object.__setattr__(self, "logging_enabled", logging)
        object.__setattr__(self, "changelog_config", dict(changelog_config or {}) if logging else {})
        object.__setattr__(self, "persistent", False)
        object.__setattr__(self, "caching_enabled", False)

    def build(self) -> SuppressionBuffer:
        return SuppressionBuffer(self.name, self.key_serde, self.value_serde, logging=self.logging_enabled)

    def with_logging_disabled(self) -> SuppressionBufferBuilder:
        return SuppressionBufferBuilder(self.name, self.key_serde, self.value_serde, logging=False)

    def with_logging_enabled(self, config: Mapping[str, str] | None = None) -> SuppressionBufferBuilder:
        return SuppressionBufferBuilder(
            self.name,
            self.key_serde,
            self.value_serde,
            logging=True,
            changelog_config=dict(config if config is not None else self.changelog_config),
        )

    def with_caching_disabled(self) -> SuppressionBufferBuilder:
        return self

    def with_caching_enabled(self) -> SuppressionBufferBuilder:
        return self


def suppression_buffer_builder(
    name: str,
    key_serde: Serde,
    value_serde: Serde,
    *,
    logging: bool = True,
    changelog_config: Mapping[str, str] | None = None,
) -> SuppressionBufferBuilder:
    """A suppression buffer for the Processor API (the DSL declares one per ``suppress``)."""
    return SuppressionBufferBuilder(
        name, key_serde, value_serde, logging=logging, changelog_config=changelog_config
    )


__all__ = [
    "MAX_TIME",
    "BufferedContext",
    "Eviction",
    "SuppressionBuffer",
    "SuppressionBufferBuilder",
    "suppression_buffer_builder",
]

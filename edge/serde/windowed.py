"""Windowed keys and their byte formats, identical to Kafka Streams' so a Java consumer reads our output.

* ``Windowed(key, window)`` with ``window.start`` / ``window.end`` in ms (Kafka's ``Windowed<K>``);
  ``TimeWindow`` for time and sliding windows, ``SessionWindow`` for sessions (whose end is inclusive).
* Serdes (Kafka's ``WindowedSerdes``): a time-windowed key is ``key bytes + 8-byte start`` (the end is
  recomputed from the window size the reader is given); a session-windowed key is
  ``key bytes + 8-byte end + 8-byte start``.
* Store key schemas (what window/session stores and their changelogs hold, Kafka's ``WindowKeySchema``
  and ``SessionKeySchema``): ``key + 8-byte window start + 4-byte sequence number`` and
  ``key + 8-byte session end + 8-byte session start``. All integers are big-endian signed.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from edge.errors import SerdeError
from edge.serde.base import Serde
from edge.time import to_millis

K = TypeVar("K")

_LONG = struct.Struct(">q")
_TS_SEQ = struct.Struct(">qi")
_TWO_LONGS = struct.Struct(">qq")

#: Kafka's ``Long.MAX_VALUE``: the end of windows whose size is not known to the reader
MAX_TIME = (1 << 63) - 1


@dataclass(frozen=True, slots=True, order=True)
class Window:
    """A time interval ``[start, end)`` in ms (sessions: ``[start, end]``)."""

    start: int
    end: int

    def overlap(self, other: Window) -> bool:
        return self.start < other.end and other.start < self.end

    def start_time(self) -> int:
        return self.start

    def end_time(self) -> int:
        return self.end


@dataclass(frozen=True, slots=True, order=True)
class TimeWindow(Window):
    """A tumbling, hopping or sliding window: start inclusive, end exclusive."""

    def __post_init__(self) -> None:
        if self.start < 0:
            raise ValueError(f"window start must be >= 0, got {self.start}")
        if self.end <= self.start:
            raise ValueError(f"window end must be > start, got [{self.start}, {self.end})")


@dataclass(frozen=True, slots=True, order=True)
class SessionWindow(Window):
    """A session: both bounds inclusive (a single event is the session ``[t, t]``)."""

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"session end must be >= start, got [{self.start}, {self.end}]")

    def overlap(self, other: Window) -> bool:
        return not (self.start > other.end or other.start > self.end)


@dataclass(frozen=True, slots=True)
class Windowed(Generic[K]):
    """A key and the window it was aggregated in (Kafka's ``Windowed<K>``)."""

    key: K
    window: Window

    def __str__(self) -> str:
        return f"[{self.key}@{self.window.start}/{self.window.end}]"


# -- store key schemas ----------------------------------------------------------------------------------


def window_store_key(key: bytes, window_start: int, seqnum: int = 0) -> bytes:
    """Kafka's ``WindowKeySchema.toStoreKeyBinary``: key + start + sequence number."""
    return key + _TS_SEQ.pack(window_start, seqnum)


def window_store_key_parts(store_key: bytes) -> tuple[bytes, int, int]:
    """``(key bytes, window start, sequence number)`` of a window store key."""
    ts, seq = _TS_SEQ.unpack_from(store_key, len(store_key) - 12)
    return store_key[:-12], ts, seq


def window_store_key_timestamp(store_key: bytes) -> int:
    return _LONG.unpack_from(store_key, len(store_key) - 12)[0]


def session_store_key(key: bytes, start: int, end: int) -> bytes:
    """Kafka's ``SessionKeySchema.toBinary``: key + end + start."""
    return key + _TWO_LONGS.pack(end, start)


def session_store_key_parts(store_key: bytes) -> tuple[bytes, int, int]:
    """``(key bytes, session start, session end)`` of a session store key."""
    end, start = _TWO_LONGS.unpack_from(store_key, len(store_key) - 16)
    return store_key[:-16], start, end


def session_store_key_end(store_key: bytes) -> int:
    return _LONG.unpack_from(store_key, len(store_key) - 16)[0]


# -- serdes ---------------------------------------------------------------------------------------------


class TimeWindowedSerde(Generic[K]):
    """Kafka's ``TimeWindowedSerializer``/``TimeWindowedDeserializer``: key bytes + 8-byte start.

    The bytes hold no end: the reader needs the window size (``window_size_ms``) to rebuild it; without
    one the end is ``MAX_TIME`` as in Kafka.
    """

    __slots__ = ("inner", "window_size_ms")

    def __init__(self, inner: Serde[K], window_size_ms: int | None = None) -> None:
        self.inner = inner
        self.window_size_ms = window_size_ms

    def serialize(self, topic: str, value: Windowed[K] | None) -> bytes | None:
        if value is None:
            return None
        try:
            key = self.inner.serialize(topic, value.key)
            return (key or b"") + _LONG.pack(value.window.start)
        except SerdeError:
            raise
        except Exception as exc:
            raise SerdeError(f"cannot serialize windowed key {value!r}: {exc}", topic=topic) from exc

    def deserialize(self, topic: str, data: bytes | None) -> Windowed[K] | None:
        if data is None:
            return None
        if len(data) < 8:
            raise SerdeError(
                f"a time-windowed key needs at least 8 bytes (key + window start), got {len(data)}",
                topic=topic,
            )
        start = _LONG.unpack_from(data, len(data) - 8)[0]
        size = self.window_size_ms
        end = MAX_TIME if size is None or start > MAX_TIME - size else start + size
        return Windowed(self.inner.deserialize(topic, data[:-8]), TimeWindow(start, end))


class SessionWindowedSerde(Generic[K]):
    """Kafka's ``SessionWindowedSerializer``/``Deserializer``: key bytes + 8-byte end + 8-byte start."""

    __slots__ = ("inner",)

    def __init__(self, inner: Serde[K]) -> None:
        self.inner = inner

    def serialize(self, topic: str, value: Windowed[K] | None) -> bytes | None:
        if value is None:
            return None
        key = self.inner.serialize(topic, value.key) or b""
        return session_store_key(key, value.window.start, value.window.end)

    def deserialize(self, topic: str, data: bytes | None) -> Windowed[K] | None:
        if data is None:
            return None
        if len(data) < 16:
            raise SerdeError(
                f"a session-windowed key needs at least 16 bytes (key + end + start), got {len(data)}",
                topic=topic,
            )
        key, start, end = session_store_key_parts(data)
        return Windowed(self.inner.deserialize(topic, key), SessionWindow(start, end))


class WindowedSerdes:
    """Factories named as Kafka's ``WindowedSerdes``."""

    @staticmethod
    def time_windowed_serde_from(inner: Serde[Any], window_size: Any) -> TimeWindowedSerde[Any]:
        return TimeWindowedSerde(inner, to_millis(window_size, "window_size"))

    @staticmethod
    def session_windowed_serde_from(inner: Serde[Any]) -> SessionWindowedSerde[Any]:
        return SessionWindowedSerde(inner)

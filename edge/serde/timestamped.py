"""``ValueAndTimestamp`` and its serde: what KTable stores hold (Kafka's TimestampedKeyValueStore format).

Wire format: 8-byte big-endian signed timestamp (ms) followed by the inner serde's bytes. A
``ValueAndTimestamp`` whose value is ``None`` serializes to ``None`` (a tombstone), mirroring
``ValueAndTimestamp.make`` returning null in Kafka Streams.
"""

from __future__ import annotations

import struct
from typing import Generic, NamedTuple, TypeVar

from edge.errors import SerdeError
from edge.serde.base import Serde
from edge.serde.builtin import LongSerde

T = TypeVar("T")

_TS = struct.Struct(">q")
_pack_ts = _TS.pack
_unpack_ts_from = _TS.unpack_from


class ValueAndTimestamp(NamedTuple, Generic[T]):
    value: T
    timestamp: int


_tuple_new = tuple.__new__
_TS_LONG = struct.Struct(">qq")  # timestamp + a long value: what every count store holds
_TS_LONG_UNPACK = _TS_LONG.unpack


class ValueAndTimestampSerde(Generic[T]):
    """Wraps an inner value serde with an 8-byte timestamp prefix."""

    __slots__ = ("_inner_de", "_inner_ser", "inner")

    def __new__(cls, inner: Serde[T] | None = None) -> ValueAndTimestampSerde[T]:
        # A long inner serde (counts) gets one struct call for timestamp + value both ways.
        if cls is ValueAndTimestampSerde and type(inner) is LongSerde:
            cls = _LongValueAndTimestampSerde
        return object.__new__(cls)

    def __init__(self, inner: Serde[T]) -> None:
        self.inner = inner
        self._inner_ser = inner.serialize
        self._inner_de = inner.deserialize

    def serialize(self, topic: str, value: ValueAndTimestamp[T] | None) -> bytes | None:
        if value is None:
            return None
        try:
            v, ts = value
        except (TypeError, ValueError) as exc:
            raise SerdeError(
                f"ValueAndTimestampSerde needs a ValueAndTimestamp(value, timestamp), got "
                f"{type(value).__name__}",
                topic=topic,
            ) from exc
        if v is None:
            return None
        raw = self._inner_ser(topic, v)
        try:
            return _pack_ts(ts) + raw  # type: ignore[operator]
        except struct.error as exc:
            raise SerdeError(f"invalid timestamp {ts!r}: {exc}", topic=topic) from exc

    def deserialize(self, topic: str, data: bytes | None) -> ValueAndTimestamp[T] | None:
        if data is None:
            return None
        if len(data) < 8:
            raise SerdeError(
                f"value-and-timestamp payload must be at least 8 bytes, got {len(data)} ({bytes(data)!r}); "
                f"the store/topic was not written with ValueAndTimestampSerde",
                topic=topic,
            )
        # tuple.__new__ skips NamedTuple's Python-level __new__ frame (~90 ns per record)
        return _tuple_new(ValueAndTimestamp, (self._inner_de(topic, data[8:]), _unpack_ts_from(data)[0]))

    def __repr__(self) -> str:
        return f"ValueAndTimestampSerde({self.inner!r})"


class _LongValueAndTimestampSerde(ValueAndTimestampSerde[int]):
    """``ValueAndTimestampSerde(Serdes.long())`` with the 16 bytes packed/unpacked in one call; anything
    unusual (wrong types, other lengths) takes the generic path, so errors are the same."""

    __slots__ = ()

    def serialize(self, topic: str, value: ValueAndTimestamp[int] | None) -> bytes | None:
        if value.__class__ is ValueAndTimestamp:
            try:
                return _TS_LONG.pack(value[1], value[0])  # type: ignore[index]
            except Exception:  # a None value, wrong types: the generic path decides
                pass
        return ValueAndTimestampSerde.serialize(self, topic, value)

    def deserialize(self, topic: str, data: bytes | None) -> ValueAndTimestamp[int] | None:
        try:
            ts, v = _TS_LONG_UNPACK(data)  # exactly 16 bytes, else struct.error / TypeError
        except Exception:
            return ValueAndTimestampSerde.deserialize(self, topic, data)
        return _tuple_new(ValueAndTimestamp, (v, ts))


def raw_timestamp(data: bytes) -> int:
    """Timestamp of a serialized ValueAndTimestamp without deserializing the value."""
    return _unpack_ts_from(data)[0]


def raw_value(data: bytes | None) -> bytes | None:
    """Inner value bytes of a serialized ValueAndTimestamp (``None`` stays ``None``)."""
    return None if data is None else data[8:]

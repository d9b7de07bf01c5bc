"""Round trips, tombstones and error reporting of the built-in serdes."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import struct

import pydantic
import pytest

from edge.errors import SerdeError, StreamhouseError
from edge.serde import Serde, Serdes, ValueAndTimestamp, ValueAndTimestampSerde, raw_timestamp, raw_value

T = "topic-a"


@dataclasses.dataclass
class Click:
    user: str
    count: int
    tags: list[str] = dataclasses.field(default_factory=list)
    score: float | None = None


@dataclasses.dataclass
class Session:
    start: dt.datetime
    clicks: list[Click]


class Order(pydantic.BaseModel):
    id: int
    item: str
    qty: int = 1
    placed: dt.datetime | None = None


ROUND_TRIPS = [
    (Serdes.bytes(), [b"", b"\x00\xff", b"abc"]),
    (Serdes.string(), ["", "hello", "ünïcödé ✓"]),
    (Serdes.int(), [0, 1, -1, 2**31 - 1, -(2**31)]),
    (Serdes.long(), [0, -1, 2**63 - 1, -(2**63), 1_700_000_000_000]),
    (Serdes.float(), [0.0, 1.5, -2.25, float("inf")]),
    (Serdes.double(), [0.0, 1.1, -1e300, 5e-324, float("-inf")]),
    (Serdes.json(), [{"a": 1, "b": [1, 2, {"c": None}]}, [1, "x"], "s", 3, 2.5, True]),
    (Serdes.dataclass(Click), [Click("u1", 3), Click("u2", 0, ["a", "b"], 0.5)]),
    (
        Serdes.dataclass(Session),
        [Session(dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC), [Click("u", 1)])],
    ),
    (
        Serdes.pydantic(Order),
        [Order(id=1, item="x"), Order(id=2, item="y", qty=3, placed=dt.datetime(2024, 1, 1))],
    ),
    (
        ValueAndTimestampSerde(Serdes.string()),
        [ValueAndTimestamp("v", 0), ValueAndTimestamp("", 1_700_000_000_123)],
    ),
    (ValueAndTimestampSerde(Serdes.json()), [ValueAndTimestamp({"n": 1}, -5)]),
]


@pytest.mark.parametrize(
    ("serde", "values"), ROUND_TRIPS, ids=lambda x: repr(x) if not isinstance(x, list) else ""
)
def test_round_trip_and_tombstones(serde: Serde, values: list) -> None:
    assert isinstance(serde, Serde)
    for value in values:
        data = serde.serialize(T, value)
        assert isinstance(data, bytes)
        assert serde.deserialize(T, data) == value
    assert serde.serialize(T, None) is None
    assert serde.deserialize(T, None) is None


def test_kafka_wire_compatibility() -> None:
    assert Serdes.int().serialize(T, 1) == b"\x00\x00\x00\x01"
    assert Serdes.int().serialize(T, -2) == b"\xff\xff\xff\xfe"
    assert Serdes.long().serialize(T, 258) == b"\x00\x00\x00\x00\x00\x00\x01\x02"
    assert Serdes.float().serialize(T, 1.0) == struct.pack(">f", 1.0)
    assert Serdes.double().serialize(T, 1.0) == struct.pack(">d", 1.0)
    assert Serdes.string().serialize(T, "é") == "é".encode()
    nan = Serdes.double().deserialize(T, Serdes.double().serialize(T, float("nan")))
    assert math.isnan(nan)


def test_bytes_serde_accepts_buffers() -> None:
    assert Serdes.bytes().serialize(T, bytearray(b"ab")) == b"ab"
    assert Serdes.bytes().serialize(T, memoryview(b"cd")) == b"cd"
    with pytest.raises(SerdeError):
        Serdes.bytes().serialize(T, 3.5)  # type: ignore[arg-type]


def test_json_non_string_keys_become_strings() -> None:
    serde = Serdes.json()
    assert serde.deserialize(T, serde.serialize(T, {1: "a"})) == {"1": "a"}


BAD_BYTES = [
    (Serdes.string(), b"\xff\xfe\xfd"),
    (Serdes.int(), b"\x00\x01"),
    (Serdes.int(), b"\x00\x00\x00\x00\x00"),
    (Serdes.long(), b"\x00\x00\x00\x01"),
    (Serdes.float(), b"\x00"),
    (Serdes.double(), b""),
    (Serdes.json(), b"{not json"),
    (Serdes.dataclass(Click), b'{"user": "u"}'),  # missing field
    (Serdes.dataclass(Click), b"[1,2]"),
    (Serdes.dataclass(Session), b'{"start": "yesterday", "clicks": []}'),
    (Serdes.pydantic(Order), b'{"id": "not-an-int", "item": "x"}'),
    (Serdes.pydantic(Order), b"garbage"),
    (ValueAndTimestampSerde(Serdes.string()), b"\x00\x01"),
    (ValueAndTimestampSerde(Serdes.int()), b"\x00" * 8 + b"\x01"),
]


@pytest.mark.parametrize(("serde", "data"), BAD_BYTES, ids=lambda x: repr(x)[:40])
def test_bad_bytes_raise_serde_error(serde: Serde, data: bytes) -> None:
    with pytest.raises(SerdeError) as info:
        serde.deserialize(T, data)
    err = info.value
    assert isinstance(err, StreamhouseError)
    assert err.topic == T
    assert T in str(err)


BAD_VALUES = [
    (Serdes.string(), 12),
    (Serdes.int(), 2**40),
    (Serdes.int(), "x"),
    (Serdes.long(), 2**64),
    (Serdes.double(), "x"),
    (Serdes.json(), {"a": object()}),
    (Serdes.dataclass(Click), object()),
    (ValueAndTimestampSerde(Serdes.string()), "not-a-pair"),
    (ValueAndTimestampSerde(Serdes.string()), ValueAndTimestamp("v", "not-a-ts")),
]


@pytest.mark.parametrize(("serde", "value"), BAD_VALUES, ids=lambda x: repr(x)[:40])
def test_unserializable_values_raise_serde_error(serde: Serde, value: object) -> None:
    with pytest.raises(SerdeError):
        serde.serialize(T, value)


def test_serde_error_with_position() -> None:
    try:
        Serdes.int().deserialize("orders", b"\x01")
    except SerdeError as err:
        located = err.with_position(partition=3, offset=17)
    assert (located.topic, located.partition, located.offset) == ("orders", 3, 17)
    assert "partition=3" in str(located) and "offset=17" in str(located)
    assert located.__cause__ is not None


def test_value_and_timestamp_format() -> None:
    serde = ValueAndTimestampSerde(Serdes.string())
    data = serde.serialize(T, ValueAndTimestamp("abc", 1234))
    assert data == struct.pack(">q", 1234) + b"abc"
    assert raw_timestamp(data) == 1234
    assert raw_value(data) == b"abc"
    assert raw_value(None) is None
    # a None value is a tombstone, like ValueAndTimestamp.make(null, ts) in Kafka Streams
    assert serde.serialize(T, ValueAndTimestamp(None, 5)) is None
    # tuples are accepted too
    assert serde.deserialize(T, serde.serialize(T, ("x", 9))) == ("x", 9)


def test_factories_are_cheap_singletons_or_typed() -> None:
    assert Serdes.string() is Serdes.string()
    assert Serdes.long() is Serdes.long()
    with pytest.raises(TypeError):
        Serdes.dataclass(dict)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Serdes.pydantic(Click)  # type: ignore[arg-type]


def test_flat_dataclass_uses_fast_path_nested_uses_adapter() -> None:
    assert Serdes.dataclass(Click)._fast is True
    assert Serdes.dataclass(Session)._fast is False
    decoded = Serdes.dataclass(Session).deserialize(
        T, b'{"start": "2024-01-02T03:04:05Z", "clicks": [{"user": "u", "count": 2}]}'
    )
    assert isinstance(decoded.clicks[0], Click)
    assert decoded.start.tzinfo is not None

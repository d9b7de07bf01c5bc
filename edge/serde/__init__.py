"""Serializers/deserializers between Python values and Kafka record bytes.

A :class:`Serde` is a cheap, stateless object with two bound methods; ``None`` always maps to ``None``
in both directions so tombstones flow through untouched. Undecodable bytes (and unencodable values)
raise :class:`edge.errors.SerdeError`, which the DSL's deserialization/production error handlers catch.
Use the :class:`Serdes` factory for the built-ins.
"""

from __future__ import annotations

from edge.serde.base import Serde
from edge.serde.builtin import (
    BytesSerde,
    DataclassSerde,
    DoubleSerde,
    FloatSerde,
    IntSerde,
    JsonSerde,
    LongSerde,
    PydanticSerde,
    Serdes,
    StringSerde,
)
from edge.serde.timestamped import (
    ValueAndTimestamp,
    ValueAndTimestampSerde,
    raw_timestamp,
    raw_value,
)

__all__ = [
    "BytesSerde",
    "DataclassSerde",
    "DoubleSerde",
    "FloatSerde",
    "IntSerde",
    "JsonSerde",
    "LongSerde",
    "PydanticSerde",
    "Serde",
    "Serdes",
    "StringSerde",
    "ValueAndTimestamp",
    "ValueAndTimestampSerde",
    "raw_timestamp",
    "raw_value",
]

"""Turning URL text into store keys and store values into JSON, guided by the store's serdes."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import orjson

from edge.errors import StreamhouseError
from edge.serde import (
    BytesSerde,
    DoubleSerde,
    FloatSerde,
    IntSerde,
    JsonSerde,
    LongSerde,
    StringSerde,
    ValueAndTimestamp,
)


class BadKeyError(StreamhouseError):
    pass


def parse_key(text: str, serde: Any) -> Any:
    """The key as the store's key serde expects it (int for int/long serdes, JSON for json, ...)."""
    try:
        if isinstance(serde, (IntSerde, LongSerde)):
            return int(text)
        if isinstance(serde, (FloatSerde, DoubleSerde)):
            return float(text)
        if isinstance(serde, StringSerde):
            return text
        if isinstance(serde, BytesSerde):
            return text.encode()
        if isinstance(serde, JsonSerde):
            try:
                return orjson.loads(text)
            except orjson.JSONDecodeError:
                return text
    except ValueError as exc:
        raise BadKeyError(f"key {text!r} does not fit the store's key type ({serde!r}): {exc}") from exc
    for candidate in (text,):
        try:
            serde.serialize("", candidate)
            return candidate
        except Exception:
            pass
    try:
        value = orjson.loads(text)
        serde.serialize("", value)
        return value
    except Exception as exc:
        raise BadKeyError(f"key {text!r} cannot be serialized by the store's key serde {serde!r}") from exc


def parse_time(text: str, what: str) -> int:
    """A window bound: epoch milliseconds, or an ISO-8601 instant (``2026-11-24T10:00:00Z``)."""
    try:
        return int(text)
    except ValueError:
        pass
    from datetime import UTC, datetime

    try:
        instant = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadKeyError(
            f"{what} must be epoch milliseconds or an ISO-8601 time "
            f"such as 2026-11-24T10:00:00Z, got {text!r}"
        ) from None
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    return int(instant.timestamp() * 1000)


def windowed_fields(windowed: Any, value: Any) -> dict[str, Any]:
    """One window (or session) of a windowed store answer: key, window bounds, value (+ timestamp)."""
    return {
        "key": to_jsonable(windowed.key),
        "window": {"start": windowed.window.start, "end": windowed.window.end},
        **value_fields(value),
    }


def value_fields(value: Any) -> dict[str, Any]:
    """The ``value`` (and, for timestamped stores, ``timestamp``) fields of an answer.

    A count store holds ``ValueAndTimestamp(300, ts)``; a person asking for a count wants ``300``, so
    the timestamp is a sibling field rather than a wrapper around the value.
    """
    if isinstance(value, ValueAndTimestamp):
        return {"value": to_jsonable(value.value), "timestamp": value.timestamp}
    return {"value": to_jsonable(value)}


def to_jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, ValueAndTimestamp):
        return {"value": to_jsonable(value.value), "timestamp": value.timestamp}
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(value).decode()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    if hasattr(value, "model_dump"):
        return to_jsonable(value.model_dump(mode="json"))
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [to_jsonable(v) for v in value]
    return repr(value)

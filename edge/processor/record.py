"""The record that flows between processor nodes, and the ``Change`` pair KTable nodes forward.

``Record`` is a slotted class, not a dataclass or NamedTuple: one is allocated per record per node
that changes it, so construction cost matters. ``with_*`` return a new record sharing the untouched
fields (headers are shared, never copied: treat them as read-only or replace them with ``with_headers``).
"""

from __future__ import annotations

from typing import Any

Headers = list[tuple[str, bytes | None]]


class Record:
    __slots__ = ("headers", "key", "timestamp", "value")

    def __init__(self, key: Any, value: Any, timestamp: int = 0, headers: Headers | None = None) -> None:
        self.key = key
        self.value = value
        self.timestamp = timestamp
        self.headers = headers

    def with_key(self, key: Any) -> Record:
        return Record(key, self.value, self.timestamp, self.headers)

    def with_value(self, value: Any) -> Record:
        return Record(self.key, value, self.timestamp, self.headers)

    def with_timestamp(self, timestamp: int) -> Record:
        return Record(self.key, self.value, timestamp, self.headers)

    def with_headers(self, headers: Headers | None) -> Record:
        return Record(self.key, self.value, self.timestamp, headers)

    def header(self, name: str) -> bytes | None:
        """Last value of header ``name`` (Kafka's ``lastHeader``), or None."""
        if self.headers:
            for k, v in reversed(self.headers):
                if k == name:
                    return v
        return None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return (
            self.key == other.key
            and self.value == other.value
            and self.timestamp == other.timestamp
            and (self.headers or []) == (other.headers or [])
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Record(key={self.key!r}, value={self.value!r}, timestamp={self.timestamp}, "
            f"headers={self.headers!r})"
        )


class Change:
    """New and old value of one key of a KTable; ``None`` means absent (a tombstone)."""

    __slots__ = ("new", "old")

    def __init__(self, new: Any, old: Any = None) -> None:
        self.new = new
        self.old = old

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Change) and self.new == other.new and self.old == other.old

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Change(new={self.new!r}, old={self.old!r})"


class RecordMetadata:
    """Where the record being processed came from; one mutable instance per task, updated per record."""

    __slots__ = ("headers", "key_bytes", "offset", "partition", "timestamp", "topic", "value_bytes")

    def __init__(self) -> None:
        self.topic: str | None = None
        self.partition: int = -1
        self.offset: int = -1
        self.timestamp: int = -1
        self.key_bytes: bytes | None = None
        self.value_bytes: bytes | None = None
        self.headers: Headers | None = None

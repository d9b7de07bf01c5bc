"""The Serde protocol every key/value (de)serializer implements."""

from __future__ import annotations

from typing import Protocol, TypeVar, runtime_checkable

T = TypeVar("T")


@runtime_checkable
class Serde(Protocol[T]):
    """Two-way conversion between ``T`` and bytes; ``None`` passes through as ``None`` (tombstones).

    ``topic`` is the topic the bytes are read from / written to (for stores: the changelog topic name),
    so topic-aware serdes (schema registries) can be plugged in later. Failures raise ``SerdeError``.
    """

    def serialize(self, topic: str, value: T | None) -> bytes | None: ...

    def deserialize(self, topic: str, data: bytes | None) -> T | None: ...

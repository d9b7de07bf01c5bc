"""Where a task's sinks send serialized records: the Kafka producer in the runtime, memory in the driver."""

from __future__ import annotations

from typing import Protocol

from edge.processor.record import Headers


class RecordCollector(Protocol):
    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers | None,
        partition: int | None = None,
    ) -> None:
        """Queue one record. ``partition=None``: the collector picks it (murmur2 of ``key``)."""

    def partitions_for(self, topic: str) -> int:
        """Partition count of ``topic``; asked only by sinks that have a custom partitioner."""

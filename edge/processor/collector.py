"""Where a task's sinks send serialized records: the Kafka producer in the runtime, memory in the driver."""

from __future__ import annotations

from typing import Protocol

from edge.errors import StreamhouseError
from edge.processor.record import Headers


class CollectorUnusableError(StreamhouseError):
    """The collector cannot take records any more, for a reason of its own (its producer's state), not
    the record's: raised past the processing exception handler to the stream thread, as Kafka Streams'
    ``ProcessorNode.process`` rethrows the RecordCollector's TaskMigratedException rather than handing
    it to the ``ProcessingExceptionHandler`` (a log-and-continue handler would drop every record after
    it)."""


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

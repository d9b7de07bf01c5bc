"""The instance's one producer, seen by tasks as a RecordCollector (sinks, DLQ) and a ChangelogSink.

Sink records are partitioned by librdkafka's ``murmur2_random`` partitioner, which is Kafka's Java
default (murmur2 of the key bytes), so interactive queries can locate a key with
:func:`edge.processor.partitioner.default_partition`. Changelog records carry explicit partitions and
a delivery callback that records the last written offset per changelog partition: those offsets are
what the checkpoint file stores.
"""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from edge.errors import StreamhouseError
from edge.kafka.admin import topic_partitions
from edge.processor.record import Headers

log = logging.getLogger(__name__)


class ProducerSendError(StreamhouseError):
    def __init__(self, message: str, *, topic: str | None = None, error: KafkaError | None = None) -> None:
        self.topic = topic
        self.error = error
        super().__init__(message)


class KafkaCollector:
    """RecordCollector + ChangelogSink over one confluent Producer (transactional under exactly-once)."""

    def __init__(self, producer: Producer, *, exactly_once: bool = False) -> None:
        self.producer = producer
        #: exactly-once: a failed record fails ``commit_transaction``, so sink records carry no
        #: per-record delivery callback (one Python call + Message object less per output record)
        self._sink_cb = None if exactly_once else self._on_delivery
        self._produce = producer.produce
        self._poll = producer.poll
        #: (changelog topic, partition) -> offset of the last acknowledged record
        self.changelog_offsets: dict[tuple[str, int], int] = {}
        self._partitions: dict[str, int] = {}
        self.first_error: tuple[str, KafkaError] | None = None
        self.sent = 0
        self.dlq_topics: set[str] = set()
        self.dlq_sent = 0

    # -- RecordCollector ------------------------------------------------------------------------------
    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers | None,
        partition: int | None = None,
    ) -> None:
        if topic in self.dlq_topics:
            self.dlq_sent += 1
        try:
            self._produce(
                topic,
                value,
                key,
                partition=-1 if partition is None else partition,
                on_delivery=self._sink_cb,
                timestamp=timestamp if timestamp > 0 else 0,
                headers=headers,
            )
        except BufferError:
            self._poll(0.5)
            self._produce(
                topic,
                value,
                key,
                partition=-1 if partition is None else partition,
                on_delivery=self._sink_cb,
                timestamp=timestamp if timestamp > 0 else 0,
                headers=headers,
            )
        self.sent += 1

    def partitions_for(self, topic: str) -> int:
        n = self._partitions.get(topic)
        if n is None:
            count = topic_partitions(self.producer, topic)
            if count is None:
                raise ProducerSendError(f"sink topic {topic!r} does not exist; create it first", topic=topic)
            n = self._partitions[topic] = count
        return n

    # -- ChangelogSink --------------------------------------------------------------------------------
    def send_changelog(
        self, topic: str, partition: int, key: bytes, value: bytes | None, timestamp: int
    ) -> None:
        try:
            self._produce(
                topic,
                value,
                key,
                partition=partition,
                on_delivery=self._on_changelog_delivery,
                timestamp=timestamp if timestamp > 0 else 0,
            )
        except BufferError:
            self._poll(0.5)
            self._produce(
                topic,
                value,
                key,
                partition=partition,
                on_delivery=self._on_changelog_delivery,
                timestamp=timestamp if timestamp > 0 else 0,
            )

    def changelog_sink(self) -> ChangelogSinkAdapter:
        return ChangelogSinkAdapter(self)

    # -- delivery -------------------------------------------------------------------------------------
    def _on_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None and self.first_error is None:
            self.first_error = (msg.topic(), err)

    def _on_changelog_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            if self.first_error is None:
                self.first_error = (msg.topic(), err)
            return
        self.changelog_offsets[(msg.topic(), msg.partition())] = msg.offset()

    def flush(self, timeout_s: float = 60.0) -> None:
        """Wait for every queued record; raise if any failed (at-least-once: nothing is committed then)."""
        remaining = self.producer.flush(timeout_s)
        if remaining:
            raise ProducerSendError(f"{remaining} records were not delivered within {timeout_s:.0f}s")
        self.raise_if_failed()

    def raise_if_failed(self) -> None:
        if self.first_error is not None:
            topic, err = self.first_error
            self.first_error = None
            raise ProducerSendError(f"could not produce to {topic!r}: {err}", topic=topic, error=err)

    def poll(self) -> None:
        self._poll(0)


class ChangelogSinkAdapter:
    """``ChangelogSink.send(topic, partition, key, value, timestamp)`` onto the collector."""

    __slots__ = ("send",)

    def __init__(self, collector: KafkaCollector) -> None:
        self.send = collector.send_changelog


def is_fenced(exc: BaseException) -> bool:
    if not isinstance(exc, KafkaException) or not exc.args:
        return False
    err = exc.args[0]
    if not isinstance(err, KafkaError):
        return False
    return err.code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
    ) or (err.fatal() and "fenc" in str(err).lower())

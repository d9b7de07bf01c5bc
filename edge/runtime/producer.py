"""The instance's producers, seen by tasks as a RecordCollector (sinks, DLQ) and a ChangelogSink.

One producer carries everything under exactly-once (one transaction). Under at-least-once the output
records of sink nodes go through a second one that reports only failed deliveries, so an acknowledged
output record costs no Python call; changelog records, commit markers and dead letters stay on the first.

Sink records are partitioned by librdkafka's ``murmur2_random`` partitioner, which is Kafka's Java
default (murmur2 of the key bytes), so interactive queries can locate a key with
:func:`edge.processor.partitioner.default_partition`. Changelog records carry explicit partitions; the
last acknowledged offset per changelog partition is what the checkpoint file stores: under
at-least-once the commit marker's (the last record of a partition at every commit, the only changelog
record whose delivery report records its offset), under exactly-once every changelog record's.
Every ``produce`` passes its arguments positionally (keywords cost ~0.3 us more per call).

Dead letters (records sent to a dead-letter topic) never stop the app: a dead letter larger than the
producer's ``message.max.bytes`` keeps its key and headers and a truncated value, with the headers
``__streamhouse.errors.value.truncated`` / ``__streamhouse.errors.value.size`` saying so; one the
broker still refuses is logged with the original record's coordinates and counted (``dlq_failed``),
never raised -- otherwise the same bad record would crash every restart. Success is logged from the
delivery report, not before the send.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from edge.errors import StreamhouseError
from edge.kafka.admin import topic_partitions
from edge.processor.collector import CollectorUnusableError
from edge.processor.record import Headers

log = logging.getLogger(__name__)

HEADER_TRUNCATED = "__streamhouse.errors.value.truncated"
HEADER_ORIGINAL_SIZE = "__streamhouse.errors.value.size"
#: room left for the record batch framing when sizing a dead letter against ``message.max.bytes``
_FRAMING_BYTES = 1024


class ProducerFatalError(CollectorUnusableError):
    """The transactional producer can do nothing more: a fatal error other than fencing (librdkafka:
    INVALID_TXN_STATE ending a transaction that a timed-out batch had already doomed, during a
    coordinator failover), a transactional call stuck in librdkafka, or a transaction that failed under
    it (``produce()`` then answers ``_STATE``). The tasks close without a commit and a new producer takes
    over (``init_transactions`` bumps the epoch and aborts what is left), as Kafka Streams does for a
    producer it cannot use (``TaskManager.handleLostAll`` -> ``reInitializeProducer``)."""


def _raise_if_transaction_failed(exc: KafkaException, topic: str) -> None:
    """librdkafka's ``produce()`` refuses every record with ``_STATE`` once the open transaction failed
    (an abortable error: seen in a clean bounce of the write leader, OUT_OF_ORDER_SEQUENCE_NUMBER
    "requires epoch bump"). Kafka Streams gets the same error from the failed batch's callback
    (``RecordCollectorImpl.recordSendError``: OutOfOrderSequenceException and the fencing errors are
    TaskMigratedException)."""
    err = exc.args[0] if exc.args else None
    if isinstance(err, KafkaError) and err.code() == KafkaError._STATE:
        raise ProducerFatalError(
            f"the transactional producer refused a record for {topic!r} ({err.str()}): its transaction "
            "failed (the client log's TXNERR line says why)"
        ) from exc


class ProducerSendError(StreamhouseError):
    def __init__(self, message: str, *, topic: str | None = None, error: KafkaError | None = None) -> None:
        self.topic = topic
        self.error = error
        super().__init__(message)


class KafkaCollector:
    """RecordCollector + ChangelogSink over the instance's confluent Producer (transactional under
    exactly-once), with sink records on a producer of their own when one is given."""

    def __init__(
        self,
        producer: Producer,
        *,
        exactly_once: bool = False,
        max_message_bytes: int = 1_000_000,
        sink_producer: Producer | None = None,
    ) -> None:
        self.producer = producer
        #: at-least-once: sink records may go through a producer of their own, configured with
        #: ``delivery.report.only.error``: a successful output record then costs no delivery report (a
        #: Message object and a Python call, ~0.16 us measured: a twentieth of the count's per-record
        #: time), a failed one still reaches ``_on_delivery``. Changelog records and their commit markers
        #: stay on ``producer``: the markers' success reports give the checkpoint its offsets, and one
        #: producer keeps a marker behind the changelog records it covers.
        self.sink_producer = producer if sink_producer is None else sink_producer
        self._produce_sink = self.sink_producer.produce
        self._poll_sink = None if sink_producer is None else sink_producer.poll
        #: the producer's ``message.max.bytes``: dead letters are truncated to fit it
        self.max_message_bytes = max_message_bytes
        #: exactly-once: a failed record fails ``commit_transaction``, so sink records carry no
        #: per-record delivery callback (one Python call + Message object less per output record)
        self._sink_cb = None if exactly_once else self._on_delivery
        #: at-least-once: every commit ends each changelog partition it wrote with a commit marker
        #: (:meth:`send_marker`), the last record there before the producer is flushed, so the marker's
        #: offset is the one the checkpoint needs and the records before it only report errors (no
        #: ``msg.topic()/partition()/offset()`` and dict write per record). Exactly-once writes no markers:
        #: every changelog record reports its offset (the checkpoint written on a clean close).
        self._changelog_cb = self._on_changelog_delivery if exactly_once else self._on_delivery
        self._produce = producer.produce
        self._poll = producer.poll
        #: (changelog topic, partition) -> offset of the last acknowledged record
        self.changelog_offsets: dict[tuple[str, int], int] = {}
        #: changelog partitions written since their last commit marker (see :mod:`edge.runtime.markers`)
        self.marker_due: set[tuple[str, int]] = set()
        self._partitions: dict[str, int] = {}
        self.first_error: tuple[str, KafkaError] | None = None
        #: while a commit's flush waits on sends: (records not delivered yet, since when (monotonic),
        #: the flush's timeout in s); read by ``/health``
        self.undelivered: tuple[int, float, float] | None = None
        self.sent = 0
        self.dlq_topics: set[str] = set()
        self.dlq_sent = 0
        #: dead letters whose value was truncated to fit ``message.max.bytes``
        self.dlq_truncated = 0
        #: dead letters that could not be delivered at all (logged, counted, never raised)
        self.dlq_failed = 0
        #: dead letters acknowledged by the broker
        self.dlq_delivered = 0
        #: set by the runtime: True while no broker answers (ends a flush early)
        self.cluster_unreachable: Callable[[], bool] = lambda: False

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
            self._send_dead_letter(topic, key, value, timestamp, headers, partition)
            self.sent += 1
            return
        # positional arguments: confluent-kafka parses keywords ~0.3 us slower per call (measured);
        # the order is produce(topic, value, key, partition, callback, on_delivery, timestamp, headers)
        try:
            try:
                self._produce_sink(
                    topic,
                    value,
                    key,
                    -1 if partition is None else partition,
                    self._sink_cb,
                    None,
                    timestamp if timestamp > 0 else 0,
                    headers,
                )
            except BufferError:
                self.sink_producer.poll(0.5)
                self._produce_sink(
                    topic,
                    value,
                    key,
                    -1 if partition is None else partition,
                    self._sink_cb,
                    None,
                    timestamp if timestamp > 0 else 0,
                    headers,
                )
        except KafkaException as exc:
            _raise_if_transaction_failed(exc, topic)
            raise
        self.sent += 1

    # -- dead letters ---------------------------------------------------------------------------------
    def _send_dead_letter(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers | None,
        partition: int | None,
    ) -> None:
        headers = list(headers or ())
        fixed = len(key or b"") + sum(len(k) + len(v or b"") for k, v in headers) + _FRAMING_BYTES
        budget = self.max_message_bytes - fixed - 64  # 64: the two headers added below
        if value is not None and len(value) > budget:
            original = len(value)
            value = value[: max(budget, 0)]
            headers += [(HEADER_TRUNCATED, b"true"), (HEADER_ORIGINAL_SIZE, str(original).encode())]
            self.dlq_truncated += 1
            log.warning(
                "dead letter for %s is %d bytes, over message.max.bytes (%d): sending its headers and "
                "the first %d bytes of its value (header %s=true)",
                _origin(headers),
                original,
                self.max_message_bytes,
                len(value),
                HEADER_TRUNCATED,
            )
        kwargs = {
            "partition": -1 if partition is None else partition,
            "on_delivery": self._on_dlq_delivery,
            "timestamp": timestamp if timestamp > 0 else 0,
            "headers": headers,
        }
        try:
            try:
                self._produce(topic, value, key, **kwargs)
            except BufferError:
                self._poll(0.5)
                self._produce(topic, value, key, **kwargs)
        except (KafkaException, BufferError, ValueError, TypeError) as exc:
            if isinstance(exc, KafkaException):
                _raise_if_transaction_failed(exc, topic)
            self.dlq_failed += 1
            log.error(
                "could not send the dead letter for %s to %s (%s); it is lost, processing continues",
                _origin(headers),
                topic,
                exc,
            )

    def _on_dlq_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            self.dlq_failed += 1
            log.error(
                "dead letter for %s was not delivered to %s (%s); it is lost, processing continues",
                _origin(msg.headers()),
                msg.topic(),
                err,
            )
            return
        self.dlq_delivered += 1
        log.warning(
            "sent the dead letter for %s to %s [%d] at offset %d",
            _origin(msg.headers()),
            msg.topic(),
            msg.partition(),
            msg.offset(),
        )

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
        self.marker_due.add((topic, partition))
        # one frame and positional arguments: this runs once per store write (see ``send``)
        try:
            try:
                self._produce(
                    topic, value, key, partition, self._changelog_cb, None, timestamp if timestamp > 0 else 0
                )
            except BufferError:
                self._poll(0.5)
                self._produce(
                    topic, value, key, partition, self._changelog_cb, None, timestamp if timestamp > 0 else 0
                )
        except KafkaException as exc:
            _raise_if_transaction_failed(exc, topic)
            raise

    def send_marker(self, topic: str, partition: int, key: bytes, value: bytes) -> None:
        """A commit marker (:mod:`edge.runtime.markers`): acknowledged like a changelog record, so the
        checkpoint ends on it."""
        self.marker_due.discard((topic, partition))
        try:
            try:
                self._produce(topic, value, key, partition, self._on_changelog_delivery)
            except BufferError:
                self._poll(0.5)
                self._produce(topic, value, key, partition, self._on_changelog_delivery)
        except KafkaException as exc:
            _raise_if_transaction_failed(exc, topic)
            raise

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
        """Wait for every queued record; raise if any failed (at-least-once: nothing is committed then).

        Waits in slices of a second and stops early once ``cluster_unreachable()`` says no broker
        answers (:mod:`edge.runtime.connectivity`): the commit then fails at once instead of blocking
        the stream thread for ``timeout_s``, and the tasks resume from the last commit later."""
        started = time.monotonic()
        deadline = started + timeout_s
        try:
            for producer in self.producers:
                remaining = producer.flush(min(timeout_s, 1.0))
                while remaining and (left := deadline - time.monotonic()) > 0:
                    # for /health: a commit waiting on sends is what a partition without a leader
                    # looks like from here, long before the deadline stops the instance
                    self.undelivered = (remaining, started, timeout_s)
                    # served by the first producer only: its statistics and errors tell the watchdog
                    # whether the cluster answers (the sink producer's stay away from it), also while
                    # the sink producer is the one flushed
                    self._poll(0)
                    if self.cluster_unreachable():
                        raise ProducerSendError(
                            f"{remaining} records were not delivered: no broker of the cluster answers",
                            error=KafkaError(KafkaError._ALL_BROKERS_DOWN),
                        )
                    remaining = producer.flush(min(left, 1.0))
                if remaining:
                    raise ProducerSendError(f"{remaining} records were not delivered within {timeout_s:.0f}s")
        finally:
            self.undelivered = None
        self.raise_if_failed()

    def replace_producer(self, producer: Producer) -> None:
        """Exactly-once after an outage: a new transactional producer takes every record over."""
        self.producer = self.sink_producer = producer
        self._produce = self._produce_sink = producer.produce
        self._poll = producer.poll
        self._poll_sink = None

    def release_clients(self) -> None:
        """At shutdown, after the last flush: drop every handle on the producers (bound methods
        included), so librdkafka's threads end now rather than whenever the app is collected."""
        self.producer = self.sink_producer = None  # type: ignore[assignment]
        self._produce = self._produce_sink = self._poll = self._poll_sink = None  # type: ignore[assignment]

    @property
    def producers(self) -> tuple[Producer, ...]:
        """Every producer behind this collector (the sink producer first, when there is one)."""
        sink = self.sink_producer
        return (self.producer,) if sink is self.producer else (sink, self.producer)

    def raise_if_failed(self) -> None:
        if self.first_error is not None:
            topic, err = self.first_error
            self.first_error = None
            raise ProducerSendError(f"could not produce to {topic!r}: {err}", topic=topic, error=err)

    def poll(self) -> None:
        self._poll(0)
        if self._poll_sink is not None:
            self._poll_sink(0)


def _origin(headers: Any) -> str:
    """``topic-partition@offset`` of the record a dead letter carries (from its error headers)."""
    found: dict[str, str] = {}
    for k, v in headers or ():
        if k in ("__streams.errors.topic", "__streams.errors.partition", "__streams.errors.offset"):
            found[k.rsplit(".", 1)[1]] = (v or b"").decode(errors="replace")
    if not found:
        return "a record"
    return f"{found.get('topic', '?')}-{found.get('partition', '?')}@{found.get('offset', '?')}"


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

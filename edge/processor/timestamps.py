"""Timestamp extractors (Kafka Streams' ``TimestampExtractor``): which time a source record carries.

An extractor is asked once per source record, after its key and value are deserialized, and returns the
record's event time in epoch milliseconds::

    extractor.extract(record, partition_time) -> int

``record`` exposes ``topic``, ``partition``, ``offset``, ``timestamp`` (the Kafka record timestamp),
``key``, ``value`` (deserialized) and ``headers``; ``partition_time`` is the largest timestamp extracted
so far from the same partition (-1 before the first one). Any plain callable
``(record, partition_time) -> int`` is an extractor too.

Where it applies: ``Consumed.with_timestamp_extractor(extractor)`` per source (``stream()`` /
``table()``), else the config's ``default.timestamp.extractor`` (``edge.processor.StreamsConfig``
``default_timestamp_extractor``; runtime setting ``default.timestamp.extractor``).

Invalid timestamps, as in Kafka Streams:

* an extractor that *returns* a negative timestamp drops the record with a warning; the task counts it in
  ``dropped_records`` (``LogAndSkipOnInvalidTimestamp`` does this for negative record timestamps);
* an extractor that *raises* (``FailOnInvalidTimestamp``, the default, raises
  :class:`InvalidTimestampError` for a negative record timestamp) hands the record to the
  deserialization exception handler: the default ``fail`` handler stops the task (Kafka: a fatal
  ``StreamsException``); ``continue`` / ``dlq`` skip it (Kafka has no such choice: there an extractor
  exception is always fatal).

The default extractor costs nothing on the per-record path: the task does not call it for a record whose
Kafka timestamp is >= 0 (see :func:`is_record_timestamp`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any, Protocol

from edge.errors import StreamhouseError
from edge.processor.record import Headers
from edge.processor.record_warnings import warn_record

log = logging.getLogger(__name__)


class InvalidTimestampError(StreamhouseError):
    """An extractor found no valid timestamp for a record (Kafka: ``StreamsException``)."""


class ConsumedRecord:
    """What an extractor sees of a source record: where it came from and its deserialized key/value."""

    __slots__ = ("headers", "key", "offset", "partition", "timestamp", "topic", "value")

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        timestamp: int,
        key: Any,
        value: Any,
        headers: Headers | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers

    def __repr__(self) -> str:
        return (
            f"ConsumedRecord({self.topic}-{self.partition}@{self.offset}, timestamp={self.timestamp}, "
            f"key={self.key!r}, value={self.value!r})"
        )


class TimestampExtractor(Protocol):
    def extract(self, record: ConsumedRecord, partition_time: int) -> int: ...


def _where(record: ConsumedRecord) -> str:
    return f"{record.topic}-{record.partition}@{record.offset}"


class FailOnInvalidTimestamp:
    """Kafka's default: the record's own timestamp; a negative one raises :class:`InvalidTimestampError`."""

    def extract(self, record: ConsumedRecord, partition_time: int) -> int:
        ts = record.timestamp
        if ts < 0:
            return self.on_invalid(record, ts, partition_time)
        return ts

    def on_invalid(self, record: ConsumedRecord, timestamp: int, partition_time: int) -> int:
        raise InvalidTimestampError(
            f"record {_where(record)} has an invalid (negative) timestamp {timestamp}: the producer probably "
            "does not set timestamps. Use a timestamp extractor that reads the event time from the payload "
            "(PayloadFieldTimestampExtractor), LogAndSkipOnInvalidTimestamp or "
            "UsePartitionTimeOnInvalidTimestamp"
        )


#: the record-timestamp extractor under the name of its behaviour
RecordTimestampExtractor = FailOnInvalidTimestamp


class LogAndSkipOnInvalidTimestamp(FailOnInvalidTimestamp):
    """The record's own timestamp; a negative one is returned as is, so the record is dropped (logged,
    counted in the task's ``dropped_records``)."""

    def on_invalid(self, record: ConsumedRecord, timestamp: int, partition_time: int) -> int:
        warn_record(
            log,
            "records with an invalid timestamp skipped",
            "record %s has an invalid timestamp %d; it will be skipped",
            _where(record),
            timestamp,
        )
        return timestamp


class UsePartitionTimeOnInvalidTimestamp(FailOnInvalidTimestamp):
    """The record's own timestamp; a negative one is replaced by the partition time (the largest timestamp
    seen on the partition), or raises when the partition has none yet."""

    def on_invalid(self, record: ConsumedRecord, timestamp: int, partition_time: int) -> int:
        if partition_time < 0:
            raise InvalidTimestampError(
                f"record {_where(record)} has an invalid timestamp {timestamp} and its partition has no "
                "valid timestamp yet to use instead"
            )
        return partition_time


class WallclockTimestampExtractor:
    """Processing time: the system clock when the record is read (its own timestamp is ignored)."""

    def extract(self, record: ConsumedRecord, partition_time: int) -> int:
        return time.time_ns() // 1_000_000


def to_epoch_ms(value: Any) -> int:
    """An int (ms), a float (ms), a ``datetime`` (naive = UTC), a ``date`` or an ISO-8601 string -> ms.

    Raises ``ValueError``/``TypeError`` for anything else."""
    if isinstance(value, bool):
        raise TypeError(f"a timestamp cannot be a bool ({value!r})")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        value = datetime.fromisoformat(text)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return int(value.timestamp() * 1000)
    if isinstance(value, date):
        return to_epoch_ms(datetime(value.year, value.month, value.day, tzinfo=UTC))
    raise TypeError(f"cannot read a timestamp from {type(value).__name__} {value!r}")


class PayloadFieldTimestampExtractor:
    """Event time from a field of a mapping value: ``PayloadFieldTimestampExtractor("ts")``.

    The field holds epoch milliseconds (int) or an ISO-8601 string (``2026-01-02T03:04:05Z``; no zone
    means UTC). A record whose value has no such field, or an unreadable one, goes to ``fallback``
    (another extractor, e.g. ``LogAndSkipOnInvalidTimestamp()``); without a fallback it raises
    :class:`InvalidTimestampError`. ``field`` may be a dotted path (``"meta.event_time"``).
    """

    def __init__(self, field: str, fallback: TimestampExtractor | Callable[..., int] | None = None) -> None:
        if not field:
            raise ValueError("PayloadFieldTimestampExtractor needs a field name")
        self.field = field
        self._path = field.split(".")
        self.fallback = None if fallback is None else as_extractor(fallback)

    def extract(self, record: ConsumedRecord, partition_time: int) -> int:
        value: Any = record.value
        try:
            for part in self._path:
                value = value[part]
            if value is None:
                raise KeyError(self.field)
            return to_epoch_ms(value)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            if self.fallback is not None:
                return self.fallback.extract(record, partition_time)
            raise InvalidTimestampError(
                f"record {_where(record)}: no valid timestamp in field {self.field!r} of its value "
                f"({type(exc).__name__}: {exc})"
            ) from exc

    def __repr__(self) -> str:
        return f"PayloadFieldTimestampExtractor({self.field!r})"


class CallableTimestampExtractor:
    """Adapts a plain function ``fn(record, partition_time) -> int`` (or ``datetime``) to an extractor."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[ConsumedRecord, int], Any]) -> None:
        self.fn = fn

    def extract(self, record: ConsumedRecord, partition_time: int) -> int:
        ts = self.fn(record, partition_time)
        return ts if ts.__class__ is int else to_epoch_ms(ts)

    def __repr__(self) -> str:
        return f"CallableTimestampExtractor({self.fn!r})"


_NAMED: dict[str, Callable[[], Any]] = {
    "record": FailOnInvalidTimestamp,
    "fail": FailOnInvalidTimestamp,
    "fail_on_invalid_timestamp": FailOnInvalidTimestamp,
    "log_and_skip": LogAndSkipOnInvalidTimestamp,
    "log_and_skip_on_invalid_timestamp": LogAndSkipOnInvalidTimestamp,
    "use_partition_time": UsePartitionTimeOnInvalidTimestamp,
    "use_partition_time_on_invalid_timestamp": UsePartitionTimeOnInvalidTimestamp,
    "wallclock": WallclockTimestampExtractor,
    "wallclock_timestamp_extractor": WallclockTimestampExtractor,
}
#: names accepted by :func:`as_extractor` (and the ``default.timestamp.extractor`` setting); ``field:<name>``
#: is a :class:`PayloadFieldTimestampExtractor`
EXTRACTOR_NAMES = ("record", "log_and_skip", "use_partition_time", "wallclock", "field:<name>")


def as_extractor(obj: Any) -> Any:
    """An extractor from an extractor, an extractor class, a name (``EXTRACTOR_NAMES``, also Kafka's
    class names) or a callable ``(record, partition_time) -> int``."""
    if obj is None:
        return FailOnInvalidTimestamp()
    if isinstance(obj, str):
        text = obj.strip()
        if text.lower().startswith("field:"):
            return PayloadFieldTimestampExtractor(text[len("field:") :].strip())
        key = text.rsplit(".", 1)[-1]
        key = "".join("_" + c.lower() if c.isupper() else c for c in key).lstrip("_").lower()
        factory = _NAMED.get(key)
        if factory is None:
            raise ValueError(f"unknown timestamp extractor {obj!r}; known: {', '.join(EXTRACTOR_NAMES)}")
        return factory()
    if isinstance(obj, type):
        return as_extractor(obj())
    if callable(getattr(obj, "extract", None)):
        return obj
    if callable(obj):
        return CallableTimestampExtractor(obj)
    raise TypeError(
        f"a timestamp extractor must have extract(record, partition_time) or be a callable, got {obj!r}"
    )


def is_record_timestamp(extractor: Any) -> bool:
    """True for the default extractor (record timestamp, fail when negative): the task then skips the
    call for every record with a non-negative timestamp."""
    return extractor is None or type(extractor) is FailOnInvalidTimestamp


__all__ = [
    "EXTRACTOR_NAMES",
    "CallableTimestampExtractor",
    "ConsumedRecord",
    "FailOnInvalidTimestamp",
    "InvalidTimestampError",
    "LogAndSkipOnInvalidTimestamp",
    "PayloadFieldTimestampExtractor",
    "RecordTimestampExtractor",
    "TimestampExtractor",
    "UsePartitionTimeOnInvalidTimestamp",
    "WallclockTimestampExtractor",
    "as_extractor",
    "is_record_timestamp",
    "to_epoch_ms",
]

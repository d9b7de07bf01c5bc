"""The runtime pieces of a task's graph that are not user processors: sources and sinks.

A ``SourceNode`` holds the deserializers of its topics; the task deserializes there so a bad record is
routed to the deserialization handler before any processor sees it. A ``SinkProcessor`` serializes and
hands bytes to the task's :class:`~edge.processor.collector.RecordCollector`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from edge.errors import SerdeError, TopologyError
from edge.processor.api import Processor, ProcessorContext
from edge.processor.record import Record
from edge.serde import Serde

TopicChooser = Callable[..., str]
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
#: partitioner(topic, key, value, num_partitions) -> partition (or None for the default).
StreamPartitioner = Callable[[str, Any, Any, int], "int | None"]


@dataclass(slots=True)
class SourceNode:
    name: str
    topics: list[str]
    key_serde: Serde
    value_serde: Serde
    children: list[str] = field(default_factory=list)
    #: the source's timestamp extractor (:mod:`edge.processor.timestamps`), resolved; None = the record
    #: timestamp, failing on negative ones
    timestamp_extractor: Any = None


@dataclass(slots=True)
class ProcessorNodeSpec:
    """One processor of a task: its instance, its children (by name) and the stores it may use."""

    name: str
    processor: Processor
    children: list[str] = field(default_factory=list)
    stores: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RecordContext:
    """What Kafka's ``TopicNameExtractor.extract(key, value, RecordContext)`` sees: where the record
    being written came from (None where unknown, e.g. a punctuator's output) and its headers."""

    topic: str | None
    partition: int | None
    offset: int | None
    timestamp: int
    headers: Any


def _takes_record_context(extractor: Callable[..., Any]) -> bool:
    """A 3-argument extractor gets ``(key, value, RecordContext)``; a 2-argument one ``(key, value)``."""
    target = getattr(extractor, "extract", extractor)
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    return len(positional) >= 3


class SinkProcessor(Processor):
    """Serializes and sends. ``extractor``: Kafka's TopicNameExtractor, a callable ``(key, value)`` or
    ``(key, value, record_context)`` (or an object with such an ``extract`` method). A serialization
    error goes to the production exception handler (``default.production.exception.handler``): ``fail``
    raises it with the sink and topic named, ``continue`` drops the record (logged, counted as dropped),
    as Kafka's ``ProductionExceptionHandler.handleSerializationException``."""

    __slots__ = (
        "_context",
        "_continue_on_error",
        "_extract",
        "_extractor",
        "_key_ser",
        "_partitioner",
        "_partitions_for",
        "_send",
        "_topic",
        "_value_ser",
        "_with_context",
    )

    def __init__(
        self,
        topic: str | None,
        extractor: TopicChooser | None,
        key_serde: Serde,
        value_serde: Serde,
        partitioner: StreamPartitioner | None = None,
    ) -> None:
        self._topic = topic
        self._extractor = extractor
        self._extract = None if extractor is None else getattr(extractor, "extract", extractor)
        self._with_context = extractor is not None and _takes_record_context(extractor)
        self._key_ser = key_serde.serialize
        self._value_ser = value_serde.serialize
        self._partitioner = partitioner
        self._continue_on_error = False
        if topic is not None and partitioner is None:
            self.process = self._process_fixed  # type: ignore[method-assign]

    def init(self, context: ProcessorContext) -> None:
        self._context = context
        collector = context.record_collector  # type: ignore[attr-defined]
        self._send = collector.send
        self._partitions_for = collector.partitions_for
        config = getattr(getattr(context, "_task", None), "config", None)
        self._continue_on_error = getattr(config, "production_exception_handler", "fail") == "continue"

    def _serialization_failed(self, topic: str, record: Record, exc: Exception) -> None:
        ctx = self._context
        where = f"sink {getattr(ctx, 'node_name', '?')!r}, topic {topic!r}"
        if not self._continue_on_error:
            raise SerdeError(
                f"could not serialize a record for {where}: {exc} "
                "(set default.production.exception.handler=continue to skip such records)",
                topic=topic,
            ) from exc
        from edge.processor.ops.dropped import skip_record

        skip_record(
            ctx, f"a serialization error for {where} ({exc})", cause=f"a serialization error for {where}"
        )

    def _process_fixed(self, record: Record) -> None:
        """``process`` for a fixed topic and the default partitioner (the common case)."""
        topic = self._topic
        try:
            key = self._key_ser(topic, record.key)
            value = self._value_ser(topic, record.value)
        except Exception as exc:
            self._serialization_failed(topic, record, exc)  # type: ignore[arg-type]
            return
        self._send(topic, key, value, record.timestamp, record.headers, None)

    def process(self, record: Record) -> None:
        topic = self._topic
        key = record.key
        value = record.value
        if topic is None:
            if self._with_context:
                ctx = self._context
                rc = RecordContext(ctx.topic, ctx.partition, ctx.offset, record.timestamp, record.headers)
                topic = self._extract(key, value, rc)  # type: ignore[misc]
            else:
                topic = self._extract(key, value)  # type: ignore[misc]
            if not isinstance(topic, str) or not _LEGAL_TOPIC.match(topic) or topic in (".", ".."):
                raise TopologyError(
                    f"the topic name extractor of sink {getattr(self._context, 'node_name', '?')!r} "
                    f"returned {topic!r}, not a legal topic name"
                )
        partition = None
        if self._partitioner is not None:
            partition = self._partitioner(topic, key, value, self._partitions_for(topic))
        try:
            key_bytes = self._key_ser(topic, key)
            value_bytes = self._value_ser(topic, value)
        except Exception as exc:
            self._serialization_failed(topic, record, exc)
            return
        self._send(topic, key_bytes, value_bytes, record.timestamp, record.headers, partition)

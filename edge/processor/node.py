"""The runtime pieces of a task's graph that are not user processors: sources and sinks.

A ``SourceNode`` holds the deserializers of its topics; the task deserializes there so a bad record is
routed to the deserialization handler before any processor sees it. A ``SinkProcessor`` serializes and
hands bytes to the task's :class:`~edge.processor.collector.RecordCollector`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from edge.processor.api import Processor, ProcessorContext
from edge.processor.record import Record
from edge.serde import Serde

TopicChooser = Callable[[Any, Any], str]
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


class SinkProcessor(Processor):
    __slots__ = ("_extractor", "_key_ser", "_partitioner", "_partitions_for", "_send", "_topic", "_value_ser")

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
        self._key_ser = key_serde.serialize
        self._value_ser = value_serde.serialize
        self._partitioner = partitioner
        if topic is not None and partitioner is None:
            self.process = self._process_fixed  # type: ignore[method-assign]

    def init(self, context: ProcessorContext) -> None:
        collector = context.record_collector  # type: ignore[attr-defined]
        self._send = collector.send
        self._partitions_for = collector.partitions_for

    def _process_fixed(self, record: Record) -> None:
        """``process`` for a fixed topic and the default partitioner (the common case)."""
        topic = self._topic
        self._send(
            topic,
            self._key_ser(topic, record.key),
            self._value_ser(topic, record.value),
            record.timestamp,
            record.headers,
            None,
        )

    def process(self, record: Record) -> None:
        topic = self._topic
        if topic is None:
            topic = self._extractor(record.key, record.value)  # type: ignore[misc]
        key = record.key
        value = record.value
        partition = None
        if self._partitioner is not None:
            partition = self._partitioner(topic, key, value, self._partitions_for(topic))
        self._send(
            topic,
            self._key_ser(topic, key),
            self._value_ser(topic, value),
            record.timestamp,
            record.headers,
            partition,
        )

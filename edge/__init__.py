"""Streamhouse edge: a Python Kafka Streams.

Describe a topology with the DSL (:class:`StreamsBuilder`) or the Processor API (:class:`Topology`),
test it in-process with :class:`TopologyTestDriver`, run it on Kafka with the runtime (:class:`KafkaStreams`).
"""

from __future__ import annotations

import importlib
from typing import Any

# Lazy (PEP 562): importing ``edge.errors`` or ``edge.serde`` must not pull in the whole DSL and RocksDB.
_EXPORTS = {
    "Branched": "edge.dsl",
    "CogroupedKStream": "edge.dsl",
    "Consumed": "edge.dsl",
    "DeadLetterQueueHandler": "edge.processor",
    "EmitStrategy": "edge.dsl",
    "FailOnInvalidTimestamp": "edge.processor.timestamps",
    "GlobalKTable": "edge.dsl",
    "Grouped": "edge.dsl",
    "JoinWindows": "edge.dsl",
    "Joined": "edge.dsl",
    "KafkaStreams": "edge.runtime",
    "KGroupedStream": "edge.dsl",
    "KGroupedTable": "edge.dsl",
    "KStream": "edge.dsl",
    "KTable": "edge.dsl",
    "LogAndContinueHandler": "edge.processor",
    "LogAndFailHandler": "edge.processor",
    "LogAndSkipOnInvalidTimestamp": "edge.processor.timestamps",
    "Materialized": "edge.dsl",
    "Named": "edge.dsl",
    "PayloadFieldTimestampExtractor": "edge.processor.timestamps",
    "ProcessingFailed": "edge.processor",
    "Processor": "edge.processor",
    "ProcessorContext": "edge.processor",
    "Produced": "edge.dsl",
    "PunctuationType": "edge.processor",
    "Record": "edge.processor",
    "Repartitioned": "edge.dsl",
    "Serde": "edge.serde",
    "SerdeError": "edge.errors",
    "Serdes": "edge.serde",
    "SessionWindow": "edge.serde.windowed",
    "SessionWindows": "edge.dsl",
    "SlidingWindows": "edge.dsl",
    "StateStoreError": "edge.errors",
    "Stores": "edge.state.stores",
    "StreamThreadExceptionResponse": "edge.runtime",
    "StreamJoined": "edge.dsl",
    "StreamhouseError": "edge.errors",
    "StreamsBuilder": "edge.dsl",
    "StreamsConfig": "edge.processor",
    "TaskConfig": "edge.processor",
    "Suppressed": "edge.dsl",
    "TableJoined": "edge.dsl",
    "TestInputTopic": "edge.testing",
    "TestOutputTopic": "edge.testing",
    "TestRecord": "edge.testing",
    "TimeWindow": "edge.serde.windowed",
    "TimeWindows": "edge.dsl",
    "Topology": "edge.topology",
    "TopologyError": "edge.errors",
    "TopologyTestDriver": "edge.testing",
    "UsePartitionTimeOnInvalidTimestamp": "edge.processor.timestamps",
    "WallclockTimestampExtractor": "edge.processor.timestamps",
    "Windowed": "edge.serde.windowed",
    "WindowedSerdes": "edge.serde.windowed",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'edge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

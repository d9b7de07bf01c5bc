"""Streamhouse edge: a Python Kafka Streams.

Describe a topology with the DSL (:class:`StreamsBuilder`) or the Processor API (:class:`Topology`),
test it in-process with :class:`TopologyTestDriver`, run it on Kafka with the runtime.
"""

from __future__ import annotations

import importlib
from typing import Any

# Lazy (PEP 562): importing ``edge.errors`` or ``edge.serde`` must not pull in the whole DSL and RocksDB.
_EXPORTS = {
    "Branched": "edge.dsl",
    "Consumed": "edge.dsl",
    "DeadLetterQueueHandler": "edge.processor",
    "GlobalKTable": "edge.dsl",
    "Grouped": "edge.dsl",
    "Joined": "edge.dsl",
    "KGroupedStream": "edge.dsl",
    "KGroupedTable": "edge.dsl",
    "KStream": "edge.dsl",
    "KTable": "edge.dsl",
    "LogAndContinueHandler": "edge.processor",
    "LogAndFailHandler": "edge.processor",
    "Materialized": "edge.dsl",
    "Named": "edge.dsl",
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
    "StateStoreError": "edge.errors",
    "StreamhouseError": "edge.errors",
    "StreamsBuilder": "edge.dsl",
    "StreamsConfig": "edge.processor",
    "TestInputTopic": "edge.testing",
    "TestOutputTopic": "edge.testing",
    "TestRecord": "edge.testing",
    "Topology": "edge.topology",
    "TopologyError": "edge.errors",
    "TopologyTestDriver": "edge.testing",
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

"""Test utilities: the TopologyTestDriver and its input/output topics."""

from __future__ import annotations

from edge.testing.driver import (
    NoRecordError,
    ReadOnlyStoreFacade,
    TestInputTopic,
    TestOutputTopic,
    TestRecord,
    TopologyTestDriver,
)

__all__ = [
    "NoRecordError",
    "ReadOnlyStoreFacade",
    "TestInputTopic",
    "TestOutputTopic",
    "TestRecord",
    "TopologyTestDriver",
]

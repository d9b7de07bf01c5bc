"""Shared fixtures of the edge tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from edge.processor.record_warnings import RECORD_WARNINGS


@pytest.fixture(autouse=True)
def _fresh_record_warnings() -> Iterator[None]:
    """Per-record warnings are summarised process-wide (one line per cause per 10 s): each test starts
    with none seen, so its first skipped record is logged as Kafka logs it whatever ran before."""
    RECORD_WARNINGS.reset()
    yield
    RECORD_WARNINGS.reset()

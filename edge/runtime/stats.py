"""Counters the stream thread keeps for ``/metrics``, and the error handlers it counts through.

Plain attributes incremented on the hot path; the metrics endpoint reads them when scraped.
"""

from __future__ import annotations

import time
from typing import Any

from edge.processor.handlers import (
    DeadLetterQueueHandler,
    ErrorContext,
    ErrorResponse,
    LogAndContinueHandler,
    LogAndFailHandler,
)
from edge.runtime.restore import RestoreProgress


class CountingHandler:
    """Wraps an exception handler to count errors and dead letters for the metrics endpoint."""

    def __init__(self, inner: Any, kind: str, counters: dict[str, int]) -> None:
        self.inner = inner
        self.kind = kind
        self.counters = counters

    def handle(self, error: ErrorContext) -> ErrorResponse:
        response = self.inner.handle(error)
        c = self.counters
        c[f"{self.kind}_errors"] = c.get(f"{self.kind}_errors", 0) + 1
        if response.dead_letters:
            c["dead_letters"] = c.get("dead_letters", 0) + len(response.dead_letters)
        return response


def build_handler(name: str, obj: Any, dlq_topic: str | None) -> Any:
    if obj is not None:
        return obj
    if name == "continue":
        return LogAndContinueHandler()
    if name == "dlq":
        return DeadLetterQueueHandler(dlq_topic)  # type: ignore[arg-type]
    return LogAndFailHandler()


class RuntimeStats:
    """Plain counters updated by the stream thread; the metrics endpoint reads them."""

    def __init__(self) -> None:
        self.records_processed = 0
        self.batches = 0
        self.process_seconds = 0.0
        self.last_rate = 0.0
        self._rate_mark = (time.monotonic(), 0)
        self.errors: dict[str, int] = {}
        self.consumer_lag: dict[tuple[str, int], int] = {}
        self.store_sizes: dict[tuple[str, str], int] = {}
        self.standby_store_sizes: dict[tuple[str, str], int] = {}
        self.restores: list[RestoreProgress] = []
        self.restored_records = 0
        #: wall-clock seconds spent restoring active tasks (all partitions of a rebalance restore together)
        self.restore_seconds = 0.0
        self.rebalances = 0
        self.replaced_threads = 0
        self.first_output_at: float | None = None

    def tick_rate(self) -> None:
        now = time.monotonic()
        t0, n0 = self._rate_mark
        if now - t0 >= 1.0:
            self.last_rate = (self.records_processed - n0) / (now - t0)
            self._rate_mark = (now, self.records_processed)

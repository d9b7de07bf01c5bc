"""What every benchmark and hook of the quick set gets: ``BenchContext``, and a lookup in its results.

Its own module because the hooks in ``benchmarks/systems/`` take a ``BenchContext``, and importing it
should not pull in the whole harness (``benchmarks.run_all``, which still re-exports it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edge.kafka import KafkaClientConfig


@dataclass
class BenchContext:
    """What a benchmark (or a hook) gets: the shared broker, the shared input, a scratch dir, a budget."""

    client: KafkaClientConfig
    workdir: Path
    run_id: str
    events: int
    keys: int
    input_topic: str
    variant_events: int
    input_topic_variants: str
    input_topic_2p: str
    table_topic: str
    table_rows: int
    deadline: float
    #: results gathered so far, by benchmark name (e.g. the relay figures for a latency comparison)
    results: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: sizes the lakehouse hooks run at: "quick" (small, inside this budget), "full" (the target sizes,
    #: ``benchmarks/run_lakehouse.py``), "tiny" (tests)
    lakehouse_scale: str = "quick"
    #: input size of the windowed-count and stream-stream join hooks (None: ``events``)
    windowed_events: int | None = None

    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()

    def timeout_s(self, cap: float) -> float:
        return max(10.0, min(cap, self.remaining_s() - 5))


def find_result(results: dict[str, list[dict[str, Any]]], bench: str, **match: Any) -> dict[str, Any] | None:
    for r in results.get(bench, []):
        if all(r.get(k) == v for k, v in match.items()):
            return r
    return None

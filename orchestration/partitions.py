"""The lakehouse's daily partitions, re-exported from ``assets/partitions.py`` where the assets use them.

Kept for callers (jobs, the pipeline, benchmarks) that know the names from here; the definitions and
the start date's resolution live below ``orchestration/`` so ``assets/`` never imports this layer.
"""

from __future__ import annotations

from assets.partitions import (
    BACKFILL_POLICY,
    DAILY,
    PARTITION_START,
    affected_days,
    contiguous_ranges,
    keys,
    to_date,
)

__all__ = [
    "BACKFILL_POLICY",
    "DAILY",
    "PARTITION_START",
    "affected_days",
    "contiguous_ranges",
    "keys",
    "to_date",
]

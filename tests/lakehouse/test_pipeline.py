"""End to end through Dagster: sample data → bronze → silver → gold, with lineage metadata."""

from __future__ import annotations

import pytest

from assets import sample_data
from assets.delta import read_arrow
from orchestration.pipeline import run_daily, run_ingest

pytestmark = [pytest.mark.broker, pytest.mark.spark, pytest.mark.slow]


def test_ingest_then_daily(lakehouse):
    lh = lakehouse()
    data = sample_data.generate(2000, days=2, invalid_ratio=0.02, duplicate_ratio=0.02, customers=20)
    sample_data.produce(lh.client, data, prefix=lh.prefix)
    ingest = run_ingest(lh.defs, lh.instance)
    assert ingest.result.success
    assert ingest.records == {t: len(r) for t, r in data.records.items()}
    days = ingest.affected_days
    results = run_daily(lh.defs, days, lh.instance)
    assert all(r.success for r in results)
    orders = read_arrow(lh.uri("silver", "orders"))
    assert orders.num_rows == 1000
    q = read_arrow(lh.uri("quarantine", "orders"))
    assert q.num_rows == data.injected["orders"]["invalid"]

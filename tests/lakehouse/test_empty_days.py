"""Days without input data write no Delta version, and an up-to-date day is not rewritten.

A daily run for a day with no events used to write an empty version of every silver and gold table and
turn green; now each asset says ``skipped: "no input data for <day>"`` in its materialization metadata
and the tables keep their version (or are not created at all).
"""

from __future__ import annotations

from datetime import timedelta

import orjson
import pytest
from confluent_kafka import Producer

from assets import sample_data
from assets.delta import table_exists, table_version
from assets.partitions import PARTITION_START
from assets.sample_data import DEFAULT_START, iso_ms
from orchestration.pipeline import materializations, run_daily, run_ingest

pytestmark = [pytest.mark.broker, pytest.mark.spark, pytest.mark.slow]

DAY1 = DEFAULT_START.date()
EMPTY = (DAY1 - timedelta(days=3)).isoformat()
EVENT_TABLES = [(layer, t) for t in ("orders", "clicks") for layer in ("silver", "quarantine")]
GOLD = ["revenue_tumbling_5m", "revenue_hopping_10m", "click_sessions", "orders_enriched"]


def _daily(lh, days: list[str]) -> dict:
    mats: dict = {}
    for result in run_daily(lh.defs, days, lh.instance):
        assert result.success
        mats.update(materializations(result))
    return mats


def _versions(lh) -> dict[str, int | None]:
    uris = [lh.uri(layer, name) for layer, name in EVENT_TABLES] + [lh.uri("gold", n) for n in GOLD]
    return {uri: table_version(uri) if table_exists(uri) else None for uri in uris}


def test_the_default_partitions_cover_the_sample_data():
    late = (DAY1 - timedelta(days=1)).isoformat()  # late events land a day early
    assert min(late, EMPTY) >= PARTITION_START


def test_days_without_data_write_nothing_and_say_so(lakehouse):
    lh = lakehouse()
    data = sample_data.generate(200, days=1, customers=5, include_dimensions=True)
    sample_data.produce(lh.client, data, prefix=lh.prefix)
    run_ingest(lh.defs, lh.instance)

    # A fresh lake, a day with no events: no silver or gold table is created.
    mats = _daily(lh, [EMPTY])
    assert all(v is None for v in _versions(lh).values())
    for key in ["silver/orders", "silver/clicks", *(f"gold/{n}" for n in GOLD)]:
        assert mats[key]["skipped"] == f"no input data for {EMPTY}", key
        assert mats[key]["rows_written"] == 0

    # The day with data is built; the empty day again, and the built day again, write no version.
    _daily(lh, [DAY1.isoformat()])
    built = _versions(lh)
    assert all(v is not None for v in built.values())
    mats = _daily(lh, [EMPTY])
    assert _versions(lh) == built
    assert mats["silver/orders"]["skipped"] == f"no input data for {EMPTY}"
    assert mats["gold/revenue_tumbling_5m"]["skipped"] == f"no input data for {EMPTY}"
    _daily(lh, [DAY1.isoformat()])
    assert _versions(lh) == built

    # Bronze gets data for another day only: the up-to-date day is still not rewritten.
    ts = int((DEFAULT_START + timedelta(days=1)).timestamp() * 1000)
    order = {
        "order_id": "late-1",
        "customer_id": "c-0001",
        "product_id": "p-001",
        "quantity": 1,
        "unit_price": 2.5,
        "event_time": iso_ms(ts),
    }
    producer = Producer(lh.client.producer())
    producer.produce(lh.topic("orders"), key=b"c-0001", value=orjson.dumps(order), timestamp=ts)
    producer.flush(10)
    assert run_ingest(lh.defs, lh.instance).records["orders"] == 1
    mats = _daily(lh, [DAY1.isoformat()])
    silver = lh.uri("silver", "orders")
    assert table_version(silver) == built[silver]
    assert mats["silver/orders"]["skipped"] == f"no new input data for {DAY1.isoformat()}"
    tumbling = lh.uri("gold", "revenue_tumbling_5m")
    assert table_version(tumbling) == built[tumbling]

"""The edge's closed windows equal gold's, end to end on the real broker.

``examples.revenue_windows`` runs in-process over sample orders (malformed ones and producer retries
mixed in), bronze ingests its output like any topic, the daily job builds gold and runs the checks:
``edge_windows_match_gold`` compares every window the edge closed and passes. Then one gold value is
changed, and separately one edge window dropped: the check reports exactly that window.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from assets.sample_data import (
    DEFAULT_START,
    EDGE_REVENUE_5M,
    ORDERS,
    RawRecord,
    SampleData,
    generate,
    iso_ms,
    produce,
)
from orchestration.demo import wait_caught_up

DAY = DEFAULT_START.date()
AS_OF = (DEFAULT_START + timedelta(days=3)).isoformat()
CHECK = "edge_windows_match_gold"


def _closing_orders(tag: str, products: list[str]) -> SampleData:
    """One order per product two days after the data: stream time passes every window's end + grace
    (one day), so the edge closes and emits all of the first day's windows."""
    ts = int((DEFAULT_START + timedelta(days=2, hours=1)).timestamp() * 1000)
    records = []
    for i, product in enumerate(products):
        order = {
            "order_id": f"{tag}-close-{i}",
            "customer_id": "c-0000",
            "product_id": product,
            "quantity": 1,
            "unit_price": 1.0,
            "event_time": iso_ms(ts + i),
        }
        records.append(RawRecord(b"c-0000", orjson.dumps(order), ts + i))
    return SampleData(records={ORDERS: records})


def _run_edge(ql: Any, state: Path, tag: str, products: list[str], orders: int) -> None:
    from edge.runtime import StreamsApp
    from examples.revenue_windows import topology

    app = StreamsApp(
        topology(f"{ql.prefix}{ORDERS}", f"{ql.prefix}{EDGE_REVENUE_5M}"),
        {
            "application.id": f"revenue-windows-{tag}",
            "bootstrap.servers": ql.client.bootstrap_servers,
            "broker.profile": ql.client.profile.value,
            "state.dir": str(state),
            "commit.interval.ms": 500,
            "default.deserialization.exception.handler": "continue",
        },
    )
    app.start()
    try:
        assert app.wait_until_running(90), f"edge app state {app.state.name}"
        wait_caught_up(app, orders, "examples.revenue_windows")
        # Only now does time pass at the edge: closing orders read before the backlog of another
        # input partition would make that partition's orders late.
        produce(ql.client, _closing_orders(tag, products), prefix=ql.prefix, create=False)
        wait_caught_up(app, orders + len(products), "examples.revenue_windows")
    finally:
        app.close(30)


def _edge_windows(uri: str) -> list[dict[str, Any]]:
    from assets.delta import read_arrow

    table = read_arrow(uri, columns=["partition", "offset", "value"])
    return [
        {**orjson.loads(r["value"]), "_partition": r["partition"], "_offset": r["offset"]}
        for r in table.to_pylist()
    ]


@pytest.mark.broker
@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(1200)  # an edge app, an ingest and a daily run: minutes on a loaded machine
def test_edge_closed_windows_equal_gold_and_a_difference_is_reported(quality_lake, tmp_path: Path):
    import pyarrow as pa
    from deltalake import write_deltalake

    from assets.delta import read_arrow
    from orchestration.pipeline import run_daily, run_ingest
    from quality.runner import run_suite
    from quality.suites import get_suite

    ql = quality_lake(AS_OF, data_docs=False)  # Data Docs are tested in test_checks.py
    tag = uuid.uuid4().hex[:6]
    data = generate(1200, days=1, seed=17, id_prefix=f"{tag}-", invalid_ratio=0.03, duplicate_ratio=0.03)
    products = sorted({p["product_id"] for p in data.payloads(ORDERS) if p and "product_id" in p})
    produce(ql.client, data, prefix=ql.prefix)
    _run_edge(ql, tmp_path / "streams", tag, products, len(data.records[ORDERS]))

    ingest = run_ingest(ql.defs, ql.instance)
    assert ingest.result.success and ingest.records[EDGE_REVENUE_5M] > 0
    daily = run_daily(ql.defs, ingest.affected_days, ql.instance)
    evals = {
        (ev.asset_key.to_user_string(), ev.check_name): ev
        for r in daily
        for ev in r.get_asset_check_evaluations()
    }
    ev = evals[("gold/revenue_tumbling_5m", CHECK)]
    assert ev.passed, ev.metadata["failing_sample"].value
    assert ev.metadata["observed_value"].value == "0 unexpected rows"

    # Not vacuous: the edge closed every window of the day, and each equals gold's (same count here,
    # values compared by the check).
    edge = _edge_windows(ql.uri("bronze", EDGE_REVENUE_5M))
    gold_uri = ql.uri("gold", "revenue_tumbling_5m")
    gold = read_arrow(gold_uri)
    day_windows = [r for r in gold.to_pylist() if r["window_date"] == DAY]
    assert len(edge) == len({(w["product_id"], w["window_start"]) for w in edge}) == len(day_windows) > 50
    # The closing orders' windows (two days later) are open at the edge: in gold, not compared.
    assert any(r["window_date"] == DAY + timedelta(days=2) for r in gold.to_pylist())

    def check(days: list | None = None) -> Any:
        run = run_suite(get_suite("gold.revenue_tumbling_5m"), str(ql.lake), days=days or [DAY])
        (outcome,) = [o for o in run.outcomes if o.expectation.name == CHECK]
        return outcome

    # One gold value perturbed: exactly that window is reported.
    rows = gold.to_pylist()
    target = sorted(day_windows, key=lambda r: (r["product_id"], r["window_start"]))[len(day_windows) // 2]
    for r in rows:
        if r["product_id"] == target["product_id"] and r["window_start"] == target["window_start"]:
            r["revenue"] = round(r["revenue"] + 100.0, 2)
    write_deltalake(gold_uri, pa.Table.from_pylist(rows, gold.schema), mode="overwrite")
    o = check()
    assert not o.success and o.failing_rows == 1 and o.expectation.action == "warn"
    (row,) = o.sample
    assert row["product_id"] == target["product_id"]
    assert row["gold_revenue"] == pytest.approx(row["edge_revenue"] + 100.0)
    assert row["gold_orders"] == row["edge_orders"] == target["orders"]
    write_deltalake(gold_uri, gold, mode="overwrite")
    assert check().success

    # One edge window dropped (not its product's last, so the edge had closed it): reported as missing.
    bronze_uri = ql.uri("bronze", EDGE_REVENUE_5M)
    bronze = read_arrow(bronze_uri)
    mine = sorted(
        (w for w in edge if w["product_id"] == target["product_id"]), key=lambda w: w["window_start"]
    )
    lost = mine[len(mine) // 2]
    keep = [
        i
        for i, r in enumerate(bronze.select(["partition", "offset"]).to_pylist())
        if (r["partition"], r["offset"]) != (lost["_partition"], lost["_offset"])
    ]
    write_deltalake(bronze_uri, bronze.take(keep), mode="overwrite")
    o = check([DAY, DAY + timedelta(days=1), DAY + timedelta(days=2)])
    assert not o.success and o.failing_rows == 1
    (row,) = o.sample
    assert row["product_id"] == lost["product_id"] and row["edge_orders"] is None
    assert row["gold_orders"] == lost["orders"] and row["gold_revenue"] == pytest.approx(lost["revenue"])


def test_edge_app_keeps_the_orders_silver_keeps_and_emits_each_window_once_closed():
    """The validity, typing and dedup rules at the edge, and emit-on-close, without a broker."""
    from edge import Serdes, StreamsConfig, TopologyTestDriver
    from examples.revenue_windows import topology

    t0 = int(DEFAULT_START.timestamp() * 1000)

    def order(oid: str, quantity: Any = 2, price: Any = 1.5, at: int = 1000, **extra: Any) -> dict:
        out = {
            "order_id": oid,
            "customer_id": "c-1",
            "product_id": "p-1",
            "quantity": quantity,
            "unit_price": price,
            "event_time": iso_ms(t0 + at),
        }
        return {**out, **extra}

    inputs = [
        (order("a"), t0 + 1000),
        (order("a"), t0 + 1000),  # a producer retry: counted once
        (order("b", quantity=3.0, price=2), t0 + 2000),  # 3.0 is an int, 2 a double
        (order("c", quantity="3"), t0 + 3000),  # a numeric string is not an int
        (order("d", quantity=True), t0 + 3000),
        (order("e", quantity=2.5), t0 + 3000),
        (order("f", quantity=0), t0 + 3000),
        (order("g", price=-0.5), t0 + 3000),
        (order("h", customer_id=None), t0 + 3000),
        (order("i"), t0 - 86_400_000),  # event time not on the Kafka record's day
        (order("j", at=4 * 60_000), t0 + 9 * 60_000),  # placed by event time, not by the Kafka time
    ]
    with TopologyTestDriver(topology("orders", "out", grace=timedelta(minutes=10)), StreamsConfig("t")) as d:
        topic = d.create_input_topic("orders", Serdes.string(), Serdes.json())
        out = d.create_output_topic("out", Serdes.string(), Serdes.json())
        for value, ts in inputs:
            topic.pipe_input("c-1", value, ts)
        assert out.read_values_to_list() == []  # stream time 00:09: the window closes at 00:15
        topic.pipe_input("c-1", order("k", at=15 * 60_000), t0 + 15 * 60_000)
        (window,) = out.read_records_to_list()
    assert window.key == "p-1"
    assert window.value == {
        "product_id": "p-1",
        "window_start": t0,
        "window_end": t0 + 300_000,
        "orders": 3,
        "units": 2 + 3 + 2,
        "revenue": round(2 * 1.5 + 3 * 2.0 + 2 * 1.5, 2),
    }

"""The edge and the lake agree: the same orders through the edge's windowed aggregations (Kafka Streams
TimeWindows, on the real broker) and through bronze → silver → gold give the same closed windows.

Tumbling 5-minute revenue per product (``gold.revenue_tumbling_5m``) and hopping 10-minute windows
advancing by 1 minute (``gold.revenue_hopping_10m``), both with docs/data-contract.md's rules: epoch
aligned, start inclusive, end exclusive, the typing rule (both reject ``"3"``, both accept ``3.0``), one
order per id. The one documented difference is late data: a record arriving after its window closed
(end + grace) is dropped at the edge and counted in gold, and the test checks exactly that difference.
Sessions are covered by tests/lakehouse/test_session_rule.py and the demo.
"""

from __future__ import annotations

import random
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from assets.delta import read_arrow
from assets.sample_data import iso_ms, topic_specs
from edge import Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder, Suppressed, TimeWindows
from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from edge.topology import Topology
from examples.revenue import is_valid_order

pytestmark = [pytest.mark.broker, pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]

DAY = datetime(2026, 3, 9, tzinfo=UTC)
START = DAY + timedelta(hours=10)
MINUTE = 60_000
TUMBLING = TimeWindows.of_size_and_grace(timedelta(minutes=5), timedelta(minutes=1))
HOPPING = TimeWindows.of_size_and_grace(timedelta(minutes=10), timedelta(minutes=1)).advance_by(
    timedelta(minutes=1)
)
PRODUCTS = ["p-1", "p-2", "p-3"]
#: The late order's id: a copy of the first p-1 order of the day (a millisecond later, its own
#: customer), sent after the whole day, when its windows have long closed at the edge.
LATE_ID = "late-1"


def _ms(ts: datetime) -> int:
    return int(ts.timestamp() * 1000)


def _orders() -> list[dict[str, Any]]:
    """Two hours of orders in time order, with the contract's edge cases mixed in."""
    rng = random.Random(18)
    out: list[dict[str, Any]] = []
    t = _ms(START)
    for i in range(240):
        t += rng.randrange(1, 60_000)
        out.append(
            {
                "order_id": f"o-{i}",
                "customer_id": f"c-{rng.randrange(12)}",
                "product_id": PRODUCTS[rng.randrange(len(PRODUCTS))],
                "quantity": 1 + rng.randrange(4),
                "unit_price": round(1 + rng.random() * 4, 2),
                "event_time": iso_ms(t),
            }
        )
    boundary = _ms(START + timedelta(hours=1))  # 11:00, a tumbling and hopping window boundary
    edge_cases = [
        {**out[0], "order_id": "x-before-end", "event_time": iso_ms(boundary - 1)},
        {**out[0], "order_id": "x-at-end", "event_time": iso_ms(boundary)},
        {**out[0], "order_id": "x-int-as-float", "quantity": 3.0, "event_time": iso_ms(boundary + 1)},
        {**out[0], "order_id": "x-numeric-string", "quantity": "3", "event_time": iso_ms(boundary + 2)},
        {**out[0], "order_id": "x-price-string", "unit_price": "5.0", "event_time": iso_ms(boundary + 3)},
    ]
    merged = sorted(out + edge_cases, key=lambda o: o["event_time"])
    dup = merged.index(edge_cases[1])
    return [*merged[: dup + 1], merged[dup], *merged[dup + 1 :]]  # an exact duplicate (producer retry)


def _window_row(windowed: Any, agg: dict[str, list]) -> tuple[str, dict[str, Any]]:
    rows = list(agg["orders"].values())
    return (
        f"{windowed.key}|{windowed.window.start}",
        {
            "key": windowed.key,
            "start": windowed.window.start,
            "end": windowed.window.end,
            "revenue": round(sum(q * p for q, p, _c in rows), 2),
            "orders": len(rows),
            "units": sum(int(q) for q, _p, _c in rows),
            "customers": len({c for _q, _p, c in rows}),
        },
    )


def _add(_key: str, order: dict[str, Any], agg: dict[str, Any]) -> dict[str, Any]:
    """One entry per order id, the first copy kept (silver's duplicate rule inside a window)."""
    orders = dict(agg["orders"])
    orders.setdefault(order["order_id"], [order["quantity"], order["unit_price"], order["customer_id"]])
    return {"orders": orders}


def _windowed(stream: Any, windows: TimeWindows, store: str, output: str) -> None:
    (
        stream.group_by_key(Grouped.with_(Serdes.string(), Serdes.json()))
        .windowed_by(windows)
        .aggregate(
            lambda: {"orders": {}},
            _add,
            materialized=Materialized.as_(store).with_value_serde(Serdes.json()),
        )
        .suppress(Suppressed.until_window_closes(Suppressed.BufferConfig.unbounded()))
        .to_stream()
        .filter(lambda _key, agg: agg is not None)
        .map(_window_row)
        .to(output, Produced.with_(Serdes.string(), Serdes.json()))
    )


def revenue_windows(orders: str, tumbling_out: str, hopping_out: str) -> Topology:
    """Gold's two revenue tables as an edge app: the contract's typing rule (``is_valid_order``),
    then tumbling windows per product and hopping windows over all orders, final results only."""
    builder = StreamsBuilder()
    valid = builder.stream(orders, Consumed.with_(Serdes.string(), Serdes.json())).filter(is_valid_order)
    _windowed(valid.select_key(lambda _k, o: o["product_id"]), TUMBLING, "tumbling", tumbling_out)
    _windowed(valid.select_key(lambda _k, _o: "all"), HOPPING, "hopping", hopping_out)
    return builder.build()


def _produce(client: KafkaClientConfig, topic: str, orders: list[dict[str, Any]]) -> None:
    # One partition, in this order: the edge's stream time then follows event time exactly, so which
    # record is late is decided by the data, not by how partitions interleave.
    producer = Producer(client.producer())
    for order in orders:
        ts = int(datetime.fromisoformat(order["event_time"]).timestamp() * 1000)
        producer.produce(
            topic,
            key=str(order["customer_id"]).encode(),
            value=orjson.dumps(order),
            partition=0,
            timestamp=ts,
        )
    assert producer.flush(30) == 0


def _produce_dimensions(client: KafkaClientConfig, prefix: str, customers: set[str]) -> None:
    """Every customer and product known from the day before, so orders_enriched's checks pass, and a
    click (the daily job builds silver/clicks too, which needs its bronze table)."""
    producer = Producer(client.producer())
    before = _ms(DAY - timedelta(days=1))
    click = {"event_id": "k-1", "user_id": "u-1", "page": "/menu", "event_time": iso_ms(_ms(START))}
    producer.produce(f"{prefix}clicks", key=b"u-1", value=orjson.dumps(click), timestamp=_ms(START))
    for cid in sorted(customers):
        profile = {
            "customer_id": cid,
            "name": cid,
            "segment": "smb",
            "country": "DE",
            "updated_at": iso_ms(before),
        }
        producer.produce(
            f"{prefix}customers", key=cid.encode(), value=orjson.dumps(profile), timestamp=before
        )
    for pid in PRODUCTS:
        product = {"product_id": pid, "name": pid, "category": "tea", "list_price": 2.0}
        producer.produce(f"{prefix}products", key=pid.encode(), value=orjson.dumps(product), timestamp=before)
    assert producer.flush(30) == 0


def _read_windows(
    client: KafkaClientConfig, topics: list[str], settle_s: float = 4.0
) -> dict[str, list[dict]]:
    """Every final window on ``topics``, read until nothing new arrived for ``settle_s``."""
    consumer = Consumer(client.consumer(f"agree-{uuid.uuid4().hex[:8]}", **{"auto.offset.reset": "earliest"}))
    consumer.subscribe(topics)
    out: dict[str, list[dict]] = {t: [] for t in topics}
    deadline, quiet_since = time.monotonic() + 120, time.monotonic()
    try:
        while time.monotonic() < deadline:
            got = 0
            for m in consumer.consume(1000, 0.3):
                if m.error() is not None:
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        raise AssertionError(str(m.error()))
                    continue
                out[m.topic()].append(orjson.loads(m.value()))
                got += 1
            if got:
                quiet_since = time.monotonic()
            elif all(out.values()) and time.monotonic() - quiet_since > settle_s:
                return out
    finally:
        consumer.close()
    raise AssertionError(f"edge windows did not settle: {[len(v) for v in out.values()]} read")


def _us(ts: datetime) -> int:
    return int(ts.replace(tzinfo=ts.tzinfo or UTC).timestamp() * 1_000_000)


def test_edge_windows_equal_gold_for_closed_windows(lakehouse, tmp_path) -> None:
    from edge.runtime import StreamsApp
    from orchestration.pipeline import run_daily, run_ingest

    lh = lakehouse()
    client = lh.client
    create_topics(client, topic_specs(lh.prefix))
    tumbling_out, hopping_out = lh.topic("edge-tumbling"), lh.topic("edge-hopping")
    create_topics(client, [TopicSpec(tumbling_out, 1), TopicSpec(hopping_out, 1)])
    orders = _orders()
    first_p1 = next(o for o in orders if o["product_id"] == "p-1")
    late = {
        **first_p1,
        "order_id": LATE_ID,
        "customer_id": "c-late",
        "event_time": iso_ms(_ms(datetime.fromisoformat(first_p1["event_time"])) + 1),
    }
    # After the in-order orders: the late one, then one order per product the next day, which moves
    # every task's stream time past the day's last window end + grace (so all of them close).
    closing = [
        {
            **orders[0],
            "order_id": f"close-{p}",
            "product_id": p,
            "event_time": iso_ms(_ms(DAY + timedelta(days=1, hours=12))),
        }
        for p in PRODUCTS
    ]
    _produce(client, lh.topic("orders"), [*orders, late, *closing])
    _produce_dimensions(client, lh.prefix, {o["customer_id"] for o in [*orders, late]})

    app = StreamsApp(
        revenue_windows(lh.topic("orders"), tumbling_out, hopping_out),
        {
            "application.id": f"{lh.prefix}agreement",
            "bootstrap.servers": client.bootstrap_servers,
            "broker.profile": client.profile.value,
            "kafka": dict(client.extra),
            "state.dir": str(tmp_path / "streams"),
            "commit.interval.ms": 200,
            "http.enabled": False,
        },
    )
    app.start()
    try:
        assert app.wait_until_running(90), app.state
        edge = _read_windows(client, [tumbling_out, hopping_out])
    finally:
        app.close(30)

    ingest = run_ingest(lh.defs, lh.instance)
    assert [r.success for r in run_daily(lh.defs, [DAY.date().isoformat()], lh.instance)] == [True], ingest

    on_day = DAY.date()
    edge_tumbling = {
        (w["start"] * 1000, w["key"]): (w["revenue"], w["orders"], w["units"])
        for w in edge[tumbling_out]
        if datetime.fromtimestamp(w["start"] / 1000, UTC).date() == on_day
    }
    edge_hopping = {
        w["start"] * 1000: (w["revenue"], w["orders"], w["customers"])
        for w in edge[hopping_out]
        if datetime.fromtimestamp(w["start"] / 1000, UTC).date() == on_day
    }
    gold_tumbling = {
        (_us(r["window_start"]), r["product_id"]): (r["revenue"], r["orders"], r["units"])
        for r in read_arrow(lh.uri("gold", "revenue_tumbling_5m")).to_pylist()
    }
    gold_hopping = {
        _us(r["window_start"]): (r["revenue"], r["orders"], r["customers"])
        for r in read_arrow(lh.uri("gold", "revenue_hopping_10m")).to_pylist()
    }
    # every window is closed at the edge (each window's end is before the next day's closing orders)
    assert len(edge[tumbling_out]) == len(edge_tumbling) and len(edge[hopping_out]) == len(edge_hopping)

    late_us = _us(datetime.fromisoformat(late["event_time"]))
    late_amount = late["quantity"] * late["unit_price"]

    # Tumbling: the same windows; the late order's window differs by exactly that order.
    late_window = (late_us - late_us % (5 * MINUTE * 1000), late["product_id"])
    assert gold_tumbling.keys() == edge_tumbling.keys()
    for key, (rev, n, units) in gold_tumbling.items():
        if key == late_window:
            rev, n, units = rev - late_amount, n - 1, units - late["quantity"]
        e_rev, e_n, e_units = edge_tumbling[key]
        assert (e_n, e_units) == (n, units), key
        assert e_rev == pytest.approx(rev, abs=0.006), key

    # Hopping: the late order is in the 10 windows that contain it; its customer is new in each.
    minute_us = MINUTE * 1000
    late_windows = {late_us - late_us % minute_us - k * minute_us for k in range(10)}
    assert gold_hopping.keys() == edge_hopping.keys()
    assert late_windows <= gold_hopping.keys()
    for key, (rev, n, customers) in gold_hopping.items():
        if key in late_windows:
            rev, n, customers = rev - late_amount, n - 1, customers - 1
        e_rev, e_n, e_customers = edge_hopping[key]
        assert (e_n, e_customers) == (n, customers), key
        assert e_rev == pytest.approx(rev, abs=0.006), key

    # The contract's edge cases reached gold as they reached the edge windows compared above: the
    # duplicate once, 3.0 as the int 3, the numeric strings quarantined with their reason.
    silver = {r["order_id"]: r for r in read_arrow(lh.uri("silver", "orders")).to_pylist()}
    assert silver["x-int-as-float"]["quantity"] == 3 and "x-at-end" in silver
    assert not {"x-numeric-string", "x-price-string"} & silver.keys()
    reasons = {
        orjson.loads(r["value"])["order_id"]: r["reason"]
        for r in read_arrow(lh.uri("quarantine", "orders")).to_pylist()
    }
    assert reasons == {
        "x-numeric-string": 'quantity is not an int: received "3" (a string)',
        "x-price-string": 'unit_price is not a double: received "5.0" (a string)',
    }

"""The demo's revenue-windows run equals gold's rule whatever order its repartition topic holds.

Catching up on a batch, the four input tasks of ``examples.revenue_windows`` reach its repartition topic
one after another, each with days of orders (Kafka Streams does the same: a consumed fetch holds one
partition's records). The driver replays exactly that order -- one upstream partition's three days,
then the next's -- into the topology: with the live default (final results, one day of grace) the
second partition's orders are dropped as late, while the demo's mode (every update, a grace covering
the backlog) ends with every window equal to the sum of its orders.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from assets.sample_data import ORDERS, generate


def _backlog_in_repartition_order() -> list[tuple[str, dict[str, Any], int]]:
    """The sample batch's orders as (customer key, order, timestamp), grouped by the input partition
    they would sit in (customers over two partitions), each partition's days in a row."""
    data = generate(1600, days=3, seed=3, late_ratio=0.02)
    by_partition: dict[int, list[tuple[str, dict[str, Any], int]]] = defaultdict(list)
    for rec, order in zip(data.records[ORDERS], data.payloads(ORDERS), strict=True):
        assert order is not None
        partition = int(order["customer_id"][2:]) % 2
        by_partition[partition].append((order["customer_id"], order, rec.timestamp_ms))
    return [o for p in sorted(by_partition) for o in by_partition[p]]


def _expected(orders: list[tuple[str, dict[str, Any], int]]) -> dict[tuple[str, int], tuple[int, int, float]]:
    """Gold's rule: per product and epoch-aligned 5-minute window, orders, units and revenue."""
    acc: dict[tuple[str, int], list[Any]] = defaultdict(lambda: [0, 0, 0.0])
    for _key, o, ts in orders:
        w = acc[(o["product_id"], ts - ts % 300_000)]
        w[0] += 1
        w[1] += o["quantity"]
        w[2] += o["quantity"] * o["unit_price"]
    return {k: (n, u, round(r, 2)) for k, (n, u, r) in acc.items()}


def _run(final_only: bool) -> tuple[dict[tuple[str, int], tuple[int, int, float]], int]:
    """The latest output per window, and the records the app dropped."""
    from edge import Serdes, StreamsConfig, TopologyTestDriver
    from examples.revenue_windows import BACKLOG_GRACE, GRACE, topology

    grace = GRACE if final_only else BACKLOG_GRACE
    latest: dict[tuple[str, int], tuple[int, int, float]] = {}
    with TopologyTestDriver(topology("in", "out", grace, final_only=final_only), StreamsConfig("t")) as d:
        topic = d.create_input_topic("in", Serdes.string(), Serdes.json())
        out = d.create_output_topic("out", Serdes.string(), Serdes.json())
        for key, order, ts in _backlog_in_repartition_order():
            topic.pipe_input(key, order, ts)
        for w in out.read_values_to_list():
            latest[(w["product_id"], w["window_start"])] = (w["orders"], w["units"], w["revenue"])
        dropped = sum(t.dropped_records for t in d._tasks)  # Kafka's dropped-records
    return latest, dropped


def test_the_demo_mode_ends_with_every_window_equal_to_gold_after_a_backlog_in_partition_order():
    orders = _backlog_in_repartition_order()
    expected = _expected(orders)
    latest, dropped = _run(final_only=False)
    assert dropped == 0
    assert latest == expected and len(expected) > 500


def test_the_live_default_drops_the_second_partitions_backlog_as_late():
    """Why the demo does not run the default: a day of grace is shorter than the backlog's skew."""
    orders = _backlog_in_repartition_order()
    closed, dropped = _run(final_only=True)
    assert dropped > len(orders) // 4
    expected = _expected(orders)
    assert any(closed[k] != expected[k] for k in closed)

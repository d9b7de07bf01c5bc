"""Revenue per product in 5-minute tumbling windows, final results only: the edge twin of gold's
``revenue_tumbling_5m``, which the quality check ``edge_windows_match_gold`` reconciles it with.

    streamhouse edge run examples.revenue_windows:topology --application-id revenue-windows \\
        --server 127.0.0.1:7072 -c default.deserialization.exception.handler=continue

Reads JSON orders from ``orders`` (REVENUE_WINDOWS_INPUT) and decides each order as silver does, so
the windows equal gold's for every window both have closed:

* **validity** — the rules of ``silver/orders``' ``drop`` expectations (``assets.silver.expectations``):
  a JSON object with every contract field present (not null) and of its type by the typing rule
  (a field's JSON type decides: ``quantity`` a JSON number with an integral value in int range, so
  ``3`` and ``3.0`` but not ``"3"``, ``true`` or ``3.5``; ``unit_price`` any finite number; ids a
  string; ``event_time`` a string holding an ISO-8601 time), the event time on the Kafka record's UTC
  day, ``quantity > 0`` and ``unit_price >= 0``. A record failing any of them gets a negative
  timestamp from the extractor below, which drops it (logged, counted in ``dropped-records``) as
  silver quarantines it. Undecodable records go to the deserialization handler (continue, above).
* **window** — the payload's ``event_time`` (not the Kafka timestamp) places the order, as gold's
  ``window(event_time, "5 minutes")``: ``[t - t % 5 min, + 5 min)``, epoch-aligned, per ``product_id``.
* **duplicates** — a window keeps its orders by id and the first copy of an order wins, as silver
  keeps one row per ``order_id`` (producer retries send exact copies, inside one window).

A window is emitted once, when it closes: stream time (the largest event time its task has seen)
passes its end plus the grace period. The grace covers orders that arrive out of order: orders are
keyed by customer, so the repartition by product interleaves the four input partitions, each as far
ahead as its batches went (hours of event time apart at the start of a backlog); an order later than
that is dropped by the edge (counted in ``dropped-records``) while gold still counts it, and the
reconciliation reports its window.

**Catching up on a backlog: every update, a grace over the backlog** (``final_only=False``,
``grace=BACKLOG_GRACE``, what ``streamhouse demo`` runs). Reading days of orders at once, the four
input tasks do not advance together: each consumed fetch holds one partition's records (up to
``max.partition.fetch.bytes``, and a producer's batch is never split), so one task writes days of its
orders to the repartition topic before the next writes its first. Kafka Streams does the same: over
the demo's three-day batch (10,040 orders) Kafka Streams 4.1.1 and the edge, running this topology,
each dropped about 5,100 orders as late (the repartition topic's records up to 77.6 hours behind
newer ones) with a one-day grace. No grace shorter than the backlog drops nothing, and with a grace as
long as the backlog no window closes until orders that much newer arrive: so the demo emits every
update of a window (collapsed between commits by the record cache) with a grace of four days (three
days of data, late orders, a rerun re-producing the same days) and the latest result per window is
the window's result once the app has caught up, which the check compares (it reads the latest per
product and window). Live, as a day's orders arrive, the default (final results, one day of grace)
fits. Output: ``edge_revenue_5m`` (REVENUE_WINDOWS_OUTPUT), key the
product, value JSON ``{"product_id", "window_start", "window_end" (epoch ms), "orders", "units",
"revenue"}`` with revenue rounded to cents as gold rounds it. The topic needs no particular
partitioning: the check compares a product's windows up to the last one the edge emitted for it.
"""

from __future__ import annotations

import math
import os
from datetime import UTC, datetime, timedelta
from typing import Any

from edge import (
    Consumed,
    Grouped,
    Materialized,
    Produced,
    Serdes,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
)
from edge.topology import Topology

STORE = "revenue-windows-5m"
OUTPUT = "edge_revenue_5m"
SIZE = timedelta(minutes=5)
#: How far out of order an order may arrive and still count (see the module docstring).
GRACE = timedelta(days=1)
#: The grace for catching up on the demo's backlog, with every update emitted (see the module docstring):
#: three days of orders re-keyed through the repartition topic, late orders six hours behind, and a
#: rerun of the demo on the same day re-producing those three days behind the newest order read.
BACKLOG_GRACE = timedelta(days=4)
INT_RANGE = (-(2**31), 2**31 - 1)
DAY_MS = 86_400_000


def _is_int(value: Any) -> bool:
    """The typing rule's int: a JSON number (not a boolean) with an integral value in int range."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and value == math.floor(value) and INT_RANGE[0] <= value <= INT_RANGE[1]


def _is_double(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def event_time_ms(text: Any) -> int | None:
    """An ISO-8601 time string as epoch ms (no zone: UTC, as Spark reads it); None otherwise."""
    if not isinstance(text, str):
        return None
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return int(value.timestamp() * 1000)


def valid_order_time(order: Any, record_timestamp: int) -> int | None:
    """The order's event time in ms when silver would keep it, else None (see the module docstring)."""
    if not isinstance(order, dict):
        return None
    if not all(isinstance(order.get(f), str) for f in ("order_id", "customer_id", "product_id")):
        return None
    quantity, price = order.get("quantity"), order.get("unit_price")
    if not _is_int(quantity) or not _is_double(price) or quantity <= 0 or price < 0:
        return None
    ts = event_time_ms(order.get("event_time"))
    if ts is None or ts // DAY_MS != record_timestamp // DAY_MS:  # on the Kafka record's UTC day
        return None
    return ts


def order_time(record: Any, _partition_time: int) -> int:
    """Timestamp extractor: the event time of a valid order, -1 (dropped and counted) otherwise."""
    ts = valid_order_time(record.value, record.timestamp)
    return -1 if ts is None else ts


def new_window() -> dict[str, Any]:
    return {"orders": {}}


def add_order(_product: str, order: dict[str, Any], window: dict[str, Any]) -> dict[str, Any]:
    """Keep the first copy of each order id (silver's deduplication by ``order_id``)."""
    if order["order_id"] in window["orders"]:
        return window
    orders = dict(window["orders"])
    orders[order["order_id"]] = [int(order["quantity"]), float(order["unit_price"])]
    return {"orders": orders}


def window_row(windowed: Any, window: dict[str, Any]) -> dict[str, Any]:
    lines = window["orders"].values()
    return {
        "product_id": windowed.key,
        "window_start": windowed.window.start,
        "window_end": windowed.window.end,
        "orders": len(window["orders"]),
        "units": sum(q for q, _ in lines),
        "revenue": round(sum(q * p for q, p in lines), 2),
    }


def topology(
    input_topic: str | None = None,
    output_topic: str | None = None,
    grace: timedelta = GRACE,
    *,
    final_only: bool = True,
) -> Topology:
    """``final_only``: one result per window once it closed; False: every update of a window (the
    latest is its result), for catching up on a backlog with a grace covering it (module docstring)."""
    builder = StreamsBuilder()
    consumed = Consumed.with_(Serdes.string(), Serdes.json()).with_timestamp_extractor(order_time)
    windows = (
        builder.stream(input_topic or os.environ.get("REVENUE_WINDOWS_INPUT", "orders"), consumed)
        .select_key(lambda _key, order: order["product_id"])
        .group_by_key(Grouped.with_(Serdes.string(), Serdes.json()))
        .windowed_by(TimeWindows.of_size_and_grace(SIZE, grace))
        .aggregate(
            new_window,
            add_order,
            materialized=Materialized.as_(STORE).with_value_serde(Serdes.json()),
        )
    )
    if final_only:
        windows = windows.suppress(Suppressed.until_window_closes(Suppressed.BufferConfig.unbounded()))
    (
        windows.to_stream()
        .filter(lambda _key, window: window is not None)
        .map(lambda windowed, window: (windowed.key, window_row(windowed, window)))
        .to(
            output_topic or os.environ.get("REVENUE_WINDOWS_OUTPUT", OUTPUT),
            Produced.with_(Serdes.string(), Serdes.json()),
        )
    )
    return builder.build()

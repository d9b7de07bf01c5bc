"""Revenue per product, live: the edge half of ``streamhouse demo``.

    streamhouse edge run examples.revenue:topology --application-id revenue --server 127.0.0.1:7070 \\
        -c default.deserialization.exception.handler=continue

Reads JSON orders from ``orders`` (REVENUE_INPUT), drops the ones a person would reject (missing or
mistyped fields, non-positive quantity), re-keys by product and keeps a running revenue total per
product in the queryable store ``revenue-by-product``; every update goes to ``edge_revenue_by_product``
(REVENUE_OUTPUT) as JSON ``{"product_id", "revenue"}``, which bronze ingests like any other topic.
Undecodable records go to the deserialization handler (log-and-continue above).
"""

from __future__ import annotations

import math
import os
from typing import Any

from edge import Consumed, Grouped, Produced, Serdes, StreamsBuilder
from edge.topology import Topology

STORE = "revenue-by-product"


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):  # JSON true/false: a bool is an int in Python, not a number in JSON
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def is_valid_order(_key: Any, order: Any) -> bool:
    """docs/data-contract.md's typing rule, as silver applies it: an int is a JSON number with an
    integral value (3 and 3.0, not "3" or 3.5), a double any finite JSON number (not "5.0")."""
    if not isinstance(order, dict):
        return False
    quantity, price = order.get("quantity"), order.get("unit_price")
    return (
        isinstance(order.get("product_id"), str)
        and _is_number(quantity)
        and float(quantity).is_integer()
        and 0 < quantity <= 2**31 - 1
        and _is_number(price)
        and price >= 0
    )


def topology(input_topic: str | None = None, output_topic: str | None = None) -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(
            input_topic or os.environ.get("REVENUE_INPUT", "orders"),
            Consumed.with_(Serdes.string(), Serdes.json()),
        )
        .filter(is_valid_order)
        .select_key(lambda _key, order: order["product_id"])
        .map_values(lambda order: order["quantity"] * order["unit_price"])
        .group_by_key(Grouped.with_(Serdes.string(), Serdes.double()))
        .reduce(lambda total, revenue: total + revenue, materialized=STORE)
        .to_stream()
        .map_values(
            lambda product, revenue: {"product_id": product, "revenue": round(revenue, 2)}, with_key=True
        )
        .to(
            output_topic or os.environ.get("REVENUE_OUTPUT", "edge_revenue_by_product"),
            Produced.with_(Serdes.string(), Serdes.json()),
        )
    )
    return builder.build()

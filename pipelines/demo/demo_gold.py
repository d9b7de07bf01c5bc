"""The demo's one gold table that is not a declared window or join: ``orders_enriched``.

Each valid order LEFT joined to the customer profile valid at its ``event_time`` (``valid_from <=
event_time < valid_to``) and to the product, so no order is lost from revenue; ``missing_dimensions``
lists what was not found (``customer_profile``, ``product``), ``[]`` when none (docs/data-contract.md).
Declared in pipeline.yaml as ``kind: python``: DataFrames in by input name, one DataFrame out.
"""

from __future__ import annotations

from typing import Any

#: ``orders_enriched.missing_dimensions`` values: no customer profile valid at the order's time, no product
MISSING_CUSTOMER_PROFILE = "customer_profile"
MISSING_PRODUCT = "product"


def enriched_orders(orders: Any, customers: Any, products: Any) -> Any:
    from pyspark.sql import functions as F

    o = orders.alias("o")
    c = customers.select("customer_id", "name", "segment", "country", "valid_from", "valid_to").alias("c")
    p = products.select("product_id", "name", "category", "list_price").alias("p")
    joined = o.join(
        c,
        (F.col("o.customer_id") == F.col("c.customer_id"))
        & (F.col("c.valid_from") <= F.col("o.event_time"))
        & (F.col("c.valid_to").isNull() | (F.col("o.event_time") < F.col("c.valid_to"))),
        "left",
    ).join(p, F.col("o.product_id") == F.col("p.product_id"), "left")
    return joined.select(
        F.col("o.order_id").alias("order_id"),
        F.col("o.event_time").alias("event_time"),
        F.col("o.customer_id").alias("customer_id"),
        F.col("c.name").alias("customer_name"),
        F.col("c.segment").alias("segment"),
        F.col("c.country").alias("country"),
        F.col("c.valid_from").alias("profile_valid_from"),
        F.col("o.product_id").alias("product_id"),
        F.col("p.name").alias("product_name"),
        F.col("p.category").alias("category"),
        F.col("p.list_price").alias("list_price"),
        F.col("o.quantity").alias("quantity"),
        F.col("o.unit_price").alias("unit_price"),
        F.round(F.col("o.quantity") * F.col("o.unit_price"), 2).alias("amount"),
        F.array_compact(
            F.array(
                F.when(F.col("c.valid_from").isNull(), F.lit(MISSING_CUSTOMER_PROFILE)),
                F.when(F.col("p.product_id").isNull(), F.lit(MISSING_PRODUCT)),
            )
        ).alias("missing_dimensions"),
        F.col("o.event_date").alias("event_date"),
    )

"""What each table of the lake holds and what its columns mean: one source for `streamhouse describe`
and the table catalogue in docs/querying.md (a column without an entry is shown without a description).
The rules behind each column (types, units, duplicates, windows, late data, joins) are
docs/data-contract.md's; the meanings here are its column tables, shortened for a terminal.

Layers: `bronze` (raw Kafka records, one table per topic), `silver` (typed, deduplicated), `quarantine`
(the rows silver rejected, with the reason), `gold` (windows and joins for analysis).
"""

from __future__ import annotations

#: Columns every bronze table has (one table per Kafka topic).
_BRONZE = {
    "key": "Kafka record key (raw bytes)",
    "value": "Kafka record value (raw bytes; JSON for the sample topics)",
    "topic": "Kafka topic the record was read from",
    "partition": "Kafka partition",
    "offset": "Kafka offset within the partition",
    "event_timestamp": "Kafka record timestamp (UTC)",
    "headers": "Kafka record headers (key, value bytes)",
    "ingest_time": "when the ingest run wrote the record (UTC)",
    "event_date": "partition: date of event_timestamp (UTC)",
}
_QUARANTINE = {
    "topic": "Kafka topic of the rejected record",
    "partition": "Kafka partition",
    "offset": "Kafka offset",
    "key": "record key (raw bytes)",
    "value": "record value (raw bytes), as received",
    "reason": "why silver rejected it ('; '-separated), e.g. 'quantity is not an int: received \"3\" "
    "(a string)'",
    "failed_expectations": "names of the row expectations (action drop) it failed, e.g. ['quantity_is_int']",
    "run_id": "Dagster run that quarantined it",
    "event_timestamp": "Kafka record timestamp (UTC)",
    "ingest_time": "when bronze ingested it (UTC)",
    "event_date": "partition: date of event_timestamp (UTC)",
}
_LINEAGE = {
    "_kafka_partition": "lineage: Kafka partition of the bronze record",
    "_kafka_offset": "lineage: Kafka offset of the bronze record",
    "_ingest_time": "lineage: when bronze ingested the record (UTC)",
}

TABLES: dict[str, tuple[str, dict[str, str]]] = {
    "bronze.*": ("raw Kafka records of one topic, exactly once (one table per topic)", _BRONZE),
    "quarantine.*": ("records silver rejected for that topic, with the reason", _QUARANTINE),
    "silver.orders": (
        "typed orders, one row per order_id (the first copy ingested wins)",
        {
            "order_id": "order identifier (unique)",
            "customer_id": "customer who ordered (see silver.customers)",
            "product_id": "product ordered (see silver.products)",
            "quantity": "units ordered (> 0)",
            "unit_price": "price per unit (>= 0)",
            "event_time": "when the order happened (UTC)",
            **_LINEAGE,
            "event_date": "partition: date of event_time (UTC)",
        },
    ),
    "silver.clicks": (
        "typed page clicks, one row per event_id (the first copy ingested wins)",
        {
            "event_id": "click identifier (unique)",
            "user_id": "user who clicked",
            "page": "page path, e.g. /menu",
            "event_time": "when the click happened (UTC)",
            **_LINEAGE,
            "event_date": "partition: date of event_time (UTC)",
        },
    ),
    "silver.customers": (
        "customer profile history: one row per profile version, valid in [valid_from, valid_to)",
        {
            "customer_id": "customer identifier",
            "name": "customer name",
            "segment": "consumer | smb | enterprise",
            "country": "ISO country code",
            "updated_at": "when this profile version takes effect (UTC)",
            **_LINEAGE,
            "valid_from": "this version is valid from (inclusive, = updated_at)",
            "valid_to": "until (exclusive); null for the current version",
        },
    ),
    "silver.products": (
        "product catalogue, latest version of each product",
        {
            "product_id": "product identifier",
            "name": "product name",
            "category": "coffee | tea | bakery | juice",
            "list_price": "catalogue price",
            **_LINEAGE,
        },
    ),
    "gold.revenue_tumbling_5m": (
        "revenue, orders and units per product per 5-minute window [start, start + 5m)",
        {
            "window_start": "window start (UTC, aligned to 5 minutes)",
            "window_end": "window end, exclusive (window_start + 5 min)",
            "product_id": "product",
            "revenue": "sum of quantity x unit_price, rounded to cents",
            "orders": "number of orders",
            "units": "sum of quantity",
            "window_date": "partition: date of window_start (UTC)",
        },
    ),
    "gold.revenue_hopping_10m": (
        "revenue, orders and distinct customers per 10-minute window, one window starting every minute",
        {
            "window_start": "window start (UTC, on a minute boundary)",
            "window_end": "window end, exclusive (window_start + 10 min)",
            "revenue": "sum of quantity x unit_price over the window, rounded to cents",
            "orders": "number of orders in the window",
            "customers": "distinct customers who ordered in the window",
            "window_date": "partition: date of window_start (UTC)",
        },
    ),
    "gold.click_sessions": (
        "a user's clicks grouped into sessions; 30 minutes without a click ends a session",
        {
            "user_id": "user",
            "session_start": "first click of the session (UTC)",
            "session_end": "last click of the session (UTC)",
            "duration_s": "session_end - session_start in whole seconds, truncated (0.999 s -> 0)",
            "clicks": "clicks in the session",
            "pages": "distinct pages visited",
            "duration_ms": "session_end - session_start in whole milliseconds, truncated",
            "session_date": "partition: date of session_start (UTC)",
        },
    ),
    "gold.orders_enriched": (
        "every silver order (a left join: none is lost) with the customer profile valid at the order's "
        "time and the product; missing_dimensions says what was not found",
        {
            "order_id": "order identifier",
            "event_time": "when the order happened (UTC)",
            "customer_id": "customer",
            "customer_name": "customer name as of event_time (NULL: no profile)",
            "segment": "customer segment as of event_time (NULL: no profile)",
            "country": "customer country as of event_time (NULL: no profile)",
            "profile_valid_from": "valid_from of the customer profile version used (NULL: no profile)",
            "product_id": "product",
            "product_name": "product name (NULL: unknown product)",
            "category": "product category (NULL: unknown product)",
            "list_price": "catalogue price (NULL: unknown product)",
            "quantity": "units ordered",
            "unit_price": "price paid per unit",
            "amount": "quantity x unit_price, rounded to cents",
            "missing_dimensions": "what the join did not find: 'customer_profile' (no profile valid at "
            "event_time), 'product'; [] when complete",
            "event_date": "partition: date of event_time (UTC)",
        },
    ),
}


def table_doc(name: str) -> tuple[str, dict[str, str]]:
    """(what the table holds, column -> meaning) for `layer.table`; empty when undocumented."""
    layer = name.split(".", 1)[0]
    return TABLES.get(name) or TABLES.get(f"{layer}.*") or ("", {})

"""An independent recomputation of silver and gold in DuckDB SQL, straight from the raw records.

Shares no code with the PySpark assets: JSON is parsed by DuckDB, validity rules and window semantics
are re-stated in SQL (the as-of join uses DuckDB's ASOF JOIN), so agreement means the Spark pipeline
implements the documented semantics, not just that it agrees with itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import duckdb

from assets.sample_data import SampleData


def connect(batches: Iterable[SampleData]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    for topic in ("orders", "customers", "products", "clicks"):
        rows = []
        seq = 0
        for data in batches if isinstance(batches, list) else list(batches):
            for rec in data.records.get(topic, []):
                rows.append((seq, rec.value.decode("utf-8", "replace")))
                seq += 1
        con.execute(f"CREATE TABLE raw_{topic} (seq BIGINT, v VARCHAR)")
        if rows:
            con.executemany(f"INSERT INTO raw_{topic} VALUES (?, ?)", rows)
    con.execute("""
        CREATE VIEW orders AS
        WITH parsed AS (
            SELECT seq,
                   json_extract_string(v, '$.order_id') AS order_id,
                   json_extract_string(v, '$.customer_id') AS customer_id,
                   json_extract_string(v, '$.product_id') AS product_id,
                   try_cast(json_extract_string(v, '$.quantity') AS INTEGER) AS quantity,
                   try_cast(json_extract_string(v, '$.unit_price') AS DOUBLE) AS unit_price,
                   try_cast(json_extract_string(v, '$.event_time') AS TIMESTAMPTZ)::TIMESTAMP AS event_time
            FROM raw_orders WHERE json_valid(v) AND json_type(v) = 'OBJECT'
        )
        SELECT * EXCLUDE (rn) FROM (
            SELECT *, row_number() OVER (PARTITION BY order_id ORDER BY seq) AS rn FROM parsed
            WHERE order_id IS NOT NULL AND customer_id IS NOT NULL AND product_id IS NOT NULL
              AND quantity IS NOT NULL AND unit_price IS NOT NULL AND event_time IS NOT NULL
              AND quantity > 0 AND unit_price >= 0
        ) WHERE rn = 1
    """)
    con.execute("""
        CREATE VIEW clicks AS
        WITH parsed AS (
            SELECT seq,
                   json_extract_string(v, '$.event_id') AS event_id,
                   json_extract_string(v, '$.user_id') AS user_id,
                   json_extract_string(v, '$.page') AS page,
                   try_cast(json_extract_string(v, '$.event_time') AS TIMESTAMPTZ)::TIMESTAMP AS event_time
            FROM raw_clicks WHERE json_valid(v) AND json_type(v) = 'OBJECT'
        )
        SELECT * EXCLUDE (rn) FROM (
            SELECT *, row_number() OVER (PARTITION BY event_id ORDER BY seq) AS rn FROM parsed
            WHERE event_id IS NOT NULL AND user_id IS NOT NULL AND page IS NOT NULL AND event_time IS NOT NULL
        ) WHERE rn = 1
    """)
    con.execute("""
        CREATE VIEW customers AS
        SELECT customer_id, name, segment, country, updated_at FROM (
            SELECT json_extract_string(v, '$.customer_id') AS customer_id,
                   json_extract_string(v, '$.name') AS name,
                   json_extract_string(v, '$.segment') AS segment,
                   json_extract_string(v, '$.country') AS country,
                   try_cast(json_extract_string(v, '$.updated_at') AS TIMESTAMPTZ)::TIMESTAMP AS updated_at,
                   row_number() OVER (
                       PARTITION BY json_extract_string(v, '$.customer_id'),
                                    json_extract_string(v, '$.updated_at')
                       ORDER BY seq DESC) AS rn
            FROM raw_customers WHERE json_valid(v)
        ) WHERE rn = 1
    """)
    con.execute("""
        CREATE VIEW products AS
        SELECT product_id, name, category, list_price FROM (
            SELECT json_extract_string(v, '$.product_id') AS product_id,
                   json_extract_string(v, '$.name') AS name,
                   json_extract_string(v, '$.category') AS category,
                   try_cast(json_extract_string(v, '$.list_price') AS DOUBLE) AS list_price,
                   row_number() OVER (
                       PARTITION BY json_extract_string(v, '$.product_id') ORDER BY seq DESC) AS rn
            FROM raw_products WHERE json_valid(v)
        ) WHERE rn = 1
    """)
    return con


def _micros(ts: datetime) -> int:
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return int(ts.timestamp() * 1_000_000)


def tumbling(con: duckdb.DuckDBPyConnection) -> dict[tuple[int, str], tuple[float, int, int]]:
    rows = con.sql("""
        SELECT make_timestamp((epoch_us(event_time) // 300000000) * 300000000) AS ws, product_id,
               sum(quantity * unit_price), count(*), sum(quantity)
        FROM orders GROUP BY ALL
    """).fetchall()
    return {(_micros(ws), p): (rev, n, int(u)) for ws, p, rev, n, u in rows}


def hopping(con: duckdb.DuckDBPyConnection) -> dict[int, tuple[float, int, int]]:
    rows = con.sql("""
        WITH starts AS (
            SELECT o.*, make_timestamp((epoch_us(event_time) // 60000000 - k) * 60000000) AS ws
            FROM orders o, range(0, 10) t(k)
        )
        SELECT ws, sum(quantity * unit_price), count(*), count(DISTINCT customer_id)
        FROM starts WHERE event_time < ws + INTERVAL 10 MINUTE GROUP BY ws
    """).fetchall()
    return {_micros(ws): (rev, n, c) for ws, rev, n, c in rows}


def sessions(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, int], tuple[int, int, int]]:
    rows = con.sql("""
        WITH marked AS (
            SELECT *, CASE WHEN lag(event_time) OVER w IS NULL
                            OR event_time - lag(event_time) OVER w > INTERVAL 30 MINUTE
                       THEN 1 ELSE 0 END AS new
            FROM clicks WINDOW w AS (PARTITION BY user_id ORDER BY event_time, event_id)
        ), numbered AS (
            SELECT *, sum(new) OVER (PARTITION BY user_id ORDER BY event_time, event_id
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS s
            FROM marked
        )
        SELECT user_id, min(event_time), max(event_time), count(*), count(DISTINCT page)
        FROM numbered GROUP BY user_id, s
    """).fetchall()
    return {(u, _micros(start)): (_micros(end), n, p) for u, start, end, n, p in rows}


def enriched(con: duckdb.DuckDBPyConnection) -> dict[str, tuple]:
    rows = con.sql("""
        SELECT o.order_id, c.segment, c.country, p.category, round(o.quantity * o.unit_price, 2)
        FROM orders o
        ASOF LEFT JOIN customers c ON o.customer_id = c.customer_id AND o.event_time >= c.updated_at
        LEFT JOIN products p ON o.product_id = p.product_id
    """).fetchall()
    return {r[0]: tuple(r[1:]) for r in rows}

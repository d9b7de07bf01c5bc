"""An independent recomputation of silver and gold in DuckDB SQL, straight from the raw records.

Shares no code with the PySpark assets: JSON is parsed by DuckDB, and every rule is re-stated here from
docs/data-contract.md (the typing rule, valid records, which duplicate wins, window bounds, the
inclusive session gap and truncated durations, the profile valid at an order's time, the left join with
``missing_dimensions``); the as-of join uses DuckDB's ASOF JOIN. Agreement means the Spark pipeline
implements the written contract, not just that it agrees with itself.

The raw records come either from the generator's batches (``connect``: a batch is one ingest run, and
production order stands for the Kafka position, which is exact for the generator's duplicates: a copy
has its original's key, so its partition) or from the bronze tables (``connect_bronze``: the real
ingest time, partition and offset of each record).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

import duckdb

from assets.sample_data import SampleData

#: The contract's payload fields per topic (docs/data-contract.md, "Topics"), re-stated on purpose.
FIELDS: dict[str, dict[str, str]] = {
    "orders": {
        "order_id": "string",
        "customer_id": "string",
        "product_id": "string",
        "quantity": "int",
        "unit_price": "double",
        "event_time": "timestamp",
    },
    "clicks": {"event_id": "string", "user_id": "string", "page": "string", "event_time": "timestamp"},
    "customers": {
        "customer_id": "string",
        "name": "string",
        "segment": "string",
        "country": "string",
        "updated_at": "timestamp",
    },
    "products": {"product_id": "string", "name": "string", "category": "string", "list_price": "double"},
}
#: Value rules of valid records (drop), per topic.
VALUE_RULES = {
    "orders": "quantity > 0 AND unit_price >= 0 AND CAST(event_time AS DATE) = CAST(ts AS DATE)",
    "clicks": "CAST(event_time AS DATE) = CAST(ts AS DATE)",
    "customers": "TRUE",
    "products": "list_price >= 0",
}
_NUMBER = "json_type(v, '{p}') IN ('BIGINT', 'UBIGINT', 'DOUBLE')"


def _typed(name: str, typ: str) -> str:
    """The typing rule: the JSON type decides (``3`` and ``3.0`` are ints, ``"3"`` is not)."""
    path = f"$.{name}"
    number = _NUMBER.format(p=path)
    d = f"json_extract(v, '{path}')::DOUBLE"
    if typ == "int":
        return (
            f"CASE WHEN {number} AND {d} = floor({d}) AND {d} BETWEEN -2147483648 AND 2147483647 "
            f"THEN CAST({d} AS INTEGER) END"
        )
    if typ == "double":
        return f"CASE WHEN {number} AND isfinite({d}) THEN {d} END"
    text = f"json_extract_string(v, '{path}')"
    if typ == "string":
        return f"CASE WHEN json_type(v, '{path}') = 'VARCHAR' THEN {text} END"
    assert typ == "timestamp", typ
    return f"CASE WHEN json_type(v, '{path}') = 'VARCHAR' THEN try_cast({text} AS TIMESTAMPTZ)::TIMESTAMP END"


def _valid(topic: str) -> str:
    """Rows of ``raw_<topic>`` passing every drop rule, typed, with their ingest position."""
    fields = FIELDS[topic]
    cols = ", ".join(f"{_typed(n, t)} AS {n}" for n, t in fields.items())
    present = " AND ".join(f"{n} IS NOT NULL" for n in fields)
    return f"""
        SELECT * FROM (
            SELECT ingest, part, off, ts, {cols} FROM raw_{topic}
            WHERE json_valid(v) AND json_type(v) = 'OBJECT'
              AND len(json_keys(v)) = len(list_distinct(json_keys(v)))
        ) WHERE {present} AND {VALUE_RULES[topic]}
    """


def _load(con: duckdb.DuckDBPyConnection, rows: Mapping[str, list[tuple]]) -> duckdb.DuckDBPyConnection:
    con.execute("SET TimeZone='UTC'")
    for topic in FIELDS:
        con.execute(
            f"CREATE TABLE raw_{topic} (ingest BIGINT, part INTEGER, off BIGINT, ts TIMESTAMP, v VARCHAR)"
        )
        if rows.get(topic):
            con.executemany(f"INSERT INTO raw_{topic} VALUES (?, ?, ?, ?, ?)", rows[topic])
    # Events: one row per id, the first copy ingested (ingest run, partition, offset) wins.
    for topic, key in (("orders", "order_id"), ("clicks", "event_id")):
        con.execute(f"""
            CREATE VIEW {topic} AS SELECT * EXCLUDE (rn) FROM (
                SELECT *, row_number() OVER (PARTITION BY {key} ORDER BY ingest, part, off) AS rn
                FROM ({_valid(topic)})
            ) WHERE rn = 1
        """)
    # Dimensions: the last record of a profile version / of a product wins.
    con.execute(f"""
        CREATE VIEW customers AS SELECT customer_id, name, segment, country, updated_at FROM (
            SELECT *, row_number() OVER (
                PARTITION BY customer_id, updated_at ORDER BY ingest DESC, part DESC, off DESC) AS rn
            FROM ({_valid("customers")})
        ) WHERE rn = 1
    """)
    con.execute(f"""
        CREATE VIEW products AS SELECT product_id, name, category, list_price FROM (
            SELECT *, row_number() OVER (
                PARTITION BY product_id ORDER BY ingest DESC, part DESC, off DESC) AS rn
            FROM ({_valid("products")})
        ) WHERE rn = 1
    """)
    return con


def connect(batches: Iterable[SampleData]) -> duckdb.DuckDBPyConnection:
    """The generator's batches, each one ingest run, in order."""
    rows: dict[str, list[tuple]] = {topic: [] for topic in FIELDS}
    for run, data in enumerate(list(batches)):
        for topic in FIELDS:
            for seq, rec in enumerate(data.records.get(topic, [])):
                ts = datetime.fromtimestamp(rec.timestamp_ms / 1000, UTC).replace(tzinfo=None)
                rows[topic].append((run, 0, seq, ts, rec.value.decode("utf-8", "replace")))
    return _load(duckdb.connect(), rows)


def connect_bronze(uris: Mapping[str, str]) -> duckdb.DuckDBPyConnection:
    """The bronze tables (``topic -> uri``): each record's real ingest time, partition and offset."""
    from deltalake import DeltaTable

    rows: dict[str, list[tuple]] = {topic: [] for topic in FIELDS}
    for topic, uri in uris.items():
        table = DeltaTable(uri).to_pyarrow_table(
            columns=["ingest_time", "partition", "offset", "event_timestamp", "value"]
        )
        for r in table.to_pylist():
            rows[topic].append(
                (
                    _micros(r["ingest_time"]),
                    r["partition"],
                    r["offset"],
                    r["event_timestamp"].astimezone(UTC).replace(tzinfo=None),
                    (r["value"] or b"").decode("utf-8", "replace"),
                )
            )
    return _load(duckdb.connect(), rows)


def _micros(ts: datetime) -> int:
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return int(ts.timestamp() * 1_000_000)


def tumbling(con: duckdb.DuckDBPyConnection) -> dict[tuple[int, str], tuple[float, int, int]]:
    """[start, start + 5 min), epoch-aligned: the window of ``t`` starts at ``t - t mod 5 min``."""
    rows = con.sql("""
        SELECT make_timestamp((epoch_us(event_time) // 300000000) * 300000000) AS ws, product_id,
               sum(quantity * unit_price), count(*), sum(quantity)
        FROM orders GROUP BY ALL
    """).fetchall()
    return {(_micros(ws), p): (rev, n, int(u)) for ws, p, rev, n, u in rows}


def hopping(con: duckdb.DuckDBPyConnection) -> dict[int, tuple[float, int, int]]:
    """10-minute windows starting every minute; an order is in each of the 10 that contain it."""
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
    """(user, start) -> (end, clicks, pages): a gap of at most 30 minutes (inclusive) continues a
    session; it ends at its last click."""
    return {k: v[:3] for k, v in session_rows(con).items()}


def session_rows(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, int], tuple[int, int, int, int, int]]:
    """(user, start) -> (end, clicks, pages, duration_s, duration_ms), durations truncated."""
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
        ), grouped AS (
            SELECT user_id, min(event_time) AS st, max(event_time) AS en, count(*) AS n,
                   count(DISTINCT page) AS p
            FROM numbered GROUP BY user_id, s
        )
        SELECT user_id, st, en, n, p, (epoch_us(en) - epoch_us(st)) // 1000000,
               (epoch_us(en) - epoch_us(st)) // 1000
        FROM grouped
    """).fetchall()
    return {(u, _micros(st)): (_micros(en), n, p, ds, dms) for u, st, en, n, p, ds, dms in rows}


def enriched(con: duckdb.DuckDBPyConnection) -> dict[str, tuple]:
    """order_id -> (segment, country, category, amount): a left join, every order kept, with the
    profile valid at event_time (valid_from inclusive) and the product."""
    return {k: v[:4] for k, v in enriched_rows(con).items()}


def enriched_rows(con: duckdb.DuckDBPyConnection) -> dict[str, tuple]:
    """order_id -> (segment, country, category, amount, missing_dimensions, profile_valid_from)."""
    rows = con.sql("""
        SELECT o.order_id, c.segment, c.country, p.category, round(o.quantity * o.unit_price, 2),
               list_filter([CASE WHEN c.customer_id IS NULL THEN 'customer_profile' END,
                            CASE WHEN p.product_id IS NULL THEN 'product' END], lambda x: x IS NOT NULL),
               c.updated_at
        FROM orders o
        ASOF LEFT JOIN customers c ON o.customer_id = c.customer_id AND o.event_time >= c.updated_at
        LEFT JOIN products p ON o.product_id = p.product_id
    """).fetchall()
    return {r[0]: (*r[1:6], None if r[6] is None else _micros(r[6])) for r in rows}

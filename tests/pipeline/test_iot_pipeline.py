"""A second pipeline proves the lake is declared, not the demo's: examples/iot end to end.

``streamhouse demo --pipeline examples/iot`` runs it as a user would, in a process of its own; its
generator sends device changes out of order and twice, readings twice
and malformed ones to the session's broker; the ingest and daily jobs build bronze, silver, quarantine
and five gold tables of every kind but Python (tumbling, hopping, session, as-of join, SQL) with Spark
on Delta. Every gold table is then recomputed here in DuckDB from the bronze tables alone, re-stating
each rule (typing, expectations, dedup, SCD2 validity, window bounds, inclusive session gap), and
compared row by row.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]

#: The readings contract, re-stated: typing rule, device id pattern, sensor range, event time on the
#: record's day. Humidity is a warn rule: the row stays.
VALID_READINGS = """
WITH typed AS (
    SELECT ingest, part, off, ts,
        CASE WHEN json_type(v, '$.reading_id') = 'VARCHAR'
             THEN json_extract_string(v, '$.reading_id') END AS reading_id,
        CASE WHEN json_type(v, '$.device_id') = 'VARCHAR'
             THEN json_extract_string(v, '$.device_id') END AS device_id,
        CASE WHEN json_type(v, '$.read_at') = 'VARCHAR'
             THEN try_cast(json_extract_string(v, '$.read_at') AS TIMESTAMPTZ)::TIMESTAMP END AS read_at,
        CASE WHEN json_type(v, '$.temperature') IN ('BIGINT', 'UBIGINT', 'DOUBLE')
             THEN json_extract(v, '$.temperature')::DOUBLE END AS temperature,
        CASE WHEN json_type(v, '$.humidity') IN ('BIGINT', 'UBIGINT', 'DOUBLE')
             THEN json_extract(v, '$.humidity')::DOUBLE END AS humidity
    FROM raw_readings WHERE json_valid(v) AND json_type(v) = 'OBJECT'
)
SELECT * EXCLUDE (rn) FROM (
    SELECT *, row_number() OVER (PARTITION BY reading_id ORDER BY ingest, part, off) AS rn FROM typed
    WHERE reading_id IS NOT NULL AND device_id IS NOT NULL AND read_at IS NOT NULL
      AND temperature IS NOT NULL AND humidity IS NOT NULL
      AND regexp_full_match(device_id, 'dev-[0-9]+') AND temperature BETWEEN -50 AND 150
      AND CAST(read_at AS DATE) = CAST(ts AS DATE)
) WHERE rn = 1
"""
#: SCD2: one row per (device, changed_at) whatever the arrival order or copies, valid until the next.
DEVICES = """
SELECT device_id, site, model, changed_at AS valid_from,
       lead(changed_at) OVER (PARTITION BY device_id ORDER BY changed_at) AS valid_to
FROM (SELECT DISTINCT
        json_extract_string(v, '$.device_id') AS device_id, json_extract_string(v, '$.site') AS site,
        json_extract_string(v, '$.model') AS model,
        try_cast(json_extract_string(v, '$.changed_at') AS TIMESTAMPTZ)::TIMESTAMP AS changed_at
      FROM raw_devices)
"""
EXPECTED = {
    "device_hourly": """
        SELECT time_bucket(INTERVAL 1 HOUR, read_at) AS window_start, device_id, count(*) AS readings,
               round(avg(temperature), 3), max(temperature)
        FROM readings GROUP BY ALL""",
    "device_rolling_30m": """
        SELECT s AS window_start, device_id, count(*), min(temperature), max(temperature),
               sum(CASE WHEN humidity > 60 THEN 1 ELSE 0 END)
        FROM (SELECT *, time_bucket(INTERVAL 10 MINUTE, read_at) - INTERVAL (k * 10) MINUTE AS s
              FROM readings, range(3) t(k))
        GROUP BY ALL""",
    "device_sessions": """
        SELECT min(read_at), device_id, max(read_at), count(*),
               floor((epoch_us(max(read_at)) - epoch_us(min(read_at))) / 1000000)
        FROM (SELECT *, sum(new) OVER (PARTITION BY device_id ORDER BY read_at, reading_id) AS session
              FROM (SELECT *, CASE WHEN lag(read_at) OVER w IS NULL
                                    OR epoch_us(read_at) - epoch_us(lag(read_at) OVER w) > 20 * 60 * 1000000
                                   THEN 1 ELSE 0 END AS new
                    FROM readings WINDOW w AS (PARTITION BY device_id ORDER BY read_at, reading_id)))
        GROUP BY device_id, session""",
    "readings_at_site": """
        SELECT r.reading_id, r.device_id, r.read_at, r.temperature, r.humidity, d.site, d.model
        FROM readings r LEFT JOIN devices d ON r.device_id = d.device_id
             AND d.valid_from <= r.read_at AND (d.valid_to IS NULL OR r.read_at < d.valid_to)""",
}
EXPECTED["site_hourly"] = f"""
    SELECT date_trunc('hour', read_at), coalesce(site, '(unknown)'), count(*), round(avg(temperature), 3)
    FROM ({EXPECTED["readings_at_site"]}) GROUP BY ALL"""
LAKE_COLUMNS = {
    "device_hourly": "window_start, device_id, readings, avg_temperature, max_temperature",
    "device_rolling_30m": (
        "window_start, device_id, readings, min_temperature, max_temperature, humid_readings"
    ),
    "device_sessions": "session_start, device_id, session_end, readings, online_s",
    "readings_at_site": "reading_id, device_id, read_at, temperature, humidity, site, model",
    "site_hourly": "hour, site, readings, avg_temperature",
}


def _normal(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    out = []
    for row in rows:
        out.append(
            tuple(
                round(v, 6)
                if isinstance(v, float)
                else (v.replace(tzinfo=None) if hasattr(v, "tzinfo") and v.tzinfo else v)
                for v in row
            )
        )
    return sorted(out, key=repr)


def _bronze(con: duckdb.DuckDBPyConnection, lake: Path, topic: str) -> None:
    from deltalake import DeltaTable

    table = DeltaTable(str(lake / "bronze" / topic)).to_pyarrow_table(
        columns=["ingest_time", "partition", "offset", "event_timestamp", "value"]
    )
    con.register(f"_{topic}", table)
    con.execute(
        f"CREATE TABLE raw_{topic} AS SELECT epoch_us(ingest_time) AS ingest, partition AS part, "
        f"\"offset\" AS off, (event_timestamp AT TIME ZONE 'UTC') AS ts, decode(value) AS v FROM _{topic}"
    )


def _lake(con: duckdb.DuckDBPyConnection, lake: Path, table: str) -> list[tuple[Any, ...]]:
    from assets.delta import duckdb_relation

    duckdb_relation(con, str(lake / "gold" / table), view_name=f"gold_{table}")
    return con.sql(f"SELECT {LAKE_COLUMNS[table]} FROM gold_{table}").fetchall()


def test_the_iot_pipeline_builds_its_declared_lake_as_duckdb_recomputes_it(
    user_env: dict[str, str], tmp_path: Path
) -> None:
    lake, env = tmp_path / "lake", user_env
    streamhouse = str(Path(sys.executable).parent / "streamhouse")
    run = subprocess.run(
        [streamhouse, "demo", "--pipeline", str(ROOT / "examples" / "iot")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, (run.stdout[-3000:], run.stderr[-3000:])
    out = run.stdout
    assert "iot (2 topics, 2 silver and 5 gold tables)" in out, out
    assert "device_changes_duplicated" in out and "readings_malformed" in out
    assert "gold/site_hourly" in out and "Traceback" not in run.stderr
    # Every declared table has its checks: the declared expectations in silver, what each gold kind
    # promises (one row per window and key, the declared window size, one row per joined event).
    checked = subprocess.run(
        [streamhouse, "check", "--no-docs", "--format", "json"],
        cwd=tmp_path,
        env={**env, "STREAMHOUSE_PIPELINE": str(ROOT / "examples" / "iot")},
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    verdicts = {(r["table"], r["expectation"]): r["verdict"] for r in json.loads(checked.stdout)}
    assert verdicts[("silver.readings", "device_id_matches")] == "warning"  # "sensor 9" quarantined
    assert verdicts[("gold.device_rolling_30m", "window_has_its_declared_size")] == "passed"
    assert verdicts[("gold.device_sessions", "one_row_per_window_and_key")] == "passed"
    assert verdicts[("gold.readings_at_site", "one_row_per_event")] == "passed"

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for topic in ("readings", "devices"):
        _bronze(con, lake, topic)
    con.execute(f"CREATE TABLE readings AS {VALID_READINGS}")
    con.execute(f"CREATE TABLE devices AS {DEVICES}")
    readings = con.sql("SELECT count(*) FROM readings").fetchall()[0][0]
    raw = con.sql("SELECT count(*) FROM raw_readings").fetchall()[0][0]
    assert 0 < readings < raw  # duplicates and malformed readings were there, and are gone
    quarantined = con.sql(
        f"SELECT count(*) FROM read_parquet('{lake}/quarantine/readings/**/*.parquet')"
    ).fetchall()[0][0]
    assert quarantined == 4  # the four malformed readings, each with its reason
    for table, sql in EXPECTED.items():
        lake_rows, expected_rows = _normal(_lake(con, lake, table)), _normal(con.sql(sql).fetchall())
        assert len(lake_rows) == len(expected_rows), table
        mismatched = [(a, b) for a, b in zip(lake_rows, expected_rows, strict=True) if not _same(a, b)]
        assert not mismatched, f"{table}: {mismatched[:3]}"


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(
        math.isclose(x, y, abs_tol=0.0011)
        if isinstance(x, float | int) and isinstance(y, float | int)
        else x == y
        for x, y in zip(a, b, strict=True)
    )

"""Reconciliation of gold with the layers below at the day's edges: hopping windows and sessions that
cross midnight, and the edge's closed windows.

Silver tables are written by hand around one midnight, gold is computed from them by the real gold
gold tables (Spark) and written to Delta, and the suites run in DuckDB as the asset checks run them.
Each reconciliation passes on the consistent tables, for every subset of days, and reports exactly
the day or window that one perturbation breaks.
"""

from __future__ import annotations

import dataclasses
import json
import random
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.spark]

D1, D2 = date(2026, 3, 2), date(2026, 3, 3)
MIDNIGHT = datetime(2026, 3, 3, tzinfo=UTC)


def _orders() -> list[dict[str, Any]]:
    """Orders dense around midnight (every window starting 23:51-23:59 reaches into D2), at the first
    and last minute of each day, and a few at noon."""
    rng = random.Random(13)
    times = [MIDNIGHT + timedelta(seconds=s) for s in range(-45 * 60, 45 * 60, 97)]
    times += [
        datetime(2026, 3, 2, 0, 0, 1, tzinfo=UTC),
        datetime(2026, 3, 2, 12, 0, tzinfo=UTC),
        MIDNIGHT - timedelta(milliseconds=1),
        MIDNIGHT,
        MIDNIGHT + timedelta(minutes=9, seconds=59),
        MIDNIGHT + timedelta(minutes=10),
        datetime(2026, 3, 3, 23, 59, 30, tzinfo=UTC),
    ]
    return [
        {
            "order_id": f"o-{i}",
            "customer_id": f"c-{rng.randrange(7)}",
            "product_id": f"p-{rng.randrange(3)}",
            "quantity": 1 + rng.randrange(4),
            "unit_price": round(0.5 + rng.randrange(40) * 0.25, 2),
            "event_time": t,
            "event_date": t.date(),
        }
        for i, t in enumerate(times)
    ]


def _clicks() -> list[dict[str, Any]]:
    """Sessions crossing midnight, a gap of exactly 30 minutes (same session) and of 30 min + 1 ms
    (new session) across it, and random bursts."""
    m = MIDNIGHT
    fixed = [
        ("u-cross", m - timedelta(minutes=20)),
        ("u-cross", m + timedelta(minutes=5)),
        ("u-cross", m + timedelta(minutes=30)),
        ("u-exact", m - timedelta(minutes=10)),
        ("u-exact", m + timedelta(minutes=20)),  # exactly the gap: same session, started on D1
        ("u-split", m - timedelta(minutes=10)),
        ("u-split", m + timedelta(minutes=20, milliseconds=1)),  # gap + 1 ms: a new session on D2
        ("u-late", m - timedelta(minutes=40)),  # its previous click is on D1, its session starts there
        ("u-late", m - timedelta(minutes=15)),
    ]
    rng = random.Random(5)
    for u in range(20):
        t = m + timedelta(hours=rng.uniform(-30, 20))
        for _ in range(1 + rng.randrange(5)):
            fixed.append((f"u-{u}", t))
            t += timedelta(minutes=rng.uniform(1, 45))
    return [
        {"event_id": f"k-{i}", "user_id": u, "page": "/menu", "event_time": t, "event_date": t.date()}
        for i, (u, t) in enumerate(fixed)
    ]


def _write(uri: str, rows: list[dict[str, Any]] | Any, partition: str, mode: str = "overwrite") -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    table = rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(rows)
    write_deltalake(uri, table, mode=mode, partition_by=[partition])


@dataclasses.dataclass
class Lake:
    root: Path

    def uri(self, table: str) -> str:
        layer, name = table.split(".", 1)
        return str(self.root / layer / name)


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory: pytest.TempPathFactory) -> Lake:
    from assets.gold.declared import gold_table
    from assets.pipeline.active import active_pipeline

    def gold(name: str, frames: dict[str, Any]) -> Any:
        return gold_table(active_pipeline(), name).compute(frames, [D1, D2]).toArrow()

    lk = Lake(tmp_path_factory.mktemp("reconcile") / "lake")
    orders, clicks = _orders(), _clicks()
    _write(lk.uri("silver.orders"), orders, "event_date")
    _write(lk.uri("silver.clicks"), clicks, "event_date")
    o = spark.createDataFrame(
        [tuple(r.values()) for r in orders],
        "order_id string, customer_id string, product_id string, quantity int, unit_price double, "
        "event_time timestamp, event_date date",
    )
    c = spark.createDataFrame(
        [tuple(r.values()) for r in clicks],
        "event_id string, user_id string, page string, event_time timestamp, event_date date",
    )
    _write(lk.uri("gold.revenue_hopping_10m"), gold("revenue_hopping_10m", {"orders": o}), "window_date")
    _write(lk.uri("gold.click_sessions"), gold("click_sessions", {"clicks": c}), "session_date")
    _write(lk.uri("gold.revenue_tumbling_5m"), gold("revenue_tumbling_5m", {"orders": o}), "window_date")
    return lk


def _outcome(lake: Lake, table: str, name: str, days: list[date] | None) -> Any:
    from quality.engine import measure
    from quality.suites import get_suite

    suite = get_suite(table)
    only = dataclasses.replace(suite, expectations=(suite.expectation(name),))
    _, (outcome,) = measure(only, str(lake.root), days=days)
    return outcome


def _replace(lake: Lake, table: str, partition: str, change) -> Any:
    """Rewrite ``table`` with ``change(rows)`` applied; returns the original Arrow table."""
    from assets.delta import read_arrow

    original = read_arrow(lake.uri(table))
    _write(lake.uri(table), change(original.to_pylist()), partition)
    return original


DAY_SETS = [[D1], [D2], [D1, D2], None]


def test_hopping_windows_reconcile_with_silver_across_midnight(lake: Lake) -> None:
    for days in DAY_SETS:
        o = _outcome(lake, "gold.revenue_hopping_10m", "totals_match_silver", days)
        assert o.success and o.failing_rows == 0, (days, o.observed, o.sample)

    # One more order in the window starting 23:55 on D1 (it reaches into D2, but belongs to D1).
    start = MIDNIGHT - timedelta(minutes=5)

    def bump(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for r in rows:
            if r["window_start"] == start:
                r["orders"] += 1
                r["revenue"] += 2.5
        return rows

    original = _replace(lake, "gold.revenue_hopping_10m", "window_date", bump)
    try:
        o = _outcome(lake, "gold.revenue_hopping_10m", "totals_match_silver", [D1, D2])
        assert not o.success and o.failing_rows == 1
        (row,) = o.sample
        assert row["day"] == D1.isoformat()
        assert row["gold_order_windows"] == row["silver_order_windows"] + 1
        assert row["gold_revenue"] == pytest.approx(row["silver_revenue"] + 2.5, abs=0.02)
        assert _outcome(lake, "gold.revenue_hopping_10m", "totals_match_silver", [D2]).success
    finally:
        _write(lake.uri("gold.revenue_hopping_10m"), original, "window_date")


def test_sessions_reconcile_with_silver_across_midnight(lake: Lake) -> None:
    from assets.delta import read_arrow

    sessions = read_arrow(lake.uri("gold.click_sessions")).to_pylist()
    by_user = {(s["user_id"], s["session_start"].date()): s["clicks"] for s in sessions}
    # the rule's edge cases, as gold decided them
    assert by_user[("u-cross", D1)] == 3 and by_user[("u-exact", D1)] == 2
    assert by_user[("u-split", D1)] == 1 and by_user[("u-split", D2)] == 1
    for days in DAY_SETS:
        o = _outcome(lake, "gold.click_sessions", "sessions_match_silver", days)
        assert o.success and o.failing_rows == 0, (days, o.observed, o.sample)

    # Gold merges u-split's two sessions into one (the gap rule applied wrongly): D1's session gains a
    # click, D2 loses a session.
    def merge(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        first = next(r for r in rows if r["user_id"] == "u-split" and r["session_date"] == D1)
        second = next(r for r in rows if r["user_id"] == "u-split" and r["session_date"] == D2)
        first["session_end"], first["clicks"] = second["session_end"], 2
        return [r for r in rows if r is not second]

    original = _replace(lake, "gold.click_sessions", "session_date", merge)
    try:
        o = _outcome(lake, "gold.click_sessions", "sessions_match_silver", [D1, D2])
        assert not o.success and o.failing_rows == 2
        d1, d2 = o.sample
        assert d1["day"] == D1.isoformat() and d1["sessions_differing"] == 1
        assert d1["gold_sessions"] == d1["silver_sessions"] and d1["gold_clicks"] == d1["silver_clicks"] + 1
        assert d2["day"] == D2.isoformat() and d2["sessions_differing"] == 1
        assert d2["gold_sessions"] == d2["silver_sessions"] - 1
        # checked alone, each day still shows its half of the mistake
        assert not _outcome(lake, "gold.click_sessions", "sessions_match_silver", [D1]).success
        assert not _outcome(lake, "gold.click_sessions", "sessions_match_silver", [D2]).success
    finally:
        _write(lake.uri("gold.click_sessions"), original, "session_date")


def _edge_record(offset: int, partition: int, window: dict[str, Any]) -> dict[str, Any]:
    return {
        "partition": partition,
        "offset": offset,
        "value": json.dumps(window).encode(),
        "event_date": datetime.fromtimestamp(window["window_start"] / 1000, UTC).date(),
    }


def test_edge_windows_reconcile_up_to_the_last_window_each_product_closed(lake: Lake) -> None:
    from assets.delta import read_arrow

    gold = sorted(
        read_arrow(lake.uri("gold.revenue_tumbling_5m")).to_pylist(),
        key=lambda r: (r["product_id"], r["window_start"]),
    )
    per_product: dict[str, list[dict[str, Any]]] = {}
    for r in gold:
        per_product.setdefault(r["product_id"], []).append(
            {
                "product_id": r["product_id"],
                "window_start": int(r["window_start"].timestamp() * 1000),
                "window_end": int(r["window_end"].timestamp() * 1000),
                "orders": r["orders"],
                "units": r["units"],
                "revenue": r["revenue"],
            }
        )
    # The edge closed every window of p-0, all but the last two of p-1, none of p-2; p-0's windows
    # were emitted twice (an at-least-once restart).
    closed = per_product["p-0"] + per_product["p-1"][:-2]
    records = [_edge_record(i, 0, w) for i, w in enumerate(closed)]
    records += [_edge_record(i, 1, w) for i, w in enumerate(per_product["p-0"])]
    edge_uri = lake.uri("bronze.edge_revenue_5m")
    _write(edge_uri, records, "event_date")
    o = _outcome(lake, "gold.revenue_tumbling_5m", "edge_windows_match_gold", [D1, D2])
    assert o.success and o.failing_rows == 0, (o.observed, o.sample)

    # A window lost by the edge and a window whose revenue differs are reported, nothing else.
    lost, wrong = per_product["p-1"][1], dict(per_product["p-0"][2])
    wrong["revenue"] = round(wrong["revenue"] + 1.0, 2)
    changed = [wrong if w is per_product["p-0"][2] else w for w in closed if w is not lost]
    _write(edge_uri, [_edge_record(i, 0, w) for i, w in enumerate(changed)], "event_date")
    o = _outcome(lake, "gold.revenue_tumbling_5m", "edge_windows_match_gold", [D1, D2])
    assert not o.success and o.failing_rows == 2
    rows = {(r["product_id"], r["edge_orders"]): r for r in o.sample}
    assert rows[("p-1", None)]["gold_orders"] == lost["orders"]
    assert rows[("p-0", wrong["orders"])]["edge_revenue"] == wrong["revenue"]

    # Without the edge's table there is nothing to compare: not passed (a warning), saying so.
    import shutil

    shutil.rmtree(edge_uri)
    o = _outcome(lake, "gold.revenue_tumbling_5m", "edge_windows_match_gold", [D1])
    assert not o.success and not o.compared and "not compared" in str(o.observed)

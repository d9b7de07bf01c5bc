"""Issue 25 item 6: quality results that looked broken in the UI.

* ``no_missing_windows`` failed on the demo's own data: sparse orders leave 5-minute (and 10-minute
  hopping) windows without orders between a day's first and last window, and gold writes no row for a
  window without orders. A missing window is one whose orders silver holds and gold lacks.
* A check that could not compare anything (an optional input or its own table does not exist yet) was
  reported as Passed; it is now not passed, a warning that blocks nothing, saying why.

DuckDB only (hand-written Delta tables), no Spark or broker.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

D = date(2026, 3, 2)
START = datetime(2026, 3, 2, tzinfo=UTC)
#: Orders at 00:01, 00:03 (same 5-minute window), 03:00 and 23:58 (its hopping windows reach into D+1):
#: hours without orders in between, as in the demo's sparse sample data.
ORDER_TIMES = [START + timedelta(minutes=m) for m in (1, 3, 180, 1438)]


def _write(uri: str, rows: list[dict[str, Any]], partition: str) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    write_deltalake(uri, pa.Table.from_pylist(rows), mode="overwrite", partition_by=[partition])


def _orders() -> list[dict[str, Any]]:
    return [
        {
            "order_id": f"o-{i}",
            "product_id": "p-1",
            "quantity": 1,
            "unit_price": 2.0,
            "event_time": t,
            "event_date": t.date(),
        }
        for i, t in enumerate(ORDER_TIMES)
    ]


def _tumbling(orders: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Gold's 5-minute windows of ``orders``: one row per window and product that holds orders."""
    out: dict[tuple[datetime, str], dict[str, Any]] = {}
    for o in orders:
        t = o["event_time"]
        ws = t - timedelta(minutes=t.minute % 5, seconds=t.second, microseconds=t.microsecond)
        row = out.setdefault(
            (ws, o["product_id"]),
            {
                "window_start": ws,
                "window_end": ws + timedelta(minutes=5),
                "product_id": o["product_id"],
                "orders": 0,
                "units": 0,
                "revenue": 0.0,
                "window_date": ws.date(),
            },
        )
        row["orders"] += 1
        row["units"] += o["quantity"]
        row["revenue"] += o["quantity"] * o["unit_price"]
    return list(out.values())


def _hopping(orders: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Gold's 10-minute windows starting every minute on D that hold orders."""
    starts: dict[datetime, int] = {}
    for o in orders:
        minute = o["event_time"].replace(second=0, microsecond=0)
        for k in range(10):
            ws = minute - timedelta(minutes=k)
            if ws.date() == D:
                starts[ws] = starts.get(ws, 0) + 1
    return [
        {
            "window_start": ws,
            "window_end": ws + timedelta(minutes=10),
            "orders": n,
            "customers": 1,
            "revenue": 2.0 * n,
            "window_date": ws.date(),
        }
        for ws, n in sorted(starts.items())
    ]


def _outcome(root: Path, table: str, name: str, days: list[date] | None = None) -> Any:
    from quality.engine import measure
    from quality.suites import get_suite

    suite = get_suite(table)
    only = dataclasses.replace(suite, expectations=(suite.expectation(name),))
    _, (outcome,) = measure(only, str(root), days=days)
    return outcome


def test_windows_without_orders_are_not_missing_but_windows_gold_lost_are(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    orders = _orders()
    _write(str(root / "silver" / "orders"), orders, "event_date")
    tumbling, hopping = _tumbling(orders), _hopping(orders)
    _write(str(root / "gold" / "revenue_tumbling_5m"), tumbling, "window_date")
    _write(str(root / "gold" / "revenue_hopping_10m"), hopping, "window_date")
    for table in ("gold.revenue_tumbling_5m", "gold.revenue_hopping_10m"):
        for days in ([D], None):
            o = _outcome(root, table, "no_missing_windows", days)
            assert o.success and o.failing_rows == 0, (table, days, o.observed, o.sample)

    # Gold lost the 03:00 window (tumbling) and the window starting 02:55 (hopping): both reported.
    lost = START + timedelta(hours=3)
    _write(
        str(root / "gold" / "revenue_tumbling_5m"),
        [r for r in tumbling if r["window_start"] != lost],
        "window_date",
    )
    o = _outcome(root, "gold.revenue_tumbling_5m", "no_missing_windows", [D])
    assert not o.success and o.failing_rows == 1
    assert o.sample[0]["product_id"] == "p-1" and "03:00" in str(o.sample[0]["window_start"])
    gone = lost - timedelta(minutes=5)
    _write(
        str(root / "gold" / "revenue_hopping_10m"),
        [r for r in hopping if r["window_start"] != gone],
        "window_date",
    )
    o = _outcome(root, "gold.revenue_hopping_10m", "no_missing_windows", [D])
    assert not o.success and o.failing_rows == 1 and "02:55" in str(o.sample[0]["window_start"])


def test_a_check_that_compared_nothing_is_a_warning_not_a_pass(tmp_path: Path) -> None:
    from dagster import AssetCheckSeverity, AssetKey

    from quality.checks import results
    from quality.runner import run_suite
    from quality.suites import get_suite

    root = tmp_path / "lake"
    orders = _orders()
    _write(str(root / "silver" / "orders"), orders, "event_date")
    _write(str(root / "gold" / "revenue_tumbling_5m"), _tumbling(orders), "window_date")
    # No bronze/edge_revenue_5m (the edge app never ran): the edge comparison could not run.
    o = _outcome(root, "gold.revenue_tumbling_5m", "edge_windows_match_gold", [D])
    assert not o.success and not o.compared and "not compared: no table bronze.edge_revenue_5m" in o.observed

    run = run_suite(get_suite("gold.revenue_tumbling_5m"), str(root), days=[D])
    key = AssetKey(["gold", "revenue_tumbling_5m"])
    by_name = {r.check_name: r for r in results(run, key)}
    edge = by_name["edge_windows_match_gold"]
    assert not edge.passed and edge.severity == AssetCheckSeverity.WARN
    assert "not compared" in (edge.description or "")
    assert by_name["no_missing_windows"].passed
    assert run.errors == [] and [w.expectation.name for w in run.warnings] == ["edge_windows_match_gold"]

    # A table that does not exist at all: every expectation is a warning saying so, none an error.
    missing = run_suite(get_suite("bronze.edge_revenue_5m"), str(root))
    assert missing.outcomes and all(not o.success and not o.compared for o in missing.outcomes)
    assert missing.errors == []
    for r in results(missing, AssetKey(["bronze", "edge_revenue_5m"])):
        assert not r.passed and r.severity == AssetCheckSeverity.WARN

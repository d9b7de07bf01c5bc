"""Edge vs gold: the lake's gold tables read back in the edge apps' shape, and the comparison the
demo reports.

Sessions must agree exactly (the same 30-minute inclusive gap at the edge and in Spark); revenue is
shown side by side, since the edge counts duplicates and malformed orders that silver removes.
"""

from __future__ import annotations

from typing import Any

from orchestration.demo_report import DemoSummary
from orchestration.settings import Settings


def gold_sessions(settings: Settings) -> set[tuple[str, int, int, int, int]]:
    """``gold/click_sessions`` as (user, start ms, end ms, clicks, pages), the edge's shape."""
    import duckdb

    from assets.delta import duckdb_relation

    con = duckdb.connect()
    rel = duckdb_relation(con, str(settings.lake_root / "gold" / "click_sessions"))
    rows = rel.project("user_id, epoch_ms(session_start), epoch_ms(session_end), clicks, pages").fetchall()
    return {(u, int(s), int(e), int(c), int(p)) for u, s, e, c, p in rows}


def gold_revenue(settings: Settings) -> dict[str, float]:
    """Revenue per product over every window of ``gold/revenue_tumbling_5m``."""
    import duckdb

    from assets.delta import duckdb_relation

    con = duckdb.connect()
    rel = duckdb_relation(con, str(settings.lake_root / "gold" / "revenue_tumbling_5m"))
    value = "revenue" if "revenue" in rel.columns else next(c for c in rel.columns if "revenue" in c)
    rows = rel.aggregate(f"product_id, sum({value}) AS revenue").fetchall()
    return {product: float(total) for product, total in rows}


def compare_edge_with_gold(
    settings: Settings,
    summary: DemoSummary,
    edge: dict[str, float],
    sessions: set[tuple[str, int, int, int, int]],
    data: Any,
) -> None:
    from assets.sample_data import CLICKS, ORDERS

    gold_rows = gold_sessions(settings)
    edge_clicks, gold_clicks = sum(r[3] for r in sessions), sum(r[3] for r in gold_rows)
    if gold_clicks != edge_clicks:
        summary.add(
            "Sessions, edge vs gold",
            f"not compared: gold/click_sessions holds {gold_clicks:,} clicks, the edge app {edge_clicks:,} "
            "(the lake and the topics hold different data, e.g. after an ingest outside the demo)",
        )
    elif sessions != gold_rows:
        only_edge, only_gold = sorted(sessions - gold_rows), sorted(gold_rows - sessions)
        raise RuntimeError(
            f"the edge's sessions differ from gold/click_sessions: {len(only_edge)} only in the edge "
            f"(e.g. {only_edge[:3]}), {len(only_gold)} only in gold (e.g. {only_gold[:3]})"
        )
    else:
        summary.add(
            "Sessions, edge = gold",
            f"all {len(sessions):,} sessions agree (user, start, end, clicks, pages): Kafka Streams' "
            f"session windows at the edge and Spark in gold apply the same 30-minute inclusive gap",
        )
    gold = gold_revenue(settings)
    top = sorted(edge, key=edge.__getitem__, reverse=True)[:3]
    summary.add("Revenue, live (edge store)", "; ".join(f"{p} {edge[p]:,.2f}" for p in top))
    summary.add("Revenue, gold (lake)", "; ".join(f"{p} {gold.get(p, 0.0):,.2f}" for p in top))
    orders, clicks = data.injected.get(ORDERS, {}), data.injected.get(CLICKS, {})
    summary.add(
        "Bad records (on purpose)",
        f"{orders.get('invalid', 0)} orders and {clicks.get('invalid', 0)} clicks malformed, "
        f"{orders.get('duplicate', 0) + clicks.get('duplicate', 0)} duplicated, "
        f"{orders.get('late', 0)} orders late",
    )

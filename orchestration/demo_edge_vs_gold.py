"""Edge vs gold: the lake's gold tables read back in the edge apps' shape, and the comparison the
demo reports.

Sessions must agree exactly (the same 30-minute inclusive gap at the edge and in Spark). When the edge
and gold hold different clicks they are not compared, and the summary row is a warning (``!``, never a
✓) with the reason read from the data: the clicks the edge app dropped as late, or which side holds
more. Revenue is shown side by side, since the edge counts duplicates and malformed orders that silver
removes.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from orchestration.demo_edge_runs import EdgeSessions
from orchestration.demo_report import DemoSummary
from orchestration.settings import Settings

#: a session as the demo compares it: (user, start ms, end ms, clicks, pages)
Session = tuple[str, int, int, int, int]


def gold_sessions(settings: Settings) -> set[Session]:
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


def _minutes(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    return f"{minutes // 60} h" if minutes % 60 == 0 else f"{minutes} min"


def sessions_not_compared(edge: EdgeSessions, gold_clicks: int) -> str:
    """Why the edge's sessions and ``gold/click_sessions`` hold different clicks, from what each holds
    and what the edge app dropped: the reason a user can act on, not a guess."""
    from examples.click_sessions import GAP, GRACE

    edge_clicks = sum(r[3] for r in edge.sessions)
    held = f"gold/click_sessions holds {gold_clicks:,} clicks, the edge app's sessions {edge_clicks:,}"
    if edge.late:
        return (
            f"not compared: {held}: the edge app dropped {edge.late:,} click{'' if edge.late == 1 else 's'} "
            "as late, more than the "
            f"{_minutes(GAP)} gap + {_minutes(GRACE)} grace behind a newer click of their partition "
            "(clicks produced after newer ones, e.g. a `streamhouse generate` batch for yesterday "
            "before this run's three days, or a producer without enable.idempotence that reordered "
            "a retry); gold keeps them (docs/demo.md, Sessions)"
        )
    if gold_clicks > edge_clicks:
        return (
            f"not compared: {held} and this run dropped none as late: gold holds clicks the edge "
            "app never put in a session (its local state or consumer group was reset, or an "
            "earlier run dropped them as late)"
        )
    return (
        f"not compared: {held} and this run dropped none as late: the edge read clicks gold has "
        "not built yet (a day whose daily run has not happened, e.g. after `streamhouse generate` "
        "without an ingest and daily run)"
    )


def compare_sessions(summary: DemoSummary, edge: EdgeSessions, gold_rows: set[Session]) -> None:
    """Edge = gold session for session, or a warning (never a ✓) saying why they were not compared."""
    sessions = edge.sessions
    edge_clicks, gold_clicks = sum(r[3] for r in sessions), sum(r[3] for r in gold_rows)
    if gold_clicks != edge_clicks:
        summary.warn("Sessions, edge vs gold", sessions_not_compared(edge, gold_clicks))
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


def compare_edge_with_gold(
    settings: Settings,
    summary: DemoSummary,
    edge: dict[str, float],
    sessions: EdgeSessions,
    data: Any,
) -> None:
    from assets.sample_data import CLICKS, ORDERS

    compare_sessions(summary, sessions, gold_sessions(settings))
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

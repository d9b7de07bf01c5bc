"""Hook (``run_all.EDGE_HOOKS``): stream-stream join throughput, Streamhouse and a raw confluent-kafka loop.

``orders.join(payments, joiner, JoinWindows.of_time_difference_and_grace(5 min, 1 min))`` on two
1-partition topics keyed by order id, ``ctx.windowed_events`` records in all (200k in ``make bench``):
half orders, about half payments, 1,000 orders per minute of event time, each topic in event-time
order (``benchmarks/event_time.py``).
Quix Streams has no windowed stream-stream join, so the other system is the hand-written loop
(``benchmarks/anchors/raw_join.py``: dicts, no changelog -- a ceiling, not a like-for-like system).

Timed from outside: input records / (expected-th output - first input). Checked, untimed: every order
has exactly as many joined outputs as it has payments within ±5 minutes, each output within the window.
"""

from __future__ import annotations

from typing import Any

from benchmarks.anchors import raw_join
from benchmarks.common import not_available
from benchmarks.event_time import prepare_join_input, verify_join
from benchmarks.systems import streamhouse_windowed
from benchmarks.timed_child import unverified

WORKLOAD = "stream-stream-join"
#: What the hook needs per 1M input records (input ~15 s, Streamhouse, raw loop, two read-backs).
NEED_S_PER_1M = 90.0


def needs_s(events: int) -> float:
    return 15.0 + NEED_S_PER_1M * events / 1_000_000


def bench(ctx: Any) -> list[dict[str, Any]]:
    events = getattr(ctx, "windowed_events", None) or ctx.events
    need = needs_s(events)
    if hasattr(ctx, "remaining_s") and ctx.remaining_s() < need:
        left = ctx.remaining_s()
        reason = f"skipped: needs ~{need:.0f} s at {events:,} records, {left:.0f} s left in the budget"
        return [
            not_available(s, WORKLOAD, events, reason) for s in (streamhouse_windowed.SYSTEM, raw_join.SYSTEM)
        ]
    orders, payments = f"bench-{ctx.run_id}-orders", f"bench-{ctx.run_id}-payments"
    info, joins = prepare_join_input(ctx.client, orders, payments, events)
    print(f"  join input: {info}", flush=True)
    total, expected = info["events"], info["expected_joins"]

    def timeout(cap: float) -> float:
        return ctx.timeout_s(cap) if hasattr(ctx, "timeout_s") else cap

    out = []
    reason = streamhouse_windowed.availability_join()
    if reason:
        out.append(not_available(streamhouse_windowed.SYSTEM, WORKLOAD, total, reason))
    else:
        r = streamhouse_windowed.run(
            ctx.client, app="join", inputs=[orders, payments], input_events=total, expected_outputs=expected,
            workdir=ctx.workdir, tag=f"{ctx.run_id}-sh-join", timeout_s=timeout(240), workload=WORKLOAD,
        )  # fmt: skip
        out.append(_checked(r, ctx, joins))
    raw = raw_join.bench(ctx.client, orders, payments, total, expected, ctx.workdir, ctx.run_id, timeout(180))
    out.append(_checked(raw, ctx, joins))
    sh, ref = out
    if sh.get("events_per_s") and ref.get("events_per_s"):
        sh["vs_raw"] = round(sh["events_per_s"] / ref["events_per_s"], 2)
        ref["vs_raw"] = 1.0
    for r in out:
        r["input"] = info
    return out


def _checked(r: dict[str, Any], ctx: Any, joins: Any) -> dict[str, Any]:
    if not r.get("events_per_s"):
        return r
    v = verify_join(ctx.client, r["output_topic"], joins)
    r["verification"] = v
    if not v["correct"]:
        bad = {
            k: v[k] for k in ("output_records", "expected_output_records", "orders_wrong", "outside_window")
        }
        return unverified(r, f"joined output does not match the expected pairs: {bad}")
    return r

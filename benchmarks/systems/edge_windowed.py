"""Hook (``run_all.EDGE_HOOKS``): windowed count, Streamhouse vs Quix Streams, on one timestamped input.

1-minute tumbling windows, no grace, 10k keys, ``ctx.windowed_events`` events (200k in ``make bench``,
``--windowed-events 1000000`` for the full size) at 1,000 events per minute of event time (1M events:
~1,000 minutes) with a little disorder (``benchmarks/event_time.py``), produced once to a
1-partition topic both systems read. Both keep their windows in RocksDB with a changelog and emit one
output per update (Streamhouse: caching disabled; Quix: ``.current()``), at-least-once, 1 s commits.
Each is a child process timed from outside: input events / (expected-th output - first input).

Every output is checked, untimed: the final count of every (key, window) must equal the truth computed
while generating the input, under the system's own lateness rule; a run that fails the check reports no
figure (``status: failed``, the rate kept as ``events_per_s_unverified``).

The raw loop (``benchmarks/anchors/raw_windowed.py``: a dict of (key, window) counts, no store) runs on
the same input as the ceiling; the edge's row carries ``vs_raw``, its rate over the loop's.
A second Streamhouse run (``windowed-count-retention-1h``) gives the window store a 1-hour retention:
with the default (size + grace = 1 minute) each minute of event time opens a RocksDB segment and
destroys an expired one, which is what limits the default run (docs/benchmarks.md).
"""

from __future__ import annotations

from typing import Any

from benchmarks.anchors import quix_windowed, raw_windowed
from benchmarks.common import not_available
from benchmarks.event_time import prepare_windowed_input, verify_windowed
from benchmarks.systems import streamhouse_windowed
from benchmarks.timed_child import unverified

WORKLOAD = "windowed-count"
#: The same app with a 1-hour window-store retention: 1-hour segments instead of 1-minute ones.
WORKLOAD_1H = "windowed-count-retention-1h"
#: What the hook needs at 1M events (measured ~N s; producing the input ~15 s); less is skipped.
NEED_S_PER_1M = 150.0


def needs_s(events: int) -> float:
    return 20.0 + NEED_S_PER_1M * events / 1_000_000


def bench(ctx: Any) -> list[dict[str, Any]]:
    events = getattr(ctx, "windowed_events", None) or ctx.events
    keys = getattr(ctx, "keys", 10_000)
    need = needs_s(events)
    if hasattr(ctx, "remaining_s") and ctx.remaining_s() < need:
        reason = (
            f"skipped: needs ~{need:.0f} s at {events:,} events, {ctx.remaining_s():.0f} s left in the budget"
        )
        return [
            not_available(s, WORKLOAD, events, reason)
            for s in (streamhouse_windowed.SYSTEM, quix_windowed.SYSTEM)
        ]
    topic = f"bench-{ctx.run_id}-wcount-input"
    info, truth = prepare_windowed_input(ctx.client, topic, events, keys)
    print(f"  windowed input: {info}", flush=True)

    def timeout(cap: float) -> float:
        return ctx.timeout_s(cap) if hasattr(ctx, "timeout_s") else cap

    out: list[dict[str, Any]] = []
    variants: list[dict[str, Any]] = []
    reason = streamhouse_windowed.availability_windowed()
    if reason:
        out.append(not_available(streamhouse_windowed.SYSTEM, WORKLOAD, events, reason))
    else:
        r = streamhouse_windowed.run(
            ctx.client, app="windowed", inputs=[topic], input_events=events,
            expected_outputs=truth.outputs("partition", events), workdir=ctx.workdir,
            tag=f"{ctx.run_id}-sh-windowed", timeout_s=timeout(240), workload=WORKLOAD,
        )  # fmt: skip
        out.append(_checked(r, ctx, topic, truth, "partition", events, count_field="count"))
        if getattr(ctx, "windowed_retention_variant", True):
            variant = streamhouse_windowed.run(
                ctx.client, app="windowed", inputs=[topic], input_events=events,
                expected_outputs=truth.outputs("partition", events), workdir=ctx.workdir,
                tag=f"{ctx.run_id}-sh-windowed-1h", timeout_s=timeout(240), workload=WORKLOAD_1H,
                retention_ms=3_600_000,
            )  # fmt: skip
            variants.append(_checked(variant, ctx, topic, truth, "partition", events, count_field="count"))
    if getattr(ctx, "windowed_raw_loop", True):
        expected = truth.outputs("partition", events)
        raw = raw_windowed.bench(ctx.client, topic, events, expected, ctx.workdir, ctx.run_id, timeout(240))
        raw = _checked(raw, ctx, topic, truth, "partition", events, count_field="count")
        variants.insert(0, raw)  # listed right after the edge's row
        if raw.get("events_per_s") and out[0].get("events_per_s"):
            out[0]["vs_raw"] = round(out[0]["events_per_s"] / raw["events_per_s"], 2)
    if getattr(ctx, "skip_quix", False):
        out.append(not_available(quix_windowed.SYSTEM, WORKLOAD, events, "skipped (skip_quix)"))
    else:
        q = quix_windowed.bench(
            ctx.client, topic, events, truth.outputs("key", events), ctx.workdir, ctx.run_id, timeout(360)
        )
        out.append(_checked(q, ctx, topic, truth, "key", events, count_field="value"))
    quix = out[-1]
    out[1:1] = variants
    for r in out:
        if r.get("events_per_s") and quix.get("events_per_s"):
            r["vs_quix"] = round(r["events_per_s"] / quix["events_per_s"], 2)
    for r in out:
        r["input"] = info
        r["keys"] = keys
    return out


def _checked(
    r: dict[str, Any], ctx: Any, topic: str, truth: Any, rule: str, events: int, *, count_field: str
) -> dict[str, Any]:
    """Attach the verification; a wrong output turns the figure into a failure."""
    r["input_topic"] = topic
    if not r.get("events_per_s"):
        return r
    v = verify_windowed(
        ctx.client, r["output_topic"], truth, rule, events, start_field="start", count_field=count_field
    )
    r["verification"] = v
    if not v["correct"]:
        bad = {k: v[k] for k in ("output_records", "expected_output_records", "key_windows_wrong")}
        return unverified(r, f"output does not match the expected window counts: {bad}")
    return r

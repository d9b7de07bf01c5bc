"""The edge benchmarks of the quick set that are not hooks: count, relay and enrichment latency,
exactly-once overhead, enrichment, changelog restore and instance scaling.

Each ``bench_*`` takes the shared ``BenchContext`` and returns result objects (``benchmarks.common
.result``); the configurations the latency and restore targets are judged on are defined here, next to
the code that measures them, and read by ``benchmarks.targets``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks.common import not_available, result
from benchmarks.context import BenchContext, find_result


def bench_edge_count(ctx: BenchContext, skip_quix: bool, rounds: int) -> list[dict[str, Any]]:
    """Raw loop, Streamhouse and Quix on the same input, interleaved for ``rounds`` rounds.

    Each system's figure is its best round (the least-disturbed run on a shared machine; every system
    is treated the same way); all rounds are kept under ``rounds``.
    """
    from benchmarks.anchors import quix_count, raw_loop
    from benchmarks.systems import streamhouse_count

    systems: list[tuple[str, Callable[..., dict[str, Any]], float]] = [
        (raw_loop.SYSTEM, raw_loop.bench, 180),
        (streamhouse_count.SYSTEM, streamhouse_count.bench, 240),
        (quix_count.SYSTEM, quix_count.bench, 300),
    ]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in systems}
    for rnd in range(rounds):
        if rnd and ctx.remaining_s() < 240:
            print(f"  round {rnd + 1} skipped: time budget", flush=True)
            break
        for name, fn, cap in systems:
            if name == quix_count.SYSTEM and skip_quix:
                continue
            if rnd and not any(r.get("events_per_s") for r in runs[name]) and runs[name]:
                continue  # not available / failed in round 1: do not retry
            rid = f"{ctx.run_id}c{rnd}"
            args = (ctx.client, ctx.input_topic, ctx.events, ctx.workdir, rid, ctx.timeout_s(cap))
            r = guarded(lambda fn=fn, args=args: fn(*args), name, "count", ctx)
            runs[name].append(r)
            print_progress(r, f"round {rnd + 1}")
    out = []
    for name, _, _ in systems:
        rs = runs[name]
        if not rs:
            out.append(not_available(name, "count", ctx.events, "skipped (--skip-quix)"))
            continue
        ok = [r for r in rs if r.get("events_per_s")]
        best = dict(max(ok, key=lambda r: r["events_per_s"]) if ok else rs[-1])
        best["rounds"] = [
            {
                "events_per_s": r.get("events_per_s"),
                "elapsed_s": r.get("elapsed_s"),
                "status": r.get("status"),
                "correct": (r.get("verification") or {}).get("correct"),
            }
            for r in rs
        ]
        best["figure"] = f"best of {len(rs)} interleaved rounds"
        out.append(best)
    by = {r["system"]: r for r in out}
    quix, raw = by.get(quix_count.SYSTEM), by.get(raw_loop.SYSTEM)
    for r in out:
        r.setdefault("keys", ctx.keys)
        r["input_topic"] = ctx.input_topic
        for label, ref in (("vs_quix", quix), ("vs_raw", raw)):
            if r.get("events_per_s") and ref and ref.get("events_per_s"):
                r[label] = round(r["events_per_s"] / ref["events_per_s"], 2)
    return out


def bench_relay(
    ctx: BenchContext, duration_s: float, repeats: int, sweep: bool = False
) -> list[dict[str, Any]]:
    """The relay on the shipped client settings (``sweep``: every setting of ``relay_latency.CONFIGS``)."""
    from benchmarks.anchors import relay_latency

    return relay_latency.bench(
        ctx.client, ctx.workdir, f"{ctx.run_id}r", rate=1000.0, duration_s=duration_s, repeats=repeats,
        sweep=sweep,
    )  # fmt: skip


def bench_edge_eos(ctx: BenchContext) -> list[dict[str, Any]]:
    from benchmarks.systems import streamhouse_count

    return streamhouse_count.bench_eos_overhead(
        ctx.client, ctx.input_topic_variants, ctx.variant_events, ctx.workdir, ctx.run_id, ctx.timeout_s(180),
        rounds=2, enough_time=lambda: ctx.remaining_s() > 150,
    )  # fmt: skip


def bench_edge_enrichment(ctx: BenchContext) -> list[dict[str, Any]]:
    from benchmarks.systems import streamhouse_count

    r = streamhouse_count.bench_enrichment(
        ctx.client, ctx.input_topic, ctx.table_topic, ctx.events, ctx.workdir, ctx.run_id, ctx.timeout_s(240)
    )
    r["table_rows"] = ctx.table_rows
    return [r]


@dataclass(frozen=True)
class AppLatencyConfig:
    """One enrichment-latency configuration and the relay configuration it is compared with."""

    client: str  # relay_latency.CONFIGS entry: the client settings
    compare_with: str  # the relay configuration it is judged against
    guarantee: str = "at_least_once"
    poll_ms: int | None = None  # None: the runtime's default
    optimization: str | None = None  # topology.optimization (None: Kafka's default, none)


#: Enrichment-latency configurations, all on the shipped client settings and runtime defaults (commit
#: interval: 30 s at-least-once, 100 ms exactly-once), judged against the relay on the same settings.
APP_LATENCY_CONFIGS: dict[str, AppLatencyConfig] = {
    "as-shipped": AppLatencyConfig("baseline", "baseline"),
    "exactly-once": AppLatencyConfig("baseline", "baseline", guarantee="exactly_once_v2"),
    # Kafka's recommended production setting: the users table is restored from its source topic, so
    # its first commit produces no 10k-record changelog (reported; the target is judged as shipped)
    "optimization=all": AppLatencyConfig("baseline", "baseline", optimization="all"),
}
#: exactly-once target: p50 within one (default) commit interval of the relay's
EOS_COMMIT_INTERVAL_MS = 100


def bench_enrichment_latency(ctx: BenchContext, duration_s: float, repeats: int) -> list[dict[str, Any]]:
    """The enrichment app where the relay was: same generator, sink, rate and client settings."""
    from benchmarks.anchors import relay_latency
    from benchmarks.systems import streamhouse_count

    reason = streamhouse_count.availability()
    if reason:
        return [not_available(relay_latency.APP_SYSTEM, relay_latency.APP_WORKLOAD, 0, reason)]
    cfgs = APP_LATENCY_CONFIGS
    configs = {name: relay_latency.CONFIGS[c.client] for name, c in cfgs.items()}
    out = relay_latency.bench(
        ctx.client, ctx.workdir, f"{ctx.run_id}a", rate=1000.0, duration_s=duration_s, repeats=repeats,
        configs=configs, role="app", table=(ctx.table_topic, ctx.table_rows),
        repeated=tuple(n for n, c in cfgs.items() if not c.optimization),  # variants run once
        poll_ms={n: c.poll_ms for n, c in cfgs.items() if c.poll_ms is not None},
        guarantee={n: c.guarantee for n, c in cfgs.items()},
        optimization={n: c.optimization for n, c in cfgs.items() if c.optimization},
    )  # fmt: skip
    relays = {r.get("config"): r for r in ctx.results.get("relay_latency", [])}
    for r in out:
        c = cfgs.get(r.get("config", ""))
        ref = relays.get(c.compare_with) if c else None
        if r.get("p50_ms") and ref and ref.get("p50_ms"):
            r["compared_with_relay"] = ref["config"]
            r["p50_vs_relay"] = round(r["p50_ms"] / ref["p50_ms"], 2)
            r["p99_vs_relay"] = round(r["p99_ms"] / ref["p99_ms"], 2)
            r["p50_minus_relay_ms"] = round(r["p50_ms"] - ref["p50_ms"], 2)
    return out


def bench_edge_restore(ctx: BenchContext) -> list[dict[str, Any]]:
    """Restore the changelog the Streamhouse count run wrote, into a fresh instance's empty state dir."""
    from benchmarks.systems import streamhouse_count

    count = find_result(ctx.results, "edge_count", system=streamhouse_count.SYSTEM) or {}
    out = [streamhouse_count.bench_restore(ctx.client, count, ctx.workdir, ctx.timeout_s(120))]
    out.append(guarded(lambda: _steady_restore(ctx), "streamhouse-edge", RESTORE_STEADY, ctx))
    return out


#: The restore-rate figure the target is judged on: a changelog big enough for a steady rate.
RESTORE_STEADY = "changelog-restore-400k-distinct"


def _steady_restore(ctx: BenchContext) -> dict[str, Any]:
    from benchmarks.edge_runtime_restore import measure_restore

    figures = measure_restore(ctx.client, ctx.workdir, 400_000, 4, name=f"bench-{ctx.run_id}-restore")
    method = ("400k distinct keys over 4 changelog partitions, empty state dir, RocksDB; rate over the "
              "restore consumer's pass (benchmarks/edge_runtime_restore.py)")  # fmt: skip
    return result("streamhouse-edge", RESTORE_STEADY, figures["records"], figures["restore_records_per_s"],
                  method=method, **figures)  # fmt: skip


def bench_edge_instances(ctx: BenchContext) -> list[dict[str, Any]]:
    from benchmarks.systems import streamhouse_count

    return streamhouse_count.bench_instances(
        ctx.client, ctx.input_topic_2p, ctx.variant_events, ctx.workdir, ctx.run_id, ctx.timeout_s(180)
    )


def guarded(
    fn: Callable[[], dict[str, Any]], system: str, workload: str, ctx: BenchContext
) -> dict[str, Any]:
    try:
        return fn()
    except Exception as exc:
        return result(system, workload, ctx.events, None, status="failed",
                      reason=f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}")  # fmt: skip


def print_progress(r: dict[str, Any], note: str = "") -> None:
    eps = r.get("events_per_s")
    figure = f"{eps:,} events/s" if eps else f"{r.get('status')}: {str(r.get('reason', ''))[:160]}"
    ok = (r.get("verification") or {}).get("correct")
    check = "" if ok is None else ("  output verified" if ok else "  OUTPUT WRONG")
    print(f"  {r['system']:<22} {r['workload']:<20} {figure}{check}  {note}", flush=True)

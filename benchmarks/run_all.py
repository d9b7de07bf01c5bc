"""The quick benchmark set (``make bench``): every system side by side, in one run, on one broker.

Starts ONE embedded broker, pre-produces the shared input once, then runs each benchmark (systems as
child processes, timed from outside -- see ``benchmarks/common.py``) within a time budget. Writes
``benchmarks/results/<name>.json`` per benchmark, ``benchmarks/results/summary.json`` (figures, ratios,
targets met or not) and PNG plots into ``docs/benchmarks/``, and prints a table.

Figures with no runnable implementation are reported as ``not available: <reason>``, never estimated.
Hooks: a module ``benchmarks/systems/<module>.py`` listed in ``HOOKS`` that defines
``bench(ctx: BenchContext) -> list[dict]`` (objects built with ``benchmarks.common.result``) is picked up
automatically; see docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import (
    COMMIT_INTERVAL_S,
    DEFAULT_EVENTS,
    DEFAULT_KEYS,
    PLOTS_DIR,
    RESULTS_DIR,
    ROOT,
    machine_info,
    not_available,
    prepare_input,
    prepare_table,
    result,
    write_results,
)
from edge.broker import local_broker, profile_for
from edge.kafka import KafkaClientConfig

#: The whole quick set must finish within 10 minutes; benchmarks that would not fit are skipped.
DEFAULT_BUDGET_S = 570.0


@dataclass
class BenchContext:
    """What a benchmark (or a hook) gets: the shared broker, the shared input, a scratch dir, a budget."""

    client: KafkaClientConfig
    workdir: Path
    run_id: str
    events: int
    keys: int
    input_topic: str
    variant_events: int
    input_topic_variants: str
    input_topic_2p: str
    table_topic: str
    table_rows: int
    deadline: float
    #: results gathered so far, by benchmark name (e.g. the relay figures for a latency comparison)
    results: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: sizes the lakehouse hooks run at: "quick" (small, inside this budget), "full" (the target sizes,
    #: ``benchmarks/run_lakehouse.py``), "tiny" (tests)
    lakehouse_scale: str = "quick"
    #: input size of the windowed-count and stream-stream join hooks (None: ``events``)
    windowed_events: int | None = None

    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()

    def timeout_s(self, cap: float) -> float:
        return max(10.0, min(cap, self.remaining_s() - 5))


# --------------------------------------------------------------------------------------- benchmarks


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
            r = _guard(lambda fn=fn, args=args: fn(*args), name, "count", ctx)
            runs[name].append(r)
            _progress(r, f"round {rnd + 1}")
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

    count = _find(ctx.results, "edge_count", system=streamhouse_count.SYSTEM) or {}
    out = [streamhouse_count.bench_restore(ctx.client, count, ctx.workdir, ctx.timeout_s(120))]
    out.append(_guard(lambda: _steady_restore(ctx), "streamhouse-edge", RESTORE_STEADY, ctx))
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


#: Figures whose implementation belongs to other parts of Streamhouse: (result name, module, workload,
#: what it measures). A module that exists and defines ``bench(ctx)`` is run; otherwise "not available".
HOOKS: list[tuple[str, str, str, str]] = [
    ("lakehouse_bronze", "benchmarks.systems.lakehouse_bronze", "kafka-to-bronze",
     "Kafka -> bronze Delta ingestion (records/s)"),
    ("lakehouse_gold", "benchmarks.systems.lakehouse_gold", "gold-windowed-aggregation",
     "gold windowed aggregation at 1M, 5M, 20M events (cost should grow linearly)"),
    ("lakehouse_incremental", "benchmarks.systems.lakehouse_incremental", "gold-incremental",
     "incremental run after 1% new data vs a full run"),
]  # fmt: skip


#: Edge figures run as hooks, before the lakehouse ones (benchmarks/systems/edge_windowed.py, edge_join.py).
EDGE_HOOKS: list[tuple[str, str, str, str]] = [
    ("edge_windowed", "benchmarks.systems.edge_windowed", "windowed-count",
     "1-minute tumbling-window count, Streamhouse vs Quix Streams (events/s)"),
    ("edge_join", "benchmarks.systems.edge_join", "stream-stream-join",
     "orders x payments windowed stream-stream join (records/s)"),
    ("peers", "benchmarks.systems.peers", "peers",
     "Kafka Streams, Bytewax, Pathway: count, windowed count, enrichment, stream-stream join"),
]  # fmt: skip

LAKEHOUSE_RESULTS = RESULTS_DIR / "lakehouse.json"
LAKEHOUSE_HOOK_NAMES = {name for name, _, _, _ in HOOKS}


def stop_lakehouse_spark() -> None:
    """Stop the Spark session a lakehouse hook started (hooks share one; it lives until the end)."""
    if "benchmarks.systems.lakehouse_common" in sys.modules:
        try:
            sys.modules["benchmarks.systems.lakehouse_common"].stop_spark()
        except Exception as exc:  # the results are written already; say so and go on
            print(f"  stopping the lakehouse Spark session failed: {exc!r}", flush=True)


def _separate_lakehouse_measurement(name: str) -> dict[str, Any] | None:
    """What the lakehouse's own benchmark (benchmarks/lakehouse_bench.py, a separate run with its own
    broker) last recorded for this figure -- shown for information, never as this run's figure."""
    try:
        data = json.loads(LAKEHOUSE_RESULTS.read_text())
        runs = data["runs"]
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(LAKEHOUSE_RESULTS.stat().st_mtime))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if name == "lakehouse_bronze":
        figures = {r["events"]: r.get("bronze_records_per_s") for r in runs}
        return {"source": str(LAKEHOUSE_RESULTS.relative_to(ROOT)), "recorded_at": when,
                "bronze_records_per_s_by_events": figures}  # fmt: skip
    if name == "lakehouse_gold":
        figures = {r["events"]: r.get("gold_materialization_s") for r in runs}
        return {"source": str(LAKEHOUSE_RESULTS.relative_to(ROOT)), "recorded_at": when,
                "gold_materialization_s_by_events": figures}  # fmt: skip
    return None


def run_hook(ctx: BenchContext, name: str, module: str, workload: str, what: str) -> list[dict[str, Any]]:
    system = "streamhouse-lakehouse" if name.startswith("lakehouse") else "streamhouse-edge"
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            reason = f"no hook in this run ({module.replace('.', '/')}.py does not exist)"
        else:
            reason = f"{module} does not import: ModuleNotFoundError: {exc}"
        extra = {"measures": what}
        separate = _separate_lakehouse_measurement(name)
        if separate:
            extra["separate_measurement"] = separate
        return [not_available(system, workload, 0, reason, **extra)]
    except Exception as exc:
        return [not_available(system, workload, 0, f"{module} does not import: {type(exc).__name__}: {exc}",
                              measures=what)]  # fmt: skip
    fn = getattr(mod, "bench", None)
    if not callable(fn):
        return [not_available(system, workload, 0, f"{module} defines no bench(ctx)", measures=what)]
    try:
        out = fn(ctx)
        return [out] if isinstance(out, dict) else list(out)
    except Exception as exc:
        return [result(system, workload, 0, None, status="failed", measures=what,
                       reason=f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}")]  # fmt: skip


def _guard(fn: Callable[[], dict[str, Any]], system: str, workload: str, ctx: BenchContext) -> dict[str, Any]:
    try:
        return fn()
    except Exception as exc:
        return result(system, workload, ctx.events, None, status="failed",
                      reason=f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}")  # fmt: skip


def _progress(r: dict[str, Any], note: str = "") -> None:
    eps = r.get("events_per_s")
    figure = f"{eps:,} events/s" if eps else f"{r.get('status')}: {str(r.get('reason', ''))[:160]}"
    ok = (r.get("verification") or {}).get("correct")
    check = "" if ok is None else ("  output verified" if ok else "  OUTPUT WRONG")
    print(f"  {r['system']:<22} {r['workload']:<20} {figure}{check}  {note}", flush=True)


# --------------------------------------------------------------------------------------- summary


def _find(results: dict[str, list[dict[str, Any]]], bench: str, **match: Any) -> dict[str, Any] | None:
    for r in results.get(bench, []):
        if all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def _target(name: str, value: Any, target: str, met: bool | None, note: str = "") -> dict[str, Any]:
    return {"target": name, "value": value, "required": target, "met": met, "note": note}


def evaluate_targets(results: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The benchmark targets (docs/benchmarks.md), each with the measured value, or why it could not be
    evaluated."""
    out = []
    sh = _find(results, "edge_count", system="streamhouse-edge")
    quix = _find(results, "edge_count", system="quix-streams")
    raw = _find(results, "edge_count", system="raw-confluent-kafka")

    def ratio(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float | None:
        if a and b and a.get("events_per_s") and b.get("events_per_s"):
            return round(a["events_per_s"] / b["events_per_s"], 2)
        return None

    def why(*rs: dict[str, Any] | None) -> str:
        return "; ".join(f"{r['system']}: {str(r.get('reason', ''))[:200]}" for r in rs if r and not
                         r.get("events_per_s")) or "not measured"  # fmt: skip

    q, w = ratio(sh, quix), ratio(sh, raw)
    out.append(_target("edge count: Streamhouse / Quix Streams", q, ">= 4.0", None if q is None else q >= 4.0,
                       "" if q is not None else why(sh, quix)))  # fmt: skip
    out.append(_target("edge count: Streamhouse / raw loop", w, ">= 1.0", None if w is None else w >= 1.0,
                       "" if w is not None else why(sh, raw)))  # fmt: skip
    c_sh, c_raw = ((r or {}).get("cpu_s_per_1m_events") for r in (sh, raw))
    out.append(_target("edge count: CPU-seconds per 1M events, Streamhouse vs raw loop", [c_sh, c_raw],
                       "Streamhouse <= raw loop", None if not (c_sh and c_raw) else c_sh <= c_raw,
                       "child user+system CPU incl. start-up"))  # fmt: skip
    eos = _find(results, "edge_eos", workload="count-eos-100ms")
    ov = eos.get("overhead_vs_alos") if eos else None
    out.append(_target("exactly-once overhead vs at-least-once (100 ms commits)", ov, "<= 0.05",
                       None if ov is None else ov <= 0.05, "" if ov is not None else why(eos)))  # fmt: skip
    lat = results.get("edge_enrichment_latency", [])
    for name, c in APP_LATENCY_CONFIGS.items():
        if c.optimization:
            continue  # a variant, reported in the JSON and the docs
        r = next((x for x in lat if x.get("config") == name), None)
        measured = bool(r and r.get("p50_vs_relay") is not None)
        note = (f"p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms, p99.9 {r['p999_ms']} ms; growth last/first "
                f"10 s: p50 x{r.get('growth_p50')}, p99 x{r.get('growth_p99')}" if measured and r else
                (why(r) if r else "not measured"))  # fmt: skip
        if c.guarantee == "exactly_once_v2":
            label = f"enrichment latency [{name}]: p50 minus relay [{c.compare_with}] p50, ms"
            d = r["p50_minus_relay_ms"] if measured and r else None
            out.append(_target(label, d, f"<= {EOS_COMMIT_INTERVAL_MS} (one commit interval)",
                               None if d is None else d <= EOS_COMMIT_INTERVAL_MS, note))  # fmt: skip
            continue
        label = f"enrichment latency [{name}] vs relay [{c.compare_with}]: p50 / p99 ratios"
        if measured and r:
            r50, r99 = r["p50_vs_relay"], r["p99_vs_relay"]
            out.append(_target(label, [r50, r99], "each <= 1.1", r50 <= 1.1 and r99 <= 1.1, note))
        else:
            out.append(_target(label, None, "each <= 1.1", None, note))
    rest = _find(results, "edge_restore", workload=RESTORE_STEADY)
    small = _find(results, "edge_restore", workload="changelog-restore")
    note = (f"steady state, 400k records; the count run's {small['events']:,}-record changelog: "
            f"{small['events_per_s']:,}/s" if small and small.get("events_per_s") else "")  # fmt: skip
    ok = bool(rest and rest.get("events_per_s"))
    out.append(_target("changelog restore records/s", rest["events_per_s"] if ok else None, ">= 1000000",
                       rest["events_per_s"] >= 1_000_000 if ok else None,
                       note if ok else why(*results.get("edge_restore", []))))  # fmt: skip
    br = next((r for r in results.get("lakehouse_bronze", []) if r.get("events_per_s")), None)
    out.append(_target("Kafka -> bronze records/s", br and br["events_per_s"], ">= 300000",
                       None if not br else br["events_per_s"] >= 300_000,
                       "" if br else why(*results.get("lakehouse_bronze", []))))  # fmt: skip
    wsh = _find(results, "edge_windowed", system="streamhouse-edge", workload="windowed-count")
    wq = _find(results, "edge_windowed", system="quix-streams")
    wr = ratio(wsh, wq)
    out.append(_target("windowed count: Streamhouse / Quix Streams", wr, ">= 2.0",
                       None if wr is None else wr >= 2.0,
                       f"{wsh['events']:,} events, outputs verified" if wsh and wr is not None
                       else why(wsh, wq)))  # fmt: skip
    js = _find(results, "edge_join", system="streamhouse-edge")
    out.append(_target("stream-stream join records/s (output verified)", js and js.get("events_per_s"),
                       "reported", None, f"x{js['vs_raw']} the raw loop" if js and js.get("vs_raw") else
                       why(js)))  # fmt: skip
    for name, bench in (
        ("gold windowed aggregation grows linearly (1M/5M/20M)", "lakehouse_gold"),
        ("incremental run after 1% new data costs ~1% of a full run", "lakehouse_incremental"),
    ):
        rs = results.get(bench, [])
        ok = [r for r in rs if r.get("events_per_s")]
        verdict = next((r.get("target_met") for r in ok if "target_met" in r), None)
        out.append(_target(name, [r.get("events_per_s") for r in ok] or None, "see docs", verdict,
                           "" if ok else why(*rs)))  # fmt: skip
    return out


def print_table(results: dict[str, list[dict[str, Any]]], targets: list[dict[str, Any]]) -> None:
    print("\n" + "=" * 100)
    print(f"{'benchmark':<24}{'system':<24}{'workload':<26}{'events':>10}{'events/s':>14}")
    print("-" * 100)
    for bench, rs in results.items():
        for r in rs:
            eps = f"{r['events_per_s']:,}" if r.get("events_per_s") else "n/a"
            extra = ""
            if r.get("p50_ms") is not None:
                extra = f"  p50 {r['p50_ms']} ms  p99 {r['p99_ms']} ms"
            if r.get("vs_quix") or r.get("vs_raw"):
                extra += f"  x{r.get('vs_quix', '-')} Quix  x{r.get('vs_raw', '-')} raw"
            if not r.get("events_per_s"):
                first_line = (str(r.get("reason") or "").splitlines() or [""])[0]
                extra = f"  {r.get('status')}: {first_line[:90]}"
            wl = f"{r['workload']}[{r['config']}]" if r.get("config") else r["workload"]
            print(f"{bench:<24}{r['system']:<24}{wl[:25]:<26}{r.get('events', 0):>10,}{eps:>14}{extra}")
    print("-" * 100)
    print("targets:")
    for t in targets:
        mark = {True: "MET ", False: "MISS", None: "n/a "}[t["met"]]
        note = f"  ({t['note'][:110]})" if t["note"] else ""
        print(f"  [{mark}] {t['target']}: {t['value']} (required {t['required']}){note}")
    print("=" * 100, flush=True)


# --------------------------------------------------------------------------------------- plots


def make_plots(results: dict[str, list[dict[str, Any]]], plots_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots_dir.mkdir(parents=True, exist_ok=True)
    written = []

    def bars(ax: Any, rows: list[dict[str, Any]], label: Callable[[dict[str, Any]], str], title: str) -> None:
        names = [label(r) for r in rows]
        vals = [r.get("events_per_s") or 0 for r in rows]
        colors = ["#2b7bb9" if "streamhouse" in r["system"] else "#999999" for r in rows]
        ax.bar(names, vals, color=colors)
        for i, r in enumerate(rows):
            text = f"{r['events_per_s']:,}/s" if r.get("events_per_s") else "not available"
            ax.text(i, (vals[i] or 0) + max([*vals, 1]) * 0.01, text, ha="center", va="bottom", fontsize=8)
        ax.set_ylabel("events/s")
        ax.set_title(title, fontsize=10)
        ax.tick_params(axis="x", labelsize=8)

    count = results.get("edge_count", [])
    if count:
        fig, ax = plt.subplots(figsize=(7, 4))
        ev = count[0].get("events", 0)
        title = f"Count per key, {ev:,} JSON events, {DEFAULT_KEYS:,} keys, 1 partition, at-least-once"
        bars(ax, count, lambda r: r["system"], title)
        fig.tight_layout()
        written.append(plots_dir / "edge_count_throughput.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)

    relay = [
        {**r, "config": f"{'relay' if r['system'] == 'raw-relay' else 'streamhouse'}: {r['config']}"}
        for r in results.get("relay_latency", []) + results.get("edge_enrichment_latency", [])
        if r.get("p50_ms") is not None
    ]
    if relay:
        fig, ax = plt.subplots(figsize=(10, 4.5))
        xs = range(len(relay))
        ax.bar([x - 0.2 for x in xs], [r["p50_ms"] for r in relay], width=0.4, label="p50", color="#2b7bb9")
        ax.bar([x + 0.2 for x in xs], [r["p99_ms"] for r in relay], width=0.4, label="p99", color="#e07b39")
        ax.set_xticks(list(xs), [r["config"] for r in relay], rotation=20, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("end-to-end latency (ms, log scale)")
        ax.set_title(
            "End-to-end latency at 1k events/s: raw relay vs Streamhouse enrichment app (medians of runs)",
            fontsize=10,
        )
        ax.legend()
        fig.tight_layout()
        written.append(plots_dir / "relay_latency.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)

    variants = (
        results.get("edge_enrichment", [])
        + results.get("edge_eos", [])
        + results.get("edge_instances", [])
        + results.get("edge_restore", [])
    )
    if variants:
        fig, ax = plt.subplots(figsize=(9, 4))
        title = "Streamhouse edge: enrichment, guarantees, instances (events/s); restore (records/s)"
        bars(ax, variants, lambda r: r["workload"].replace("count-", ""), title)
        fig.tight_layout()
        written.append(plots_dir / "edge_variants.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    return written


# --------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=DEFAULT_EVENTS, help="count workload size (default 1M)")
    ap.add_argument("--variant-events", type=int, default=300_000,
                    help="events for the exactly-once and instance-scaling runs (default 300k)")  # fmt: skip
    ap.add_argument("--windowed-events", type=int, default=200_000,
                    help="input of the windowed-count and stream-stream join (default 200k)")  # fmt: skip
    ap.add_argument("--keys", type=int, default=DEFAULT_KEYS)
    ap.add_argument("--count-rounds", type=int, default=2, help="interleaved rounds of the count workload")
    ap.add_argument("--relay-seconds", type=float, default=30.0,
                    help="measured seconds per latency run (>= 30: see docs/benchmarks.md)")  # fmt: skip
    ap.add_argument("--relay-repeats", type=int, default=2)
    ap.add_argument("--relay-sweep", action="store_true",
                    help="run the relay under every client setting of relay_latency.CONFIGS")  # fmt: skip
    ap.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S)
    ap.add_argument("--skip-quix", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated benchmark names to run")
    ap.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    ap.add_argument(
        "--plots-dir", type=Path, default=None, help=f"default {PLOTS_DIR} (not written by --only)"
    )
    ap.add_argument("--keep-workdir", action="store_true")
    ap.add_argument("--plots-only", action="store_true", help="redraw the plots from <results-dir>/*.json")
    a = ap.parse_args(argv)
    plots_dir: Path | None = a.plots_dir or (None if a.only else PLOTS_DIR)
    if a.plots_only:
        saved = json.loads((a.results_dir / "summary.json").read_text())["results"]
        grouped: dict[str, list[dict[str, Any]]] = {}
        for r in saved:
            grouped.setdefault(r.get("benchmark", "?"), []).append(r)
        print("\n".join(map(str, make_plots(grouped, a.plots_dir or PLOTS_DIR))))
        return 0

    t_start = time.monotonic()
    only = {s.strip() for s in a.only.split(",") if s.strip()}
    run_id = time.strftime("%H%M%S")
    workdir = Path(tempfile.mkdtemp(prefix="streamhouse-bench-"))
    info = machine_info()
    print(f"streamhouse benchmarks: {a.events:,} events, {a.keys:,} keys; machine {info}", flush=True)
    results: dict[str, list[dict[str, Any]]] = {}
    inputs: dict[str, Any] = {}
    broker = local_broker(log_dir=workdir)
    broker.start()
    try:
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(broker.kind))
        print(f"embedded broker at {client.bootstrap_servers}; producing the input once ...", flush=True)
        inputs["table"] = prepare_table(client, f"bench-{run_id}-users", a.keys)
        inputs["count"] = prepare_input(client, f"bench-{run_id}-input", a.events, a.keys)
        print(f"  input: {inputs['count']}", flush=True)
        ctx = BenchContext(
            client=client, workdir=workdir, run_id=run_id, events=a.events, keys=a.keys,
            input_topic=f"bench-{run_id}-input", variant_events=a.variant_events,
            input_topic_variants=f"bench-{run_id}-input-v", input_topic_2p=f"bench-{run_id}-input-2p",
            table_topic=inputs["table"]["topic"], table_rows=inputs["table"]["rows"],
            deadline=t_start + a.budget_s, results=results, windowed_events=a.windowed_events,
        )  # fmt: skip

        def want(name: str) -> bool:
            return not only or name in only

        plan: list[tuple[str, float, Callable[[], list[dict[str, Any]]]]] = [
            ("edge_count", 60, lambda: bench_edge_count(ctx, a.skip_quix, a.count_rounds)),
            ("edge_restore", 30, lambda: bench_edge_restore(ctx)),
            ("edge_enrichment", 40, lambda: bench_edge_enrichment(ctx)),
            ("relay_latency", 30, lambda: bench_relay(ctx, a.relay_seconds, a.relay_repeats, a.relay_sweep)),
            (
                "edge_enrichment_latency",
                30,
                lambda: bench_enrichment_latency(ctx, a.relay_seconds, a.relay_repeats),
            ),
            ("edge_eos", 40, lambda: bench_edge_eos(ctx)),
            ("edge_instances", 40, lambda: bench_edge_instances(ctx)),
            *[
                (name, 30, lambda n=name, m=module, w=workload, h=what: run_hook(ctx, n, m, w, h))
                for name, module, workload, what in EDGE_HOOKS
            ],
        ]
        for name, module, workload, what in HOOKS:
            plan.append((name, 0, lambda n=name, m=module, w=workload, h=what: run_hook(ctx, n, m, w, h)))
        for name, min_s, fn in plan:
            if not want(name):
                continue
            if name in ("edge_eos", "edge_instances") and ctx.input_topic_variants not in inputs:
                v = prepare_input(client, ctx.input_topic_variants, a.variant_events, a.keys)
                v2 = prepare_input(client, ctx.input_topic_2p, a.variant_events, a.keys, partitions=2)
                inputs["variants"], inputs["variants_2p"] = v, v2
                inputs[ctx.input_topic_variants] = v
            print(f"\n[{name}] ({ctx.remaining_s():.0f} s of budget left)", flush=True)
            if ctx.remaining_s() < min_s:
                results[name] = [
                    not_available("-", name, 0, f"skipped: time budget ({a.budget_s:.0f} s) used up")
                ]
                continue
            t0 = time.monotonic()
            try:
                results[name] = fn()
            except Exception as exc:
                reason = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
                results[name] = [result("-", name, 0, None, status="failed", reason=reason)]
            for r in results[name]:
                r.setdefault("benchmark", name)
                r["machine"] = info
                if name not in ("edge_count",) and r["status"] != "ok":
                    _progress(r)
            # Quick-set lakehouse figures (small sizes) must not replace the full run's record
            # (benchmarks/run_lakehouse.py writes lakehouse_<name>.json).
            out_name = f"{name}_quick" if name in LAKEHOUSE_HOOK_NAMES else name
            write_results(out_name, results[name], a.results_dir)
            print(f"  -> {a.results_dir / (out_name + '.json')} ({time.monotonic() - t0:.0f} s)", flush=True)
    finally:
        stop_lakehouse_spark()
        broker.stop()
        if not a.keep_workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"work dir kept: {workdir}")

    targets = evaluate_targets(results)
    plots = make_plots(results, plots_dir) if plots_dir is not None else []
    summary = {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "wall_s": round(time.monotonic() - t_start, 1),
        "machine": {**info, "loadavg_1m_end": round(os.getloadavg()[0], 2)},
        "settings": {
            "events": a.events,
            "keys": a.keys,
            "variant_events": a.variant_events,
            "windowed_events": a.windowed_events,
            "commit_interval_s": COMMIT_INTERVAL_S,
            "relay_seconds": a.relay_seconds,
            "relay_repeats": a.relay_repeats,
            "broker": "embedded Tansu (in-memory), one for the whole run",
        },
        "inputs": inputs,
        "targets": targets,
        "results": [r for rs in results.values() for r in rs],
        "plots": [str(p.relative_to(Path.cwd())) if p.is_relative_to(Path.cwd()) else str(p) for p in plots],
    }
    a.results_dir.mkdir(parents=True, exist_ok=True)
    # A partial run (--only) must not replace the record of the whole quick set.
    summary_path = a.results_dir / ("summary-partial.json" if only else "summary.json")
    summary_path.write_text(json.dumps(summary, indent=2, default=str) + "\n")
    print_table(results, targets)
    print(f"summary: {summary_path}; plots: {', '.join(map(str, plots)) or 'none'}")
    print(f"wall time {summary['wall_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

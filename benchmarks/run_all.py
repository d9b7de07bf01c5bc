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
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import (
    COMMIT_INTERVAL_S,
    DEFAULT_EVENTS,
    DEFAULT_KEYS,
    PLOTS_DIR,
    RESULTS_DIR,
    machine_info,
    not_available,
    prepare_input,
    prepare_table,
    result,
    write_results,
)
from benchmarks.context import BenchContext
from benchmarks.edge_benchmarks import (
    APP_LATENCY_CONFIGS,
    EOS_COMMIT_INTERVAL_MS,
    RESTORE_STEADY,
    AppLatencyConfig,
    bench_edge_count,
    bench_edge_enrichment,
    bench_edge_eos,
    bench_edge_instances,
    bench_edge_restore,
    bench_enrichment_latency,
    bench_relay,
    print_progress,
)
from benchmarks.hooks import (
    EDGE_HOOKS,
    HOOKS,
    LAKEHOUSE_HOOK_NAMES,
    LAKEHOUSE_RESULTS,
    run_hook,
    stop_lakehouse_spark,
)
from benchmarks.plots import make_plots
from benchmarks.summary_table import print_table
from benchmarks.targets import evaluate_targets
from edge.broker import local_broker, profile_for
from edge.kafka import KafkaClientConfig

#: The harness's pieces live in modules of their own (the context, the edge benchmarks, the hooks, the
#: targets, the table, the plots); these names stay importable from here, where hooks and
#: ``benchmarks/run_lakehouse.py`` import them.
__all__ = [
    "APP_LATENCY_CONFIGS",
    "DEFAULT_BUDGET_S",
    "EDGE_HOOKS",
    "EOS_COMMIT_INTERVAL_MS",
    "HOOKS",
    "LAKEHOUSE_HOOK_NAMES",
    "LAKEHOUSE_RESULTS",
    "RESTORE_STEADY",
    "AppLatencyConfig",
    "BenchContext",
    "evaluate_targets",
    "main",
    "make_plots",
    "print_table",
    "run_hook",
    "stop_lakehouse_spark",
]

#: The whole quick set must finish within 10 minutes; benchmarks that would not fit are skipped.
DEFAULT_BUDGET_S = 570.0


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
                    print_progress(r)
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

"""The full lakehouse benchmark set (``make bench-lakehouse``): bronze, gold 1M/5M/20M, incremental 1 %.

Outside the quick set's 10-minute budget (gold at 20M events alone takes minutes on 2 cores). Starts
one embedded broker and one Spark session, runs the lakehouse hooks of ``benchmarks.run_all.HOOKS`` at
``lakehouse_scale="full"`` — a hook that does not exist yet (e.g. ``lakehouse_bronze``) is reported
``not available`` — and writes:

* ``benchmarks/results/lakehouse_{bronze,gold,incremental}.json`` (one list of result objects each);
* ``benchmarks/results/summary-lakehouse.json`` (every result, the lakehouse targets, the machine);
* ``docs/benchmarks/lakehouse_gold_scaling.png`` (gold seconds vs events, with the linear fit).

    .venv/bin/python -m benchmarks.run_lakehouse [--only lakehouse_gold] [--scale quick]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import PLOTS_DIR, RESULTS_DIR, machine_info, write_results
from benchmarks.run_all import HOOKS, BenchContext, evaluate_targets, print_table, run_hook
from edge.broker import local_broker, profile_for
from edge.kafka import KafkaClientConfig

#: No time budget for the full set; a generous cap so a hung run still ends.
BUDGET_S = 4 * 3600.0
PLOT_NAME = "lakehouse_gold_scaling.png"


def plot_gold(rows: list[dict[str, Any]], path: Path) -> Path | None:
    """Gold seconds against events (measured points and the least-squares line ``a + b·n``)."""
    ok = sorted((r for r in rows if r.get("seconds")), key=lambda r: r["events"])
    if len(ok) < 2:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fit = next((r["linearity"]["fit"] for r in ok if "fit" in r.get("linearity", {})), None)
    xs = [r["events"] / 1e6 for r in ok]
    ys = [r["seconds"] for r in ok]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(xs, ys, "o", color="#2b7bb9", label="measured (gold run wall time)")
    for x, y, r in zip(xs, ys, ok, strict=True):
        ax.annotate(f"{y:.0f} s\n{r['events_per_s']:,}/s", (x, y), textcoords="offset points",
                    xytext=(6, -22), fontsize=8)  # fmt: skip
    if fit:
        line_x = [0.0, xs[-1]]
        a, b = fit["intercept_s"], fit["slope_s_per_million"]
        ax.plot(line_x, [a + b * x for x in line_x], "--", color="#e07b39",
                label=f"fit: {a:.0f} s + {b:.1f} s per 1M events (R² {fit['r2']:.3f})")  # fmt: skip
    ax.set_xlabel("events (millions; 3 days per million)")
    ax.set_ylabel("seconds")
    ax.set_xlim(0, xs[-1] * 1.15)
    ax.set_ylim(bottom=0)
    ax.set_title("Gold windowed aggregation (4 gold assets, one Dagster run), local[2]", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="comma-separated hook names (lakehouse_gold, ...)")
    ap.add_argument("--scale", default="full", choices=("tiny", "quick", "full"))
    ap.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    ap.add_argument("--plots-dir", type=Path, default=PLOTS_DIR)
    ap.add_argument("--keep-workdir", action="store_true")
    a = ap.parse_args(argv)
    only = {s.strip() for s in a.only.split(",") if s.strip()}
    t_start = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="streamhouse-lakehouse-bench-"))
    info = machine_info()
    print(f"lakehouse benchmarks (scale {a.scale}); machine {info}", flush=True)
    results: dict[str, list[dict[str, Any]]] = {}
    broker = local_broker(log_dir=workdir)
    broker.start()
    try:
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(broker.kind))
        ctx = BenchContext(
            client=client, workdir=workdir, run_id=time.strftime("%H%M%S"), events=0, keys=0,
            input_topic="", variant_events=0, input_topic_variants="", input_topic_2p="", table_topic="",
            table_rows=0, deadline=t_start + BUDGET_S, results=results, lakehouse_scale=a.scale,
        )  # fmt: skip
        for name, module, workload, what in HOOKS:
            if only and name not in only:
                continue
            print(f"\n[{name}] {what}", flush=True)
            t0 = time.monotonic()
            rows = run_hook(ctx, name, module, workload, what)
            for r in rows:
                r.setdefault("benchmark", name)
                r["scale"] = a.scale
                r["machine"] = {**info, "loadavg_1m_now": round(os.getloadavg()[0], 2)}
            results[name] = rows
            suffix = "" if a.scale == "full" else f"_{a.scale}"
            path = write_results(f"{name}{suffix}", rows, a.results_dir)
            print(f"  -> {path} ({time.monotonic() - t0:.0f} s)", flush=True)
    finally:
        from benchmarks.run_all import stop_lakehouse_spark

        stop_lakehouse_spark()
        broker.stop()
        if a.keep_workdir:
            print(f"work dir kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    lakehouse_targets = ("kafka", "gold", "incremental")
    targets = [t for t in evaluate_targets(results) if t["target"].lower().startswith(lakehouse_targets)]
    plots = []
    if a.scale == "full" and "lakehouse_gold" in results:
        plot = plot_gold(results["lakehouse_gold"], a.plots_dir / PLOT_NAME)
        plots = [str(plot)] if plot else []
    summary = {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "wall_s": round(time.monotonic() - t_start, 1),
        "scale": a.scale,
        "machine": {**info, "loadavg_1m_end": round(os.getloadavg()[0], 2)},
        "targets": targets,
        "results": [r for rs in results.values() for r in rs],
        "plots": plots,
    }
    if not only:
        out = a.results_dir / f"summary-lakehouse{'' if a.scale == 'full' else '-' + a.scale}.json"
        out.write_text(json.dumps(summary, indent=2, default=str) + "\n")
        print(f"summary: {out}")
    print_table(results, targets)
    print(f"plots: {', '.join(plots) or 'none'}; wall time {summary['wall_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

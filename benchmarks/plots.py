"""The PNG plots of the quick set in docs/benchmarks/: count throughput, latency, edge variants.

Drawn from the results alone, so ``run_all --plots-only`` can redraw them from a saved summary.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import DEFAULT_KEYS


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

    peers = results.get("peers", [])
    if peers:  # one panel per workload: the peers' rates, not-available ones shown as such
        workloads = list(dict.fromkeys(r["workload"] for r in peers))
        fig, axes = plt.subplots(1, len(workloads), figsize=(4 * len(workloads), 4), squeeze=False)
        for ax, w in zip(axes[0], workloads, strict=True):
            bars(ax, [r for r in peers if r["workload"] == w], lambda r: r["system"], w)
        fig.suptitle("Peers (input events/s; Pathway: to every key's final value)", fontsize=10)
        fig.tight_layout()
        written.append(plots_dir / "peers.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    return written

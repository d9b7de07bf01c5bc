"""The table a benchmark run prints at the end: every result on one line, then the targets."""

from __future__ import annotations

from typing import Any


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

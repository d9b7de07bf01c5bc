"""The benchmark targets of docs/benchmarks.md, judged on a run's results.

Each target gets the measured value, what is required, whether it is met (None: not measured) and a
note, or why it could not be evaluated. Used by the quick set (``benchmarks.run_all``) and the full
lakehouse run (``benchmarks/run_lakehouse.py``).
"""

from __future__ import annotations

from typing import Any

from benchmarks.context import find_result
from benchmarks.edge_benchmarks import APP_LATENCY_CONFIGS, EOS_COMMIT_INTERVAL_MS, RESTORE_STEADY


def _target(name: str, value: Any, target: str, met: bool | None, note: str = "") -> dict[str, Any]:
    return {"target": name, "value": value, "required": target, "met": met, "note": note}


def evaluate_targets(results: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The benchmark targets (docs/benchmarks.md), each with the measured value, or why it could not be
    evaluated."""
    out = []
    sh = find_result(results, "edge_count", system="streamhouse-edge")
    quix = find_result(results, "edge_count", system="quix-streams")
    raw = find_result(results, "edge_count", system="raw-confluent-kafka")

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
    eos = find_result(results, "edge_eos", workload="count-eos-100ms")
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
    rest = find_result(results, "edge_restore", workload=RESTORE_STEADY)
    small = find_result(results, "edge_restore", workload="changelog-restore")
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
    wsh = find_result(results, "edge_windowed", system="streamhouse-edge", workload="windowed-count")
    wq = find_result(results, "edge_windowed", system="quix-streams")
    wr = ratio(wsh, wq)
    out.append(_target("windowed count: Streamhouse / Quix Streams", wr, ">= 2.0",
                       None if wr is None else wr >= 2.0,
                       f"{wsh['events']:,} events, outputs verified" if wsh and wr is not None
                       else why(wsh, wq)))  # fmt: skip
    js = find_result(results, "edge_join", system="streamhouse-edge")
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

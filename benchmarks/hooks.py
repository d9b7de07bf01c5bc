"""Hooks: figures measured by modules in ``benchmarks/systems/`` that define ``bench(ctx)``.

A hook listed in ``HOOKS`` (lakehouse) or ``EDGE_HOOKS`` (edge) is imported and run by the quick set;
a hook that is missing, does not import or fails becomes a "not available" or "failed" result with the
reason, never a crash of the whole run. Apart from the harness so that ``benchmarks/run_lakehouse.py``
runs the same hooks the same way.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
import traceback
from typing import Any

from benchmarks.common import RESULTS_DIR, ROOT, not_available, result
from benchmarks.context import BenchContext

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

"""Two systems taking turns on one broker: the edge against the peer an issue target names.

The quick set (``run_all``) runs each system once, minutes apart, on a broker that holds every earlier
benchmark's topics; on this 2-core machine a system's figure moved by 20-30 % between such runs. Here
one embedded broker holds only this workload's input, and the two systems alternate on it (peer, edge,
peer, edge, ...), each timed from outside as in the quick set and its output checked, so the ratio is
measured under the same conditions for both. Workloads:

* ``stream-stream-join``: Kafka Streams against the edge, on one pre-produced input
  (``benchmarks/event_time.py``: orders and payments, ±5 minutes, grace 1 minute), each output checked
  order by order;
* ``enrichment``: Kafka Streams against the edge, the count's events left-joined with the 10k-row user
  table (``benchmarks/common.py``), every event checked enriched once;
* ``windowed-count``: Kafka Streams against the edge, 1-minute tumbling windows over the timestamped
  events (``benchmarks/event_time.py``), every (key, window) count checked;
* ``coalesced-count`` / ``coalesced-windowed-count``: Pathway against the edge with its record cache on,
  both timed by ``benchmarks/coalesced.py`` (the events produced while the system runs, the clock
  stopped when every key holds its true final value), at an equal commit interval / tick.

    .venv/bin/python -m benchmarks.alternating --workload stream-stream-join --events 1000000 --rounds 2
    .venv/bin/python -m benchmarks.alternating --workload enrichment --events 1000000 --rounds 3
    .venv/bin/python -m benchmarks.alternating --workload coalesced-count --events 1000000 --rounds 3

The whole run is timed, so a JVM peer's warm-up is in its figure: at 1M events Kafka Streams' JIT
compiler is busy for most of the run, and its steady rate is up to twice its 1M one.
``benchmarks/all_cores.py`` reports each run's second half too (use it with 3M events on Apache Kafka
for steady-state figures) and runs both systems on every core.

``--baseline DIR`` times the edge against itself instead: DIR is another checkout of this repository
(``git worktree add DIR <commit>``), whose edge takes the peer's turns, so a change is measured against
the commit before it under the same conditions (the machine's speed drifts by 20 % over half an hour).

Prints one line per run and writes ``benchmarks/results/alternating_<workload>.json``
(``alternating_<workload>_vs_baseline.json`` with ``--baseline``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS_DIR, children_started_in, machine_info


@dataclass(frozen=True)
class Pair:
    """A workload's two systems: ``peer`` first in every round, then ``edge``."""

    peer: str
    edge: str
    #: the workload name the systems' ``run`` takes
    workload: str


PAIRS = {
    "stream-stream-join": Pair("kafka-streams", "streamhouse-edge", "stream-stream-join"),
    "enrichment": Pair("kafka-streams", "streamhouse-edge", "enrichment"),
    "windowed-count": Pair("kafka-streams", "streamhouse-edge", "windowed-count"),
    "coalesced-count": Pair("pathway", "streamhouse-edge-cached", "count"),
    "coalesced-windowed-count": Pair("pathway", "streamhouse-edge-cached", "windowed-count"),
}


@dataclass
class Prepared:
    """A workload's input, made once: what every run is given, and the check of a run's output."""

    info: dict[str, Any]
    run_args: dict[str, Any]
    #: ``verify(output_topic) -> {"correct": bool, ...}``; None when each run checks its own output
    verify: Callable[[str], dict[str, Any]] | None


def _prepare(client: Any, workload: str, events: int) -> Prepared:
    """Produce the workload's input once (the coalesced workloads produce theirs while each run goes)."""
    from benchmarks.common import prepare_input, prepare_table
    from benchmarks.event_time import prepare_join_input, prepare_windowed_input, verify_join, verify_windowed
    from benchmarks.systems.streamhouse_count import verify_enrichment

    if workload == "stream-stream-join":
        info, joins = prepare_join_input(client, "orders", "payments", events)
        args = {"inputs": ["orders", "payments"], "input_events": info["events"],
                "expected_outputs": info["expected_joins"]}  # fmt: skip
        return Prepared(info, args, lambda topic: verify_join(client, topic, joins))
    if workload == "enrichment":
        # the table first, as the quick set does: its rows are older than every event, so each event
        # finds its user
        table = prepare_table(client, "users")
        info = {**prepare_input(client, "events", events), "table": table}
        args = {"inputs": ["events", "users"], "input_events": events, "expected_outputs": events}
        return Prepared(info, args, lambda topic: verify_enrichment(client, topic, events))
    if workload == "windowed-count":
        info, truth = prepare_windowed_input(client, "timed-events", events)
        expected = truth.outputs("partition", events)
        args = {"inputs": ["timed-events"], "input_events": events, "expected_outputs": expected}
        return Prepared(info, args, lambda topic: verify_windowed(
            client, topic, truth, "partition", events, start_field="start", count_field="count"))  # fmt: skip
    info = {"events": events, "produced": "by each run, while the system runs"}
    return Prepared(info, {"inputs": [], "input_events": events, "expected_outputs": events}, None)


def _availability(system: str) -> str | None:
    from benchmarks.systems import kafka_streams, pathway_peer

    checks: dict[str, Callable[[], str | None]] = {
        "kafka-streams": kafka_streams.availability,
        "pathway": pathway_peer.availability,
    }
    check = checks.get(system)
    return check() if check else None


def _runner(system: str, workload: str) -> Callable[..., dict[str, Any]]:
    """``run(client, *, workload, inputs, input_events, expected_outputs, workdir, tag, timeout_s)``."""
    from benchmarks.systems import kafka_streams, pathway_peer, streamhouse_coalesced, streamhouse_windowed
    from benchmarks.systems.streamhouse_count import bench_enrichment

    if system == "streamhouse-edge" and workload == "enrichment":

        def edge_enrichment(client: Any, **kw: Any) -> dict[str, Any]:
            topic, table = kw["inputs"]
            return bench_enrichment(client, topic, table, kw["input_events"], kw["workdir"], kw["tag"],
                                    kw["timeout_s"])  # fmt: skip

        return edge_enrichment
    if system == "streamhouse-edge":
        app = {"stream-stream-join": "join", "windowed-count": "windowed"}[workload]
        return lambda client, **kw: streamhouse_windowed.run(client, app=app, **kw)
    return {
        "kafka-streams": kafka_streams.run,
        "pathway": pathway_peer.run,
        "streamhouse-edge-cached": streamhouse_coalesced.run,
    }[system]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", choices=sorted(PAIRS), default="stream-stream-join")
    ap.add_argument("--events", type=int, default=1_000_000, help="input events (default 1M)")
    ap.add_argument("--rounds", type=int, default=2, help="turns per system (default 2)")
    ap.add_argument("--timeout-s", type=float, default=300.0, help="per run")
    ap.add_argument("--results", type=Path, default=None, help="default results/alternating_<workload>.json")
    ap.add_argument(
        "--baseline", type=Path, default=None, metavar="DIR",
        help="another checkout of this repository (git worktree add DIR <commit>): its edge takes the "
        "peer's turns",
    )  # fmt: skip
    a = ap.parse_args(argv)
    if a.events < 1_000 or a.rounds < 1:
        ap.error("--events must be at least 1000 and --rounds at least 1")
    pair = PAIRS[a.workload]
    suffix = ""
    baseline_root: Path | None = None
    if a.baseline is not None:
        baseline_root, label = _baseline(a.baseline, ap)
        pair = Pair(f"{pair.edge}@{label}", pair.edge, pair.workload)
        suffix = "_vs_baseline"
    results = a.results or RESULTS_DIR / f"alternating_{a.workload}{suffix}.json"

    from edge.broker import local_broker, profile_for
    from edge.kafka.profile import KafkaClientConfig

    reason = None if baseline_root is not None else _availability(pair.peer)
    if reason:
        print(f"{pair.peer} is not available: {reason}")
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="alternating-"))
    broker = local_broker(log_dir=workdir)
    broker.start()
    runs: list[dict[str, Any]] = []
    info: dict[str, Any] = {}
    try:
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(broker.kind))
        prepared = _prepare(client, a.workload, a.events)
        info = prepared.info
        common = {
            "workdir": workdir,
            "timeout_s": a.timeout_s,
            "workload": pair.workload,
            **prepared.run_args,
        }
        print(f"input: {info}", flush=True)
        for i in range(a.rounds):
            for system in (pair.peer, pair.edge):
                if baseline_root is not None and system == pair.peer:
                    with children_started_in(baseline_root):
                        r = _runner(pair.edge, pair.workload)(client, tag=f"baseline-{i}", **common)
                    r["system"] = system
                else:
                    r = _runner(system, pair.workload)(client, tag=f"{system}-{i}", **common)
                checked = (r.get("verification") or {}).get("correct") is not None  # checked by its runner
                if prepared.verify is not None and r.get("output_topic") and not checked:
                    r["verification"] = prepared.verify(r["output_topic"])
                correct = (r.get("verification") or {}).get("correct")
                if not correct:
                    r["status"] = "failed"
                r["round"] = i
                print(
                    f"  round {i} {system:>24}: {r.get('events_per_s')} events/s, "
                    f"{r.get('cpu_s_per_1m_events')} CPU-s per 1M, output correct: {correct}",
                    flush=True,
                )
                if r.get("status") != "ok" and r.get("reason"):
                    print(f"    {str(r['reason'])[:500]}", flush=True)
                runs.append(r)
    finally:
        broker.stop()

    summary = _summary(runs, pair)
    if "edge_vs_peer" in summary:
        print(f"{pair.edge} / {pair.peer} (medians): x{summary['edge_vs_peer']}")
    if "edge_vs_peer_per_cpu_s" in summary:
        print(
            f"  per CPU-second (the peer's CPU-s per 1M / the edge's): x{summary['edge_vs_peer_per_cpu_s']}"
        )
    result = {
        "benchmark": "alternating",
        "workload": a.workload,
        "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine_info(),
        "input": info,
        "runs": runs,
        "summary": summary,
    }
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"-> {results}")
    return 0 if all(r.get("status") == "ok" for r in runs) else 1


def _baseline(path: Path, ap: argparse.ArgumentParser) -> tuple[Path, str]:
    """The baseline checkout and its label (``<short commit>``, ``+dirty`` with uncommitted changes)."""
    root = path.resolve()
    if not (root / "edge" / "__init__.py").is_file() or not (root / "benchmarks" / "__init__.py").is_file():
        ap.error(f"--baseline {path}: not a checkout of this repository (no edge/ and benchmarks/ there)")
    git = ["git", "-C", str(root)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if commit.returncode != 0:
        return root, root.name
    status = [*git, "status", "--porcelain", "--untracked-files=no"]
    dirty = subprocess.run(status, capture_output=True, text=True)
    return root, commit.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _summary(runs: list[dict[str, Any]], pair: Pair) -> dict[str, Any]:
    """Each system's median rate and CPU over its correct runs, and the edge's ratio to the peer."""
    summary: dict[str, Any] = {}
    for system in (pair.peer, pair.edge):
        ok = [r for r in runs if r.get("system") == system and r.get("status") == "ok"]
        if ok:
            summary[system] = {
                "runs": len(ok),
                "events_per_s_median": statistics.median(r["events_per_s"] for r in ok),
                "cpu_s_per_1m_median": statistics.median(r["cpu_s_per_1m_events"] for r in ok),
            }
    if pair.peer in summary and pair.edge in summary:
        edge, peer = summary[pair.edge], summary[pair.peer]
        summary["edge_vs_peer"] = round(edge["events_per_s_median"] / peer["events_per_s_median"], 3)
        # events per CPU-second, the edge's over the peer's: the rate ratio says how fast each runs on
        # this machine, this one how much CPU each needs (a JVM peer spreads its work over more threads)
        if edge["cpu_s_per_1m_median"] and peer["cpu_s_per_1m_median"]:
            summary["edge_vs_peer_per_cpu_s"] = round(
                peer["cpu_s_per_1m_median"] / edge["cpu_s_per_1m_median"], 3
            )
    return summary


if __name__ == "__main__":
    raise SystemExit(main())

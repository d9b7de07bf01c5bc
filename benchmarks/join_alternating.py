"""The stream-stream join, Kafka Streams and the edge taking turns on one broker and one input.

The quick set (``run_all``) runs each system once, minutes apart, on a broker that holds every earlier
benchmark's topics; on this 2-core machine a system's figure moved by 20-30 % between such runs. Here
one embedded broker holds only the join's input (``benchmarks/event_time.py``: orders and payments,
±5 minutes, grace 1 minute), and the two systems alternate on it (Kafka Streams, the edge, Kafka Streams,
the edge, ...), each timed from outside as in the quick set and its output checked order by order, so
the ratio is measured under the same conditions for both.

    .venv/bin/python -m benchmarks.join_alternating --events 1000000 --rounds 2

Prints one line per run and writes ``benchmarks/results/join_alternating.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS_DIR, machine_info

WORKLOAD = "stream-stream-join"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000, help="orders + payments (default 1M)")
    ap.add_argument("--rounds", type=int, default=2, help="turns per system (default 2)")
    ap.add_argument("--timeout-s", type=float, default=300.0, help="per run")
    ap.add_argument("--results", type=Path, default=RESULTS_DIR / "join_alternating.json")
    a = ap.parse_args(argv)
    if a.events < 1_000 or a.rounds < 1:
        ap.error("--events must be at least 1000 and --rounds at least 1")

    from benchmarks.event_time import prepare_join_input, verify_join
    from benchmarks.systems import kafka_streams, streamhouse_windowed
    from edge.broker import local_broker, profile_for
    from edge.kafka.profile import KafkaClientConfig

    reason = kafka_streams.availability()
    if reason:
        print(f"Kafka Streams is not available: {reason}")
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="join-alternating-"))
    broker = local_broker(log_dir=workdir)
    broker.start()
    runs: list[dict[str, Any]] = []
    try:
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(broker.kind))
        info, joins = prepare_join_input(client, "orders", "payments", a.events)
        print(f"input: {info}", flush=True)
        common = {
            "inputs": ["orders", "payments"],
            "input_events": info["events"],
            "expected_outputs": info["expected_joins"],
            "workdir": workdir,
            "timeout_s": a.timeout_s,
        }
        for i in range(a.rounds):
            for system in ("kafka-streams", "streamhouse-edge"):
                tag = f"{system}-{i}"
                if system == "kafka-streams":
                    r = kafka_streams.run(client, workload=WORKLOAD, tag=tag, **common)
                else:
                    r = streamhouse_windowed.run(client, app="join", workload=WORKLOAD, tag=tag, **common)
                check = verify_join(client, r["output_topic"], joins) if r.get("output_topic") else {}
                r["verification"] = check
                r["round"] = i
                if not check.get("correct"):
                    r["status"] = "failed"
                print(
                    f"  round {i} {system:>16}: {r.get('events_per_s')} events/s, "
                    f"{r.get('cpu_s_per_1m_events')} CPU-s per 1M, output correct: {check.get('correct')}",
                    flush=True,
                )
                runs.append(r)
    finally:
        broker.stop()

    summary: dict[str, Any] = {}
    for system in ("kafka-streams", "streamhouse-edge"):
        ok = [r for r in runs if r.get("system") == system and r.get("status") == "ok"]
        if ok:
            summary[system] = {
                "runs": len(ok),
                "events_per_s_median": statistics.median(r["events_per_s"] for r in ok),
                "cpu_s_per_1m_median": statistics.median(r["cpu_s_per_1m_events"] for r in ok),
            }
    if len(summary) == 2:
        edge, ks = summary["streamhouse-edge"], summary["kafka-streams"]
        summary["edge_vs_kafka_streams"] = round(edge["events_per_s_median"] / ks["events_per_s_median"], 3)
        print(f"edge / Kafka Streams (medians): x{summary['edge_vs_kafka_streams']}")
    result = {
        "benchmark": "join_alternating",
        "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine_info(),
        "input": info,
        "runs": runs,
        "summary": summary,
    }
    a.results.parent.mkdir(parents=True, exist_ok=True)
    a.results.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"-> {a.results}")
    return 0 if all(r.get("status") == "ok" for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Pause of each task while a third instance joins a running pair: cooperative vs eager rebalancing.

    .venv/bin/python -m benchmarks.edge_rebalance_pause [--repeats 2] [--history 5000]
    STREAMHOUSE_BROKER_KIND=kafka .venv/bin/python -m benchmarks.edge_rebalance_pause   # Apache Kafka

Two count-app instances (real processes, 6 partitions, one changelog record per count) count a history
of ``--history`` records per partition; then, with one record per partition every 20 ms flowing, a third
instance starts. A task's pause is the longest time an input produced after the third instance started
waited for its output (output append time on the broker minus production time: stalls of the measuring
process itself do not count); tasks whose owner did not change ("stayed") and tasks that moved are
reported apart, with the records each moved task restored. Three variants:

* ``cooperative``: the default (cooperative-sticky, warm-ups on: ``max.warmup.replicas`` = 2,
  ``acceptable.recovery.lag`` = 500);
* ``cooperative_no_warmup``: ``max.warmup.replicas`` = 0 (the new instance joins at once);
* ``eager``: ``upgrade.from`` = 2.3 (range assignor, every task revoked at every rebalance).

Prints the figures and writes ``benchmarks/results/edge_rebalance_pause.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from edge.broker import local_broker, profile_for
from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from tests.edge.runtime.harness import Instance, wait_assignment
from tests.edge.runtime.join_load import APPEND_TIME, JoinLoad, split_pauses

RESULT_FILE = Path(__file__).resolve().parent / "results" / "edge_rebalance_pause.json"
PARTITIONS = 6
VARIANTS: dict[str, dict[str, Any]] = {
    "cooperative": {},
    "cooperative_no_warmup": {"max.warmup.replicas": 0},
    "eager": {"upgrade.from": "2.3"},
}


def run_once(client: KafkaClientConfig, tmp: Path, variant: str, history: int, run: int) -> dict[str, Any]:
    tag = f"{variant}-r{run}-{int(time.time())}"
    src, out, app = f"in-{tag}", f"out-{tag}", f"rebalance-{tag}"
    topics = [TopicSpec(src, PARTITIONS, config=APPEND_TIME), TopicSpec(out, PARTITIONS, config=APPEND_TIME)]
    create_topics(client, topics)
    # a warm-up counts as caught up within 500 records (Kafka's default, 10000, would let the new
    # instance join at once with this history: a cold copy is "caught up" then)
    cfg = {
        "commit.interval.ms": 1000,
        "changelog.collapse": "false",
        "acceptable.recovery.lag": 500,
        **VARIANTS[variant],
    }
    started: list[Instance] = []

    def spawn(name: str) -> Instance:
        inst = Instance(
            client,
            app_id=app,
            state_dir=tmp / f"{tag}-{name}",
            in_topic=src,
            out_topic=out,
            config=cfg,
            log_dir=tmp,
            name=f"{tag}-{name}",
        )
        started.append(inst)
        return inst

    try:
        a, b = spawn("a"), spawn("b")
        before = wait_assignment([a, b], PARTITIONS, timeout=180)
        with JoinLoad(client, src, out, f"reader-{tag}", PARTITIONS) as load:
            load.preload(history, keys=500)
            load.run_until(lambda: _history_counted(load), timeout=300)
            joined_at = load.wall()
            c = spawn("c")
            after = load.run_until(lambda: wait_assignment([a, b, c], PARTITIONS, timeout=0.5), timeout=180)
            settled_s = load.wall() - joined_at
            load.run_for(3.0)
            load.stop_and_drain(120)
            stayed, moved = split_pauses(load.pauses(since=joined_at), before, after)
        c_log = c.log_path.read_text()
        return {
            "stayed_max_pause_s": round(max(stayed.values(), default=0.0), 3),
            "moved_max_pause_s": round(max(moved.values(), default=0.0), 3),
            "stayed_pause_s": {str(p): round(v, 3) for p, v in sorted(stayed.items())},
            "moved_pause_s": {str(p): round(v, 3) for p, v in sorted(moved.items())},
            "moved_restored_records": {str(p): _restored(c_log, p) for p in sorted(moved)},
            "join_to_settled_s": round(settled_s, 3),
            "warmed_up": "warming up tasks" in c_log,
            "outputs_with_append_time": load.append_stamped,
        }
    finally:
        for inst in started:
            inst.stop()


def _history_counted(load: JoinLoad) -> None:
    latest = load.reader.latest()
    behind = [k for k, n in load.expected().items() if "-h" in k and latest.get(k) != n]
    assert not behind, f"{len(behind)} history keys not counted yet"


def _restored(log: str, partition: int) -> int:
    pattern = rf"restored counts of task 0_{partition} from \S+: (\d+) records"
    return sum(int(m.group(1)) for m in re.finditer(pattern, log))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--history", type=int, default=5000, help="records per partition before the join")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="edge-rebalance-bench-"))
    results: dict[str, Any] = {}
    with local_broker(log_dir=tmp) as broker:
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(broker.kind))
        for variant in args.variants.split(","):
            runs = [run_once(client, tmp, variant, args.history, r) for r in range(args.repeats)]
            summary = {
                "stayed_max_pause_s_median": round(
                    statistics.median(r["stayed_max_pause_s"] for r in runs), 3
                ),
                "moved_max_pause_s_median": round(statistics.median(r["moved_max_pause_s"] for r in runs), 3),
                "runs": runs,
            }
            results[variant] = summary
            print(
                f"{variant}: longest pause of a task that stayed {summary['stayed_max_pause_s_median']} s, "
                f"of a task that moved {summary['moved_max_pause_s_median']} s (median of {len(runs)}); "
                f"restored by moved tasks {[r['moved_restored_records'] for r in runs]}",
                flush=True,
            )
        kind = str(broker.kind)
    doc = {
        "broker": kind,
        "partitions": PARTITIONS,
        "history_records_per_partition": args.history,
        "input": "one record per partition every 20 ms",
        "session_timeout_ms": os.environ.get("STREAMHOUSE_KAFKA__SESSION_TIMEOUT_MS", "profile default"),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": {"cpus": os.cpu_count(), "python": platform.python_version(), "load": os.getloadavg()[0]},
        **results,
    }
    RESULT_FILE.parent.mkdir(parents=True, exist_ok=True)
    try:
        existing = json.loads(RESULT_FILE.read_text())
    except (FileNotFoundError, ValueError):
        existing = {}
    existing.setdefault(kind, {}).update(doc)  # a run of some variants keeps the others' figures
    RESULT_FILE.write_text(json.dumps(existing, indent=2, sort_keys=True) + "\n")
    print(f"wrote {RESULT_FILE}")


if __name__ == "__main__":
    main()

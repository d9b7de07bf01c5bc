"""One edge instance with 1 worker against the same instance with 2 (``streamhouse edge run --workers``).

A 2-partition input of N events is counted per key (one output per input, no cache) by
``streamhouse edge run`` as a separate process, timed from outside: from the first output to the N-th
(so JVM-free start-up and the group join do not count), read by a watcher consumer. Prints the figures
and writes ``benchmarks/results/edge_workers.json``. The target: 2 workers on 2 cores >= 1.7x one.

    .venv/bin/python -m benchmarks.edge_workers --events 400000
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from benchmarks.common import (
    ensure_topics,
    machine_info,
    prepare_input,
    result,
    wait_for_outputs,
    write_results,
)
from benchmarks.systems.streamhouse_count import build_topology
from edge.broker.local import local_broker, profile_for
from edge.kafka import KafkaClientConfig

ROOT = Path(__file__).resolve().parent.parent


def topology() -> Any:
    """The benchmark's app for ``streamhouse edge run`` (topics from the environment)."""
    return build_topology(os.environ["BENCH_IN"], os.environ["BENCH_OUT"])


def run_once(
    client: KafkaClientConfig, source: str, events: int, workers: int, workdir: Path
) -> dict[str, Any]:
    sink = f"bench-workers-out-{uuid.uuid4().hex[:8]}"
    ensure_topics(client, [sink], 2)
    env = {**os.environ, "BENCH_IN": source, "BENCH_OUT": sink}
    cmd = [
        sys.executable, "-m", "orchestration.cli.main", "edge", "run", "benchmarks.edge_workers:topology",
        "--application-id", f"bench-workers-{workers}-{uuid.uuid4().hex[:6]}",
        "--bootstrap-servers", client.bootstrap_servers, "--state-dir", str(workdir / f"w{workers}"),
        "--workers", str(workers), "-c", "commit.interval.ms=1000", "--log-level", "WARNING",
    ]  # fmt: skip
    watcher = Consumer(client.consumer(f"bench-watch-{uuid.uuid4().hex[:6]}"))
    log = (workdir / f"w{workers}.log").open("w")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=log, stdout=log)
    started = time.perf_counter()
    first: float | None = None
    try:
        watcher.assign([TopicPartition(sink, p, OFFSET_BEGINNING) for p in range(2)])
        while not [m for m in watcher.consume(1, 0.02) if m.error() is None]:
            # waiting for the first output: start-up and the group join are over then
            if proc.poll() is not None:
                raise RuntimeError(f"the app exited with {proc.returncode}; see {log.name}")
        first = time.perf_counter()
        watch = wait_for_outputs(client, sink, events, timeout_s=900, alive=lambda: proc.poll() is None)
        if not watch.reached:
            raise RuntimeError(f"{watch.seen} of {events} outputs; see {log.name}")
        end = time.perf_counter() - (time.time() - watch.end_wall)
    finally:
        proc.terminate()
        proc.wait(60)
        watcher.close()
        log.close()
    assert first is not None
    seconds = end - first
    return result(
        "streamhouse-edge",
        f"count-2p-{workers}worker",
        events,
        events / seconds,
        workers=workers,
        seconds_first_to_last_output=round(seconds, 3),
        seconds_incl_startup=round(end - started, 3),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=400_000)
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="edge-workers-bench-"))
    with local_broker(log_dir=workdir) as broker:
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(broker.kind))
        source = "bench-workers-in"
        prepare_input(client, source, args.events, partitions=2)
        one = run_once(client, source, args.events, 1, workdir)
        two = run_once(client, source, args.events, 2, workdir)
    two["speedup_vs_1"] = round(two["events_per_s"] / one["events_per_s"], 2)
    for r in (one, two):
        print(
            f"{r['workers']} worker(s): {r['events_per_s']:,} events/s "
            f"({r['seconds_first_to_last_output']} s first to last output, "
            f"{r['seconds_incl_startup']} s with start-up)"
        )
    print(f"2 workers / 1 worker: {two['speedup_vs_1']}x (target >= 1.7x on 2 cores)")
    machine = machine_info()
    path = write_results("edge_workers", [{**one, "machine": machine}, {**two, "machine": machine}])
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

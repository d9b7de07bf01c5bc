"""Restore rate: how fast a StreamsApp rebuilds a RocksDB store from its changelog (empty state dir).

    .venv/bin/python -m benchmarks.edge_runtime_restore [--records 400000]

Pre-fills ``<app>-counts-changelog`` (4 partitions) with distinct keys, starts the count app with an
empty state directory and measures the restore: records/s over the restore consumer's pass (all four
partitions restored together) and the wall time from ``start()`` to RUNNING.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.edge_runtime_common import fill_changelog, save_results
from edge.broker import local_broker, profile_for
from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from edge.runtime import StreamsApp


def measure_restore(
    client: KafkaClientConfig, workdir: Path, records: int, partitions: int, name: str = "restore-bench"
) -> dict[str, Any]:
    """Fill ``<name>-counts-changelog`` with ``records`` distinct keys and time a fresh instance's restore.

    Steady state: the changelog is large enough that connecting and the first fetch (a fixed ~0.2 s
    on the embedded broker) do not dominate the rate, unlike the few-100k-record changelog a short
    count run leaves behind.
    """
    src, out = f"{name}-in", f"{name}-out"
    create_topics(client, [TopicSpec(src, partitions), TopicSpec(out, partitions)])
    os.environ["EDGE_IN"], os.environ["EDGE_OUT"] = src, out
    from tests.edge.runtime.apps.count_app import counts

    cfg = {
        "application.id": name,
        "bootstrap.servers": client.bootstrap_servers,
        "restore.batch.records": 10000,
    }
    first = StreamsApp(counts, {**cfg, "state.dir": str(workdir / f"{name}-s0")})
    first.start()  # creates the changelog topic
    if not first.wait_until_running(60):
        raise RuntimeError(f"{name}: the first instance did not reach RUNNING")
    first.close(30)
    per_partition = records // partitions
    filled = fill_changelog(client, f"{name}-counts-changelog", partitions, per_partition)
    app = StreamsApp(counts, {**cfg, "state.dir": str(workdir / f"{name}-s1")})
    started = time.perf_counter()
    app.start()
    try:
        if not app.wait_until_running(600):
            raise RuntimeError(f"{name}: the restoring instance did not reach RUNNING")
        to_running = time.perf_counter() - started
        restored, seconds = app.reader.total_restored, app.reader.total_seconds
        sizes = app.run_on_stream_thread(
            lambda: sum(
                s.approximate_num_entries()
                for a in app.registry.tasks.values()
                for s in a.task.stores.values()
            )
        )
    finally:
        app.close(30)
    return {
        "records": restored,
        "filled": filled,
        "partitions": partitions,
        "store": "RocksDB (rocksdict), no cache",
        "restore_seconds": round(seconds, 3),
        "restore_records_per_s": round(restored / seconds) if seconds else None,
        "start_to_running_seconds": round(to_running, 3),
        "store_entries_after": sizes,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=400_000)
    ap.add_argument("--partitions", type=int, default=4)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    tmp = Path(tempfile.mkdtemp(prefix="edge-restore-bench-"))
    with local_broker(log_dir=tmp) as broker:
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(broker.kind))
        figures = measure_restore(client, tmp, args.records, args.partitions)
    result = save_results("restore", figures)
    print(
        f"restored {figures['records']} records in {figures['restore_seconds']:.2f}s = "
        f"{figures['restore_records_per_s']:,} records/s; "
        f"start->RUNNING {figures['start_to_running_seconds']:.2f}s"
    )
    print(result)


if __name__ == "__main__":
    main()

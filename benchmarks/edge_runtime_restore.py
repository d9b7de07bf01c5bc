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

from benchmarks.edge_runtime_common import fill_changelog, save_results
from edge.broker import EmbeddedBroker
from edge.kafka import BrokerProfile, KafkaClientConfig, TopicSpec, create_topics
from edge.runtime import StreamsApp


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=400_000)
    ap.add_argument("--partitions", type=int, default=4)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    tmp = Path(tempfile.mkdtemp(prefix="edge-restore-bench-"))
    with EmbeddedBroker(log_dir=tmp) as broker:
        client = KafkaClientConfig(broker.bootstrap_servers, BrokerProfile.EMBEDDED)
        create_topics(
            client, [TopicSpec("bench-in", args.partitions), TopicSpec("bench-out", args.partitions)]
        )
        os.environ["EDGE_IN"], os.environ["EDGE_OUT"] = "bench-in", "bench-out"
        from tests.edge.runtime.apps.count_app import counts

        cfg = {
            "application.id": "restore-bench",
            "bootstrap.servers": broker.bootstrap_servers,
            "restore.batch.records": 10000,
        }
        first = StreamsApp(counts, {**cfg, "state.dir": str(tmp / "s0")})
        first.start()  # creates the changelog topic
        assert first.wait_until_running(60)
        first.close(30)
        per_partition = args.records // args.partitions
        t0 = time.perf_counter()
        n = fill_changelog(client, "restore-bench-counts-changelog", args.partitions, per_partition)
        print(f"filled the changelog with {n} records in {time.perf_counter() - t0:.1f}s")
        app = StreamsApp(counts, {**cfg, "state.dir": str(tmp / "s1")})
        started = time.perf_counter()
        app.start()
        assert app.wait_until_running(600)
        to_running = time.perf_counter() - started
        restored, seconds = app.reader.total_restored, app.reader.total_seconds
        sizes = app.run_on_stream_thread(
            lambda: sum(
                s.approximate_num_entries()
                for a in app.registry.tasks.values()
                for s in a.task.stores.values()
            )
        )
        app.close(30)
    rate = restored / seconds if seconds else 0.0
    result = save_results(
        "restore",
        {
            "records": restored,
            "partitions": args.partitions,
            "store": "RocksDB (rocksdict), no cache",
            "restore_seconds": round(seconds, 3),
            "restore_records_per_s": round(rate),
            "start_to_running_seconds": round(to_running, 3),
            "store_entries_after": sizes,
        },
    )
    print(
        f"restored {restored} records in {seconds:.2f}s = {rate:,.0f} records/s; "
        f"start->RUNNING {to_running:.2f}s"
    )
    print(result)


if __name__ == "__main__":
    main()

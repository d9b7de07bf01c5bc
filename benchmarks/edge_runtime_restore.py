"""Restore rate: how fast a StreamsApp rebuilds a RocksDB store from its changelog (empty state dir).

    .venv/bin/python -m benchmarks.edge_runtime_restore [--records 400000] [--rounds 1]

Pre-fills ``<app>-counts-changelog`` (4 partitions) with distinct keys, starts the count app with an
empty state directory and measures the restore: records/s over the restore consumer's pass (all four
partitions restored together), the process's CPU seconds per 1M records over that pass, and the wall
time from ``start()`` to RUNNING. The ceiling is measured in the same run on the same changelog: a bare
confluent-kafka loop (the restore consumer's settings, same batch size) that consumes every partition
to its end and does nothing else -- what the broker and the Python client serve at most. It fetches
exactly as the restore does (``fetch_ready``, the collector paused), so the two rates differ only by
what the restore does with the records.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from benchmarks.edge_runtime_common import fill_changelog, save_results
from edge.broker import local_broker, profile_for
from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from edge.runtime import StreamsApp
from edge.runtime.fetch import fetch_ready
from edge.runtime.restore import gc_paused


def raw_consume_rate(
    client: KafkaClientConfig, topic: str, partitions: int, batch_records: int = 10000
) -> dict[str, Any]:
    """The ceiling: consume ``topic`` to the end of every partition and keep nothing (records/s from
    assign to the last end-of-partition, as the restore's rate is timed; process CPU per 1M records)."""
    conf = client.consumer(
        f"restore-bench-raw-{time.monotonic_ns()}",
        **{"enable.partition.eof": True, "enable.auto.commit": False, "queued.min.messages": 1_000_000},
    )
    consumer = Consumer(conf)
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        pending, n = set(range(partitions)), 0
        started, cpu = time.perf_counter(), time.process_time()
        with gc_paused():
            while pending:
                for msg in fetch_ready(consumer, batch_records, 0.2):
                    err = msg.error()
                    if err is None:
                        n += 1
                    elif err.code() == KafkaError._PARTITION_EOF:
                        pending.discard(msg.partition())
        seconds, cpu_s = time.perf_counter() - started, time.process_time() - cpu
    finally:
        consumer.close()
    return {
        "raw_consume_records": n,
        "raw_consume_seconds": round(seconds, 3),
        "raw_consume_records_per_s": round(n / seconds),
        "raw_consume_cpu_s_per_1m": round(cpu_s / n * 1e6, 3),
    }


def measure_restore(
    client: KafkaClientConfig,
    workdir: Path,
    records: int,
    partitions: int,
    name: str = "restore-bench",
    rounds: int = 1,
) -> dict[str, Any]:
    """Fill ``<name>-counts-changelog`` with ``records`` distinct keys and time a fresh instance's restore
    (``rounds`` times, each into an empty state dir, each followed by the raw-consume ceiling; the
    figures of the round with the median restore rate, every round listed under ``rounds``).

    Steady state: the changelog is large enough that connecting and the first fetch (~0.05 s on the
    embedded broker) do not dominate the rate, unlike the ~100k-record changelog a short count run
    leaves behind.
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
    changelog = f"{name}-counts-changelog"
    filled = fill_changelog(client, changelog, partitions, per_partition)
    runs = []
    for i in range(rounds):
        load_before = os.getloadavg()[0]
        app = StreamsApp(counts, {**cfg, "state.dir": str(workdir / f"{name}-s{i + 1}")})
        started = time.perf_counter()
        app.start()
        try:
            if not app.wait_until_running(600):
                raise RuntimeError(f"{name}: the restoring instance did not reach RUNNING")
            to_running = time.perf_counter() - started
            reader = app.reader
            restored, seconds, cpu_s = reader.total_restored, reader.total_seconds, reader.total_cpu_seconds
            sizes = app.run_on_stream_thread(
                lambda app=app: sum(
                    s.approximate_num_entries()
                    for a in app.registry.tasks.values()
                    for s in a.task.stores.values()
                )
            )
        finally:
            app.close(30)
        ceiling = raw_consume_rate(client, changelog, partitions, cfg["restore.batch.records"])
        runs.append(
            {
                "records": restored,
                "restore_seconds": round(seconds, 3),
                "restore_records_per_s": round(restored / seconds) if seconds else None,
                "restore_cpu_s_per_1m": round(cpu_s / restored * 1e6, 3) if restored else None,
                "start_to_running_seconds": round(to_running, 3),
                "store_entries_after": sizes,
                **ceiling,
                "restore_vs_raw_consume": round(restored / seconds / ceiling["raw_consume_records_per_s"], 2)
                if seconds
                else None,
                "loadavg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            }
        )
    median = sorted(runs, key=lambda r: r["restore_records_per_s"] or 0)[len(runs) // 2]
    return {
        **median,
        "filled": filled,
        "partitions": partitions,
        "store": "RocksDB (rocksdict), no cache",
        "rounds": runs,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=400_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    tmp = Path(tempfile.mkdtemp(prefix="edge-restore-bench-"))
    with local_broker(log_dir=tmp) as broker:
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(broker.kind))
        figures = measure_restore(client, tmp, args.records, args.partitions, rounds=args.rounds)
    result = save_results("restore", figures)
    for r in figures["rounds"]:
        print(
            f"restored {r['records']} records in {r['restore_seconds']:.2f}s = "
            f"{r['restore_records_per_s']:,} records/s, {r['restore_cpu_s_per_1m']} CPU-s per 1M; "
            f"raw consume {r['raw_consume_records_per_s']:,} records/s "
            f"({r['raw_consume_cpu_s_per_1m']} CPU-s per 1M); start->RUNNING "
            f"{r['start_to_running_seconds']:.2f}s; load {r['loadavg_1m']}"
        )
    print(result)


if __name__ == "__main__":
    main()

"""The Python ceiling: a hand-written confluent-kafka loop doing the count workload.

Batch consume, orjson parse, per-key count in a dict, one JSON output per input, at-least-once (every
commit interval: flush the producer, then commit the consumed offsets synchronously). No state store and
no changelog: this is what a Python user gets with no framework at all, so a framework can approach it
but not beat it by much.

Run as a child process by the harness (``python -m benchmarks.anchors.raw_loop ...``) so it has its own
interpreter and GIL, exactly like the other systems.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from benchmarks.common import (
    COMMIT_INTERVAL_S,
    ensure_topics,
    run_count_child,
    write_stats_file,
)
from edge.kafka import BrokerProfile, KafkaClientConfig

SYSTEM = "raw-confluent-kafka"
WORKLOAD = "count"
BATCH = 1000


def count_loop(
    client: KafkaClientConfig,
    input_topic: str,
    output_topic: str,
    group: str,
    events: int,
    stats_path: str,
    commit_interval_s: float = COMMIT_INTERVAL_S,
) -> dict[str, Any]:
    consumer = Consumer(
        client.consumer(group, **{"enable.auto.commit": False, "auto.offset.reset": "earliest"})
    )
    producer = Producer(client.producer())
    consumer.subscribe([input_topic])
    counts: dict[bytes, int] = {}
    loads, dumps = orjson.loads, orjson.dumps
    produce, poll = producer.produce, producer.poll
    processed = 0
    commits = 0
    next_offsets: dict[tuple[str, int], int] = {}
    first = True
    first_at = 0.0
    next_commit = 0.0

    def commit() -> None:
        nonlocal commits
        if producer.flush(60):
            raise RuntimeError("producer did not flush within 60 s")
        if next_offsets:
            consumer.commit(
                offsets=[TopicPartition(t, p, o) for (t, p), o in next_offsets.items()], asynchronous=False
            )
            commits += 1

    try:
        while processed < events:
            batch = consumer.consume(BATCH, 0.1)
            if not batch:
                continue
            for msg in batch:
                if msg.error() is not None:
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise RuntimeError(f"consume error: {msg.error()}")
                if first:
                    first = False
                    first_at = time.time()
                    write_stats_file(stats_path, {"first_consumed_at": first_at})
                    next_commit = time.monotonic() + commit_interval_s
                value = loads(msg.value())
                key = msg.key()
                c = counts.get(key, 0) + 1
                counts[key] = c
                while True:
                    try:
                        produce(output_topic, dumps({"user": value["user"], "count": c}), key)
                        break
                    except BufferError:
                        poll(0.01)
                processed += 1
            last = batch[-1]
            next_offsets[(last.topic(), last.partition())] = last.offset() + 1
            poll(0)
            if time.monotonic() >= next_commit:
                commit()
                next_commit = time.monotonic() + commit_interval_s
        commit()
    finally:
        consumer.close()
    stats = {"first_consumed_at": first_at, "processed": processed, "commits": commits, "keys": len(counts)}
    write_stats_file(stats_path, stats)
    return stats


def bench(
    client: KafkaClientConfig, input_topic: str, events: int, workdir: Path, run_id: str, timeout_s: float
) -> dict[str, Any]:
    """Harness side: run the loop as a child process and time it from outside."""
    output = f"bench-{run_id}-raw-out"
    ensure_topics(client, [output])
    stats = workdir / f"{run_id}-raw.stats.json"
    cmd = [
        sys.executable, "-m", "benchmarks.anchors.raw_loop",
        "--bootstrap", client.bootstrap_servers, "--profile", client.profile.value,
        "--input", input_topic, "--output", output, "--group", f"bench-{run_id}-raw",
        "--events", str(events), "--stats", str(stats),
    ]  # fmt: skip
    return run_count_child(
        client, system=SYSTEM, workload=WORKLOAD, cmd=cmd, output_topic=output, events=events,
        stats_path=stats, log_path=workdir / f"{run_id}-raw.log", timeout_s=timeout_s,
        terminate_when_done=False,
        extra={"settings": {"commit_interval_s": COMMIT_INTERVAL_S, "consume_batch": BATCH,
                            "guarantee": "at-least-once", "state": "python dict (no store, no changelog)"}},
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--profile", default="embedded")
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--events", type=int, required=True)
    ap.add_argument("--stats", required=True)
    a = ap.parse_args(argv)
    client = KafkaClientConfig(a.bootstrap, BrokerProfile(a.profile))
    stats = count_loop(client, a.input, a.output, a.group, a.events, a.stats)
    print(stats, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

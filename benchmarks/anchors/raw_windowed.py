"""The Python ceiling of the windowed count: a hand-written confluent-kafka loop, no framework.

``raw_loop.py``'s loop (batch consume, orjson parse, at-least-once: every commit interval the producer
is flushed, then the consumed offsets committed) counting per ``(key, 1-minute window)`` in a dict, with
Kafka Streams' lateness rule (stream time = the largest timestamp seen; a record whose window ended at
or before it is dropped) and one JSON output ``{"user", "start", "count"}`` per counted input -- the
edge's windowed benchmark app's output. No store, no changelog, no expiry of old windows.

Run as a child process by the windowed hook (``benchmarks/systems/edge_windowed.py``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from benchmarks.common import COMMIT_INTERVAL_S, ensure_topics, write_stats_file
from benchmarks.event_time import WINDOW_MS
from benchmarks.timed_child import run_timed_child
from edge.kafka import BrokerProfile, KafkaClientConfig

SYSTEM = "raw-confluent-kafka"
WORKLOAD = "windowed-count"
BATCH = 1000


def windowed_loop(
    client: KafkaClientConfig, input_topic: str, output_topic: str, group: str, events: int, stats_path: str
) -> dict[str, Any]:
    """Consume ``events`` records (counted or dropped as late) and stop."""
    consumer = Consumer(
        client.consumer(group, **{"enable.auto.commit": False, "auto.offset.reset": "earliest"})
    )
    producer = Producer(client.producer())
    consumer.subscribe([input_topic])
    counts: dict[tuple[bytes, int], int] = {}
    loads, dumps = orjson.loads, orjson.dumps
    produce, poll = producer.produce, producer.poll
    consumed = late = commits = 0
    stream_time = -1
    next_offsets: dict[tuple[str, int], int] = {}
    first_at = next_commit = 0.0

    def commit() -> None:
        nonlocal commits
        if producer.flush(60):
            raise RuntimeError("producer did not flush within 60 s")
        if next_offsets:
            offsets = [TopicPartition(t, p, o) for (t, p), o in next_offsets.items()]
            consumer.commit(offsets=offsets, asynchronous=False)
            commits += 1

    try:
        while consumed < events:
            batch = consumer.consume(BATCH, 0.1)
            if not batch:
                continue
            for msg in batch:
                if msg.error() is not None:
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise RuntimeError(f"consume error: {msg.error()}")
                if not first_at:
                    first_at = time.time()
                    write_stats_file(stats_path, {"first_consumed_at": first_at})
                    next_commit = time.monotonic() + COMMIT_INTERVAL_S
                consumed += 1
                value = loads(msg.value())
                ts = msg.timestamp()[1]
                if ts > stream_time:
                    stream_time = ts
                start = ts - ts % WINDOW_MS
                if start + WINDOW_MS <= stream_time:
                    late += 1
                    continue
                key = msg.key()
                c = counts.get((key, start), 0) + 1
                counts[(key, start)] = c
                out = dumps({"user": value["user"], "start": start, "count": c})
                while True:
                    try:
                        produce(output_topic, out, key)
                        break
                    except BufferError:
                        poll(0.01)
            last = batch[-1]
            next_offsets[(last.topic(), last.partition())] = last.offset() + 1
            poll(0)
            if time.monotonic() >= next_commit:
                commit()
                next_commit = time.monotonic() + COMMIT_INTERVAL_S
        commit()
    finally:
        consumer.close()
    stats = {"first_consumed_at": first_at, "consumed": consumed, "late": late, "commits": commits}
    write_stats_file(stats_path, stats)
    return stats


def bench(
    client: KafkaClientConfig,
    input_topic: str,
    events: int,
    expected_outputs: int,
    workdir: Path,
    run_id: str,
    timeout_s: float,
) -> dict[str, Any]:
    """Harness side: the loop as a child process, timed from outside (unverified: the hook checks)."""
    output = f"bench-{run_id}-rawwin-out"
    ensure_topics(client, [output])
    stats = workdir / f"{run_id}-rawwin.stats.json"
    cmd = [
        sys.executable, "-m", "benchmarks.anchors.raw_windowed",
        "--bootstrap", client.bootstrap_servers, "--profile", client.profile.value,
        "--input", input_topic, "--output", output, "--group", f"bench-{run_id}-rawwin",
        "--events", str(events), "--stats", str(stats),
    ]  # fmt: skip
    return run_timed_child(
        client, system=SYSTEM, workload=WORKLOAD, cmd=cmd, output_topic=output, input_events=events,
        expected_outputs=expected_outputs, stats_path=stats, log_path=workdir / f"{run_id}-rawwin.log",
        timeout_s=timeout_s, terminate_when_done=False,
        extra={"settings": {"commit_interval_s": COMMIT_INTERVAL_S, "consume_batch": BATCH,
                            "guarantee": "at-least-once",
                            "state": "python dict of (key, window) counts (no store, no changelog)"}},
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
    print(windowed_loop(client, a.input, a.output, a.group, a.events, a.stats), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

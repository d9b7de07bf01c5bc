"""Reference: a hand-written confluent-kafka loop doing the orders x payments windowed join.

What a Python user writes with no framework: one consumer on both topics, the two partitions merged
lowest timestamp first (as Kafka Streams orders a task's inputs), each side buffered in a ``dict`` of
``key -> [(ts, value)]`` purged once older than the join window plus grace, one JSON output per matching
pair within ±5 minutes, at-least-once (every second: flush, then commit the consumed offsets). No state
store and no changelog, so nothing survives a restart: a ceiling, not a like-for-like system.
Quix Streams has no windowed stream-stream join, so this is the only other system in that figure.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from benchmarks.common import COMMIT_INTERVAL_S, ensure_topics, write_stats_file
from benchmarks.event_time import JOIN_DIFF_MS, JOIN_GRACE_MS
from edge.kafka import BrokerProfile, KafkaClientConfig

SYSTEM = "raw-confluent-kafka"
WORKLOAD = "stream-stream-join"
BATCH = 1000
PAUSE_AT = 20_000


def join_loop(
    client: KafkaClientConfig,
    orders: str,
    payments: str,
    output: str,
    group: str,
    events: int,
    stats_path: str,
) -> dict[str, Any]:
    consumer = Consumer(client.consumer(group, **{"enable.auto.commit": False, "enable.partition.eof": True}))
    producer = Producer(client.producer())
    consumer.assign(
        [TopicPartition(orders, 0, OFFSET_BEGINNING), TopicPartition(payments, 0, OFFSET_BEGINNING)]
    )
    loads, dumps = orjson.loads, orjson.dumps
    produce, poll = producer.produce, producer.poll
    queues: dict[str, deque[Any]] = {orders: deque(), payments: deque()}
    at_eof: set[str] = set()
    stores: dict[str, dict[bytes, list[tuple[int, Any]]]] = {orders: {}, payments: {}}
    expiry: dict[str, deque[tuple[int, bytes]]] = {orders: deque(), payments: deque()}
    other = {orders: payments, payments: orders}
    keep_ms = 2 * JOIN_DIFF_MS + JOIN_GRACE_MS
    processed = joins = commits = 0
    stream_time = -1
    first_at = 0.0
    next_commit = 0.0
    offsets: dict[str, int] = {}
    paused: set[str] = set()

    def commit() -> None:
        nonlocal commits
        if producer.flush(60):
            raise RuntimeError("producer did not flush within 60 s")
        if offsets:
            consumer.commit(offsets=[TopicPartition(t, 0, o) for t, o in offsets.items()], asynchronous=False)
            commits += 1

    def process(msg: Any) -> None:
        nonlocal joins, stream_time
        topic = msg.topic()
        ts = msg.timestamp()[1]
        key = msg.key()
        value = loads(msg.value())
        stream_time = max(stream_time, ts)
        for ots, oval in stores[other[topic]].get(key, ()):
            if abs(ots - ts) <= JOIN_DIFF_MS:
                order, pay = (value, oval) if topic == orders else (oval, value)
                out = {"order": order["order"], "customer": order["customer"], "amount": order["amount"],
                       "paid": pay["paid"], "dt": pay["ts"] - order["ts"]}  # fmt: skip
                while True:
                    try:
                        produce(output, dumps(out), key)
                        break
                    except BufferError:
                        poll(0.01)
                joins += 1
        stores[topic].setdefault(key, []).append((ts, value))
        expiry[topic].append((ts, key))
        offsets[topic] = msg.offset() + 1

    def purge() -> None:
        horizon = stream_time - keep_ms
        for topic, q in expiry.items():
            store = stores[topic]
            while q and q[0][0] < horizon:
                _ts, key = q.popleft()
                rows = store.get(key)
                if rows:
                    rows[:] = [r for r in rows if r[0] >= horizon]
                    if not rows:
                        del store[key]

    try:
        while processed < events:
            for msg in consumer.consume(BATCH, 0.05):
                err = msg.error()
                if err is None:
                    queues[msg.topic()].append(msg)
                    at_eof.discard(msg.topic())
                elif err.code() == KafkaError._PARTITION_EOF:
                    at_eof.add(msg.topic())
                else:
                    raise RuntimeError(f"consume error: {err}")
            qo, qp = queues[orders], queues[payments]
            if first_at == 0.0 and (qo or qp):
                first_at = time.time()
                write_stats_file(stats_path, {"first_consumed_at": first_at})
                next_commit = time.monotonic() + COMMIT_INTERVAL_S
            # lowest timestamp first; a side with nothing buffered blocks unless it is at its end
            while (qo or orders in at_eof) and (qp or payments in at_eof) and (qo or qp):
                if qo and (not qp or qo[0].timestamp()[1] <= qp[0].timestamp()[1]):
                    process(qo.popleft())
                else:
                    process(qp.popleft())
                processed += 1
            purge()
            for topic, q in queues.items():  # bound the buffers: pause a side far ahead of the other
                tp = [TopicPartition(topic, 0)]
                if len(q) > PAUSE_AT and topic not in paused:
                    consumer.pause(tp)
                    paused.add(topic)
                elif len(q) < PAUSE_AT // 2 and topic in paused:
                    consumer.resume(tp)
                    paused.discard(topic)
            poll(0)
            if first_at and time.monotonic() >= next_commit:
                commit()
                next_commit = time.monotonic() + COMMIT_INTERVAL_S
        commit()
    finally:
        consumer.close()
    stats = {"first_consumed_at": first_at, "processed": processed, "joins": joins, "commits": commits}
    write_stats_file(stats_path, stats)
    return stats


def bench(
    client: KafkaClientConfig,
    orders: str,
    payments: str,
    events: int,
    expected_outputs: int,
    workdir: Path,
    run_id: str,
    timeout_s: float,
) -> dict[str, Any]:
    from benchmarks.timed_child import run_timed_child

    output = f"bench-{run_id}-rawjoin-out"
    ensure_topics(client, [output])
    stats = workdir / f"{run_id}-rawjoin.stats.json"
    cmd = [
        sys.executable, "-m", "benchmarks.anchors.raw_join",
        "--bootstrap", client.bootstrap_servers, "--profile", client.profile.value,
        "--orders", orders, "--payments", payments, "--output", output,
        "--group", f"bench-{run_id}-rawjoin", "--events", str(events), "--stats", str(stats),
    ]  # fmt: skip
    return run_timed_child(
        client, system=SYSTEM, workload=WORKLOAD, cmd=cmd, output_topic=output, input_events=events,
        expected_outputs=expected_outputs, stats_path=stats, log_path=workdir / f"{run_id}-rawjoin.log",
        timeout_s=timeout_s, terminate_when_done=False,
        extra={"settings": {"commit_interval_s": COMMIT_INTERVAL_S, "consume_batch": BATCH,
                            "guarantee": "at-least-once",
                            "state": "python dicts per side (no store, no changelog)"}},
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--profile", default="embedded")
    ap.add_argument("--orders", required=True)
    ap.add_argument("--payments", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--events", type=int, required=True)
    ap.add_argument("--stats", required=True)
    a = ap.parse_args(argv)
    client = KafkaClientConfig(a.bootstrap, BrokerProfile(a.profile))
    print(join_loop(client, a.orders, a.payments, a.output, a.group, a.events, a.stats), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

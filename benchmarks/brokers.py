"""The two local brokers side by side: embedded Tansu vs Apache Kafka (``broker_kind``).

For each broker: start time (fresh, and for Kafka also a restart on its existing data), resident
memory (idle after start, and after the load), produce and consume throughput (N records of 200 bytes
on a 4-partition topic, each client with its broker's profile), end-to-end latency (one record at a
time, produce → a subscribed consumer; p50/p99), and a transactional produce rate (commits/s of
100-record transactions). Prints a table and writes ``benchmarks/results/brokers.json``.

    .venv/bin/python -m benchmarks.brokers [--records 200000] [--kinds tansu,kafka]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer

from edge.broker import BrokerKind, local_broker, profile_for, resolve_kafka_distribution
from edge.kafka import KafkaClientConfig, TopicSpec, create_topics

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "brokers.json"
VALUE = b"x" * 200


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timed_starts(kind: BrokerKind, n: int, workdir: Path) -> dict[str, Any]:
    fresh = []
    for i in range(n):
        broker = local_broker(kind, log_dir=workdir, data_dir=workdir / f"start-{i}")
        t0 = time.perf_counter()
        broker.start()
        fresh.append(time.perf_counter() - t0)
        broker.stop()
    out: dict[str, Any] = {
        "start_s": [round(s, 2) for s in fresh],
        "start_median_s": statistics.median(fresh),
    }
    if kind is BrokerKind.KAFKA:  # restart on the data dir of the first start (no format step)
        broker = local_broker(kind, log_dir=workdir, data_dir=workdir / "start-0")
        t0 = time.perf_counter()
        broker.start()
        out["restart_s"] = round(time.perf_counter() - t0, 2)
        broker.stop()
    return out


def produce_throughput(client: KafkaClientConfig, topic: str, n: int) -> dict[str, float]:
    producer = Producer(client.producer(**{"linger.ms": 5, "batch.num.messages": 10000}))
    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                producer.produce(topic, VALUE, b"k%d" % (i % 1000))
                break
            except BufferError:
                producer.poll(0.01)
        if i % 10000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0
    secs = time.perf_counter() - t0
    return {"records_per_s": n / secs, "mb_per_s": n * len(VALUE) / secs / 1e6, "seconds": secs}


def consume_throughput(client: KafkaClientConfig, topic: str, partitions: int, n: int) -> dict[str, float]:
    consumer = Consumer(
        client.consumer(
            f"bench-{uuid.uuid4().hex[:8]}",
            **{"auto.offset.reset": "earliest", "enable.partition.eof": True, "enable.auto.commit": False},
        )
    )
    consumer.subscribe([topic])
    got, at_eof, t0, first = 0, set(), time.perf_counter(), None
    try:
        while len(at_eof) < partitions and time.perf_counter() - t0 < 300:
            for msg in consumer.consume(1000, 0.5):
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        at_eof.add(msg.partition())
                    continue
                if first is None:
                    first = time.perf_counter()
                got += 1
    finally:
        consumer.close()
    end = time.perf_counter()
    assert got == n, f"consumed {got} of {n}"
    return {
        "records_per_s": n / (end - (first or t0)),
        "group_join_s": (first or end) - t0,
        "seconds_with_join": end - t0,
    }


def latency(client: KafkaClientConfig, topic: str, samples: int) -> dict[str, float]:
    consumer = Consumer(client.consumer(f"lat-{uuid.uuid4().hex[:8]}", **{"auto.offset.reset": "latest"}))
    consumer.subscribe([topic])
    deadline = time.monotonic() + 60
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.1)
    producer = Producer(client.producer(**{"linger.ms": 0}))
    # warm up: the first records also settle the consumer's fetch position
    producer.produce(topic, b"warm")
    producer.flush(10)
    warm_deadline = time.monotonic() + 30
    while time.monotonic() < warm_deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error() and msg.value() == b"warm":
            break
    lat = []
    try:
        for i in range(samples):
            t0 = time.perf_counter()
            producer.produce(topic, str(i).encode())
            producer.poll(0)
            while True:
                msg = consumer.poll(5)
                if msg is None:
                    raise TimeoutError(f"record {i} did not arrive within 5 s")
                if msg.error() or msg.value() != str(i).encode():
                    continue
                lat.append((time.perf_counter() - t0) * 1000)
                break
    finally:
        consumer.close()
        producer.flush(10)
    lat.sort()
    return {
        "p50_ms": lat[len(lat) // 2],
        "p99_ms": lat[int(len(lat) * 0.99) - 1],
        "mean_ms": statistics.fmean(lat),
        "samples": samples,
    }


def transactions(client: KafkaClientConfig, topic: str, count: int, size: int = 100) -> dict[str, float]:
    producer = Producer(client.producer(**{"transactional.id": f"bench-{uuid.uuid4().hex[:8]}"}))
    producer.init_transactions(30)
    t0 = time.perf_counter()
    for t in range(count):
        producer.begin_transaction()
        for i in range(size):
            producer.produce(topic, VALUE, b"k%d" % ((t * size + i) % 1000))
        producer.commit_transaction(30)
    secs = time.perf_counter() - t0
    return {"commits_per_s": count / secs, "records_per_s": count * size / secs, "records_per_txn": size}


def bench_kind(kind: BrokerKind, records: int, starts: int, samples: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-broker-{kind.value}-") as tmp:
        workdir = Path(tmp)
        result: dict[str, Any] = {"kind": kind.value}
        result.update(timed_starts(kind, starts, workdir))
        broker = local_broker(kind, log_dir=workdir, data_dir=workdir / "load")
        broker.start()
        try:
            pid = broker.info.pid
            time.sleep(1.0)
            result["rss_idle_mb"] = rss_mb(pid)
            client = KafkaClientConfig(broker.bootstrap_servers, profile_for(kind))
            topic, lat_topic, txn_topic = "bench-throughput", "bench-latency", "bench-txn"
            create_topics(
                client,
                [TopicSpec(topic, 4), TopicSpec(lat_topic, 1), TopicSpec(txn_topic, 1)],
            )
            result["produce"] = produce_throughput(client, topic, records)
            result["consume"] = consume_throughput(client, topic, 4, records)
            result["latency"] = latency(client, lat_topic, samples)
            result["transactions"] = transactions(client, txn_topic, 100)
            result["rss_after_load_mb"] = rss_mb(pid)
        finally:
            broker.stop()
        return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--samples", type=int, default=500, help="latency samples")
    parser.add_argument("--kinds", default="tansu,kafka")
    parser.add_argument("--output", type=Path, default=RESULT)
    args = parser.parse_args(argv)
    kinds = [BrokerKind(k.strip()) for k in args.kinds.split(",") if k.strip()]
    results = {}
    for kind in kinds:
        print(f"benchmarking {kind.value} ...", flush=True)
        results[kind.value] = bench_kind(kind, args.records, args.starts, args.samples)
    versions: dict[str, str] = {}
    if BrokerKind.KAFKA in kinds:
        versions["kafka"] = resolve_kafka_distribution().version
    doc = {
        "run_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "records": args.records,
        "record_bytes": len(VALUE),
        "versions": versions,
        "results": results,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=2) + "\n")
    rows = [
        ("start (fresh), median s", lambda r: f"{r['start_median_s']:.2f}"),
        ("restart on data, s", lambda r: f"{r['restart_s']:.2f}" if "restart_s" in r else "-"),
        ("RSS idle, MB", lambda r: f"{r['rss_idle_mb']:.0f}"),
        ("RSS after load, MB", lambda r: f"{r['rss_after_load_mb']:.0f}"),
        ("produce, records/s", lambda r: f"{r['produce']['records_per_s']:,.0f}"),
        ("consume, records/s", lambda r: f"{r['consume']['records_per_s']:,.0f}"),
        ("group join, s", lambda r: f"{r['consume']['group_join_s']:.2f}"),
        ("latency p50, ms", lambda r: f"{r['latency']['p50_ms']:.1f}"),
        ("latency p99, ms", lambda r: f"{r['latency']['p99_ms']:.1f}"),
        ("transactions/s (100 rec)", lambda r: f"{r['transactions']['commits_per_s']:.0f}"),
    ]
    print(f"\n{'':28}" + "".join(f"{k.value:>14}" for k in kinds))
    for label, fmt in rows:
        print(f"{label:28}" + "".join(f"{fmt(results[k.value]):>14}" for k in kinds))
    print(f"\nwrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

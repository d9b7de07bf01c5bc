"""Timing for systems that coalesce updates (Pathway): to the moment every key holds its true final value.

A coalescing system emits a key's new value once per batch, with retractions of the old one, so "the
N-th output" means nothing for it. The protocol instead:

1. the system starts on fresh, empty input topics; the harness produces a warm-up record (key
   ``warmup``; for a join, one on each side) and waits until the system's output shows it --
   start-up, imports and the first batch are then behind it;
2. the clock starts, and the harness produces the N events (the same generator and keys as the other
   systems' input) from a thread while the system runs;
3. a watcher reads the output from the beginning, keeps each key's live values (an insertion adds a
   value, a retraction removes it; an upsert -- a KTable's changelog, what a record cache flushes --
   replaces them) and stops the clock when every key of the truth holds exactly its true
   final value and nothing else.

``events/s = N / (t_final - t_warm)``; ``outputs_per_input`` = output records (retractions included)
after the warm-up / N. The watcher consumes every output record and the producer runs in this process:
both take CPU from a 2-core machine that the pre-produced runs of the other systems do not pay, so the
figure is, if anything, against the coalescing system (docs/benchmarks.md, "Peers").
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import Consumer, Producer

from benchmarks.common import bulk_producer_config, ensure_topics, result, start_child
from edge.kafka import KafkaClientConfig

WARMUP_KEY = b"warmup"
#: One output record -> (truth key, value, +1 insertion / -1 retraction / None upsert: the key's value
#: is now this one); None: not a record to track.
Decoder = Callable[[dict[str, Any]], tuple[Hashable, Hashable, int | None] | None]


def run_coalesced(
    client: KafkaClientConfig,
    *,
    system: str,
    workload: str,
    cmd: Sequence[str],
    input_topics: Sequence[str],
    output_topic: str,
    records: Callable[[], Iterable[tuple[str, bytes, bytes, int | None]]],
    warmup: Sequence[tuple[str, bytes, bytes, int | None]],
    truth: Mapping[Hashable, Counter[Hashable]],
    decode: Decoder,
    events: int,
    log_path: Path,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Run ``cmd`` and time it as the module docstring says. ``records()`` yields (topic, key, value,
    timestamp ms or None); ``truth`` maps each key to the multiset of values it must finally hold (one
    value for an aggregate: ``Counter({count: 1})``; the joined rows of an order for a join); output keys
    absent from it are ignored."""
    ensure_topics(client, [*input_topics, output_topic])
    child = start_child(cmd, log_path, env)
    producer = Producer(bulk_producer_config(client))
    consumer = Consumer(client.consumer(None, **{
        "group.id": f"bench-coalesced-{os.getpid()}-{time.monotonic_ns()}", "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }))  # fmt: skip
    consumer.subscribe([output_topic])
    live: dict[Hashable, Counter[Hashable]] = {}
    good: set[Hashable] = set()
    outputs = 0
    loads = orjson.loads
    deadline = time.monotonic() + timeout_s
    produced: dict[str, Any] = {}
    base = {"output_topic": output_topic, **(extra or {})}
    try:
        for topic, key, value, ts in warmup:
            producer.produce(topic, value, key, **({"timestamp": ts} if ts else {}))
        producer.flush(30)
        t_launch = time.time()
        warm = False
        while not warm and time.monotonic() < deadline and child.alive():
            for m in consumer.consume(1000, 0.1):
                if m.error() is None and _is_warmup(loads(m.value()), decode):
                    warm = True
        if not warm:
            return _failed(
                system, workload, events, "the warm-up record never reached the output", child, base
            )
        t_warm = time.time()

        def produce_all() -> None:
            t0 = time.perf_counter()
            n = 0
            for topic, key, value, ts in records():
                while True:
                    try:
                        producer.produce(topic, value, key, **({"timestamp": ts} if ts else {}))
                        break
                    except BufferError:
                        producer.poll(0.05)
                n += 1
                if n % 10_000 == 0:
                    producer.poll(0)
            produced["undelivered"] = producer.flush(120)
            produced.update(records=n, produce_s=round(time.perf_counter() - t0, 3))

        feeder = threading.Thread(target=produce_all, name="coalesced-producer", daemon=True)
        feeder.start()
        want = len(truth)
        t_final = None
        while time.monotonic() < deadline:
            batch = consumer.consume(10_000, 0.05)
            for m in batch:
                if m.error() is not None:
                    continue
                outputs += 1
                got = decode(loads(m.value()))
                if got is None or got[0] not in truth:
                    continue
                k, v, diff = got
                vals = live.setdefault(k, Counter())
                if diff is None:  # an upsert replaces the key's value
                    vals.clear()
                    diff = 1
                vals[v] += diff
                if vals[v] == 0:
                    del vals[v]
                if vals == truth[k]:
                    good.add(k)
                else:
                    good.discard(k)
            if len(good) == want and not feeder.is_alive():
                t_final = time.time()
                break
            if not batch and not child.alive():
                break
        feeder.join(5)
        if t_final is None:
            why = f"{len(good)}/{want} keys held their final value after {timeout_s:.0f}s"
            return _failed(system, workload, events, why, child, base, outputs=outputs, produced=produced)
    finally:
        consumer.close()
        child.finish(timeout_s=60, terminate=True)
    elapsed = t_final - t_warm
    return result(
        system, workload, events, events / elapsed, elapsed_s=round(elapsed, 3),
        startup_s=round(t_warm - t_launch, 3), child_cpu_s=child.cpu_s, child_exit_code=child.returncode,
        cpu_s_per_1m_events=round(child.cpu_s / events * 1e6, 2) if child.cpu_s else None,
        output_records=outputs, outputs_per_input=round(outputs / events, 3), produced_while_running=produced,
        figure="N / (every key at its true final value - warm-up record seen in the output)",
        verification={"correct": True, "keys_at_final_value": len(good), "keys": want,
                      "note": "checked by the watcher: every key holds exactly its true final value"},
        **base,
    )  # fmt: skip


def _is_warmup(value: dict[str, Any], decode: Decoder) -> bool:
    got = decode(value)
    return got is not None and WARMUP_KEY.decode() in str(got[0])


def _failed(
    system: str, workload: str, events: int, why: str, child: Any, base: dict[str, Any], **more: Any
) -> dict[str, Any]:
    child.finish(timeout_s=30, terminate=True)
    reason = f"{why}; exit code {child.returncode}; log tail:\n{child.log_tail()}"
    return result(system, workload, events, None, status="failed", reason=reason, child_cpu_s=child.cpu_s,
                  **base, **more)  # fmt: skip

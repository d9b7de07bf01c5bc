"""Shared benchmark plumbing: the input events, timing, output watching, result files.

Every system under test reads the *same* pre-produced input topic on the *same* broker, and is timed
the same way from outside: the system reports the wall-clock time at which it consumed its first input
record, and the harness records the wall-clock time at which the N-th output record is on the broker
(the output partition's high watermark, polled by a separate consumer). That keeps the measurement free
of per-system instrumentation differences and does not steal CPU from the system under test (polling a
watermark costs nothing; consuming 1M records would cost a core-second or more on a 2-core box).
Correctness is checked afterwards, untimed, by reading the output back to partition EOF.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import random
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from edge.kafka import KafkaClientConfig, TopicSpec, create_topics

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "benchmarks" / "results"
PLOTS_DIR = ROOT / "docs" / "benchmarks"

#: The edge-throughput workload the targets are set on (docs/benchmarks.md): 1M JSON events over 10k
#: keys, one partition.
DEFAULT_EVENTS = 1_000_000
DEFAULT_KEYS = 10_000
#: One commit interval for every system in the count workload, so at-least-once costs the same for all.
COMMIT_INTERVAL_S = 1.0
#: Explicit retention for every benchmark topic (the embedded broker applies none by itself).
TOPIC_RETENTION = {"retention.ms": str(24 * 3600 * 1000), "retention.bytes": "-1"}


# --------------------------------------------------------------------------------------- events


def event_key(i: int) -> bytes:
    return b"user-%05d" % i


def table_row(k: int) -> bytes:
    """User ``k``'s row of the enrichment table. It names its user, as a real profile would, so the rows
    are all different: a table of a few distinct rows would flatter any cache of parsed rows."""
    return orjson.dumps(
        {"user": f"user-{k:05d}", "tier": TIERS[k % 4], "region": REGIONS[k % 5], "since": 2010 + k % 15}
    )


def generate_events(n: int, keys: int = DEFAULT_KEYS, seed: int = 42) -> Iterable[tuple[bytes, bytes]]:
    """Deterministic (key, JSON value) pairs: uniform random keys, a small realistic JSON body."""
    rng = random.Random(seed)
    names = [event_key(k) for k in range(keys)]
    base_ms = 1_760_000_000_000
    dumps = orjson.dumps
    for i in range(n):
        k = rng.randrange(keys)
        key = names[k]
        yield (
            key,
            dumps(
                {
                    "user": key.decode(),
                    "seq": i,
                    "amount": (i * 7919) % 10_000 / 100,
                    "kind": "click" if i % 3 else "view",
                    "ts": base_ms + i,
                }
            ),
        )


def bulk_producer_config(client: KafkaClientConfig) -> dict[str, Any]:
    """Settings for pre-producing input fast: big batches, a deep local queue."""
    return client.producer(
        **{
            "linger.ms": 20,
            "batch.num.messages": 10_000,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "compression.type": "none",
        }
    )


def produce_all(producer: Producer, topic: str, records: Iterable[tuple[bytes, bytes]]) -> int:
    """Produce as fast as the local queue allows; returns the count. Raises if any delivery failed."""
    failures: list[str] = []

    def on_delivery(err: KafkaError | None, _msg: Any) -> None:
        if err is not None and len(failures) < 5:
            failures.append(str(err))

    n = 0
    produce = producer.produce
    for key, value in records:
        while True:
            try:
                produce(topic, value, key, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        n += 1
        if n % 10_000 == 0:
            producer.poll(0)
    remaining = producer.flush(120)
    if remaining or failures:
        raise RuntimeError(f"producing to {topic}: {remaining} undelivered, errors: {failures}")
    return n


TIERS = ("free", "silver", "gold", "platinum")
REGIONS = ("eu-west", "eu-north", "us-east", "us-west", "ap-south")


def prepare_table(
    client: KafkaClientConfig, topic: str, keys: int = DEFAULT_KEYS, partitions: int = 1
) -> dict[str, Any]:
    """The enrichment table: one JSON profile per key, produced once (timestamps older than any event).
    Produced, as the events are, with the client's default partitioner: both topics are co-partitioned
    when they have as many partitions."""
    ensure_topics(client, [topic], partitions)
    have = sum(end_offsets(client, topic))
    if have >= keys:
        return {"topic": topic, "rows": have, "produced_now": False}
    rows = ((event_key(k), table_row(k)) for k in range(keys))
    n = produce_all(Producer(bulk_producer_config(client)), topic, rows)
    return {"topic": topic, "rows": n, "produced_now": True}


def ensure_topics(
    client: KafkaClientConfig, names: Sequence[str], partitions: int = 1, **config: str
) -> None:
    create_topics(client, [TopicSpec(n, partitions, config={**TOPIC_RETENTION, **config}) for n in names])


def end_offsets(client: KafkaClientConfig, topic: str) -> list[int]:
    """High watermark of each partition of ``topic``."""
    c = Consumer(client.consumer("bench-watermarks", **{"enable.auto.commit": False}))
    try:
        meta = c.list_topics(topic, timeout=10).topics[topic]
        return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in meta.partitions]
    finally:
        c.close()


def prepare_input(
    client: KafkaClientConfig, topic: str, n: int, keys: int = DEFAULT_KEYS, partitions: int = 1
) -> dict[str, Any]:
    """Create and fill ``topic`` with n events once; reuse it if it already holds exactly n records."""
    ensure_topics(client, [topic], partitions)
    have = sum(end_offsets(client, topic))
    if have == n:
        return {"topic": topic, "events": n, "produced_now": False, "produce_s": 0.0}
    if have:
        raise RuntimeError(f"input topic {topic} already holds {have} records, expected 0 or {n}")
    t0 = time.perf_counter()
    produced = produce_all(Producer(bulk_producer_config(client)), topic, generate_events(n, keys))
    dt = time.perf_counter() - t0
    return {
        "topic": topic,
        "events": produced,
        "produced_now": True,
        "produce_s": round(dt, 3),
        "produce_events_per_s": round(produced / dt),
    }


# --------------------------------------------------------------------------------------- reading back


def consume_until_eof(
    client: KafkaClientConfig,
    topic: str,
    *,
    n: int | None = None,
    timeout_s: float = 120.0,
    read_committed: bool = False,
    handle: Any = None,
) -> int:
    """Read ``topic`` from the beginning until every partition reports EOF (and, if given, n records).

    The end is found by partition EOF, not by a quiet period, so it is exact and never waits idly.
    ``handle(batch)`` is called with each batch of messages (errors excluded). Returns the record count.
    """
    conf = client.consumer(
        None,
        **{
            "group.id": f"bench-reader-{os.getpid()}-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed" if read_committed else "read_uncommitted",
        },
    )
    c = Consumer(conf)
    try:
        parts = c.list_topics(topic, timeout=10).topics[topic].partitions
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        at_eof: set[int] = set()
        count = 0
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            batch = c.consume(10_000, 0.5)
            good = []
            for m in batch:
                err = m.error()
                if err is None:
                    good.append(m)
                    at_eof.discard(m.partition())
                elif err.code() == KafkaError._PARTITION_EOF:
                    at_eof.add(m.partition())
                else:
                    raise RuntimeError(f"reading {topic}: {err}")
            count += len(good)
            if handle is not None and good:
                handle(good)
            if len(at_eof) == len(parts) and (n is None or count >= n):
                return count
        raise TimeoutError(f"reading {topic}: {count} records after {timeout_s}s, EOF on {sorted(at_eof)}")
    finally:
        c.close()


def verify_counts(client: KafkaClientConfig, topic: str, expected_events: int) -> dict[str, Any]:
    """Read the count output back: records seen, and whether the final per-key counts add up to N."""
    final: dict[bytes, int] = {}
    loads = orjson.loads

    def handle(batch: list[Any]) -> None:
        for m in batch:
            c = loads(m.value())["count"]
            k = m.key()
            if c > final.get(k, 0):
                final[k] = c

    records = consume_until_eof(client, topic, timeout_s=180, handle=handle)
    total = sum(final.values())
    return {
        "output_records": records,
        "keys": len(final),
        "sum_of_final_counts": total,
        "correct": total == expected_events and records >= expected_events,
    }


# --------------------------------------------------------------------------------------- timing


@dataclass
class WatchResult:
    reached: bool
    seen: int
    end_wall: float  # time.time() when the N-th output was first observed (or the deadline)


#: Tansu reports a partition's high watermark as the base offset of its last batch, so the watermark
#: trails the true end by up to one producer batch. It is used only to get close cheaply.
WATERMARK_MARGIN = 50_000


def wait_for_outputs(
    client: KafkaClientConfig,
    topic: str,
    n: int,
    *,
    timeout_s: float,
    poll_s: float = 0.01,
    alive: Any = None,
    read_committed: bool = False,
) -> WatchResult:
    """Wait until ``topic`` holds n records; return when the n-th was first seen by a separate consumer.

    Phase 1 polls high watermarks (no CPU taken from the system under test) until they are within
    ``WATERMARK_MARGIN`` of n; phase 2 consumes from there and tracks the highest offset, so the time is
    that of the n-th record's arrival. With ``read_committed`` (exactly-once outputs, whose offsets include
    transaction markers) phase 2 instead counts committed records from the beginning.
    ``alive()`` returning False aborts the wait once nothing more can arrive.
    """
    conf = client.consumer(
        None,
        **{
            "group.id": f"bench-watcher-{os.getpid()}-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed" if read_committed else "read_uncommitted",
        },
    )
    c = Consumer(conf)
    try:
        parts = [TopicPartition(topic, p) for p in c.list_topics(topic, timeout=10).topics[topic].partitions]
        deadline = time.monotonic() + timeout_s
        last_alive_check = time.monotonic()
        dead_since: float | None = None

        def should_stop() -> bool:
            nonlocal last_alive_check, dead_since
            now = time.monotonic()
            if alive is not None and now - last_alive_check > 0.5:
                last_alive_check = now
                if dead_since is None and not alive():
                    dead_since = now
            # After the child exits, give the reader 3 s to drain what it already produced.
            return now >= deadline or (dead_since is not None and now - dead_since > 3.0)

        marks = [0] * len(parts)
        if not read_committed:
            while True:
                marks = [c.get_watermark_offsets(tp, timeout=5, cached=False)[1] for tp in parts]
                if sum(marks) >= n - WATERMARK_MARGIN or should_stop() or dead_since is not None:
                    break
                time.sleep(poll_s)
        c.assign(
            [
                TopicPartition(tp.topic, tp.partition, marks[i] if not read_committed else OFFSET_BEGINNING)
                for i, tp in enumerate(parts)
            ]
        )
        ends = {tp.partition: marks[i] for i, tp in enumerate(parts)}
        counted = 0
        while True:
            batch = c.consume(10_000, 0.05)
            for m in batch:
                if m.error() is None:
                    counted += 1
                    ends[m.partition()] = m.offset() + 1
            seen = counted if read_committed else sum(ends.values())
            if seen >= n:
                return WatchResult(True, seen, time.time())
            if not batch and should_stop():
                return WatchResult(False, seen, time.time())
    finally:
        c.close()


def percentiles(values: Sequence[float], ps: Sequence[float] = (50, 90, 99, 99.9)) -> dict[str, float]:
    """Nearest-rank percentiles (no numpy needed); keys like ``p50``, ``p99``, ``p99.9``."""
    if not values:
        return {}
    s = sorted(values)
    out = {}
    for p in ps:
        idx = min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))
        out[f"p{p:g}"] = s[idx]
    return out


@dataclass
class ChildRun:
    """A benchmark child process, with its CPU usage collected at exit (os.wait4)."""

    popen: subprocess.Popen[bytes]
    log_path: Path
    cpu_s: float | None = None
    returncode: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def alive(self) -> bool:
        """Reaps with wait4 (not Popen.poll) so the child's CPU usage is not lost."""
        self._reap()
        return self.returncode is None

    def _reap(self) -> None:
        if self.returncode is not None:
            return
        pid, status, ru = os.wait4(self.popen.pid, os.WNOHANG)
        if pid:
            self.returncode = self.popen.returncode = os.waitstatus_to_exitcode(status)
            self.cpu_s = round(ru.ru_utime + ru.ru_stime, 2)

    def finish(self, timeout_s: float = 60.0, terminate: bool = False) -> None:
        """Wait for exit (SIGTERM first if asked, SIGKILL after the timeout) and record CPU seconds."""
        self._reap()
        if terminate and self.returncode is None:
            self.popen.terminate()
        deadline = time.monotonic() + timeout_s
        while True:
            self._reap()
            if self.returncode is not None:
                break
            if time.monotonic() > deadline:
                self.popen.kill()
                deadline = time.monotonic() + 10
            time.sleep(0.05)

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


#: where children start: a ``python -m benchmarks...`` child imports ``edge`` and ``benchmarks`` from here
_child_root: list[Path] = [ROOT]


@contextlib.contextmanager
def children_started_in(root: Path) -> Iterator[None]:
    """Start the children of the enclosed runs in ``root``, another checkout of this repository, so they
    run its ``edge`` (how ``alternating.py --baseline`` times one commit against another)."""
    _child_root.append(Path(root).resolve())
    try:
        yield
    finally:
        _child_root.pop()


def start_child(cmd: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None) -> ChildRun:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        p = subprocess.Popen(
            list(cmd),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=_child_root[-1],
            env={**os.environ, **(env or {})},
        )
    return ChildRun(p, log_path)


def read_stats_file(path: Path, timeout_s: float = 0.0) -> dict[str, Any] | None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)


def write_stats_file(path: str | Path, data: Mapping[str, Any]) -> None:
    """Atomic write, so the harness never reads half a file."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(dict(data)))
    tmp.replace(path)


# --------------------------------------------------------------------------------------- results


REQUIRED_FIELDS = ("system", "workload", "events", "events_per_s")


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import confluent_kafka

        info["confluent_kafka"] = confluent_kafka.version()[0]
        info["librdkafka"] = confluent_kafka.libversion()[0]
    except Exception:
        pass
    return info


def result(
    system: str, workload: str, events: int, events_per_s: float | None, **extra: Any
) -> dict[str, Any]:
    """One result object. ``events_per_s`` None means "not measured" and requires ``status``/``reason``."""
    obj: dict[str, Any] = {
        "system": system,
        "workload": workload,
        "events": events,
        "events_per_s": round(events_per_s) if events_per_s is not None else None,
        "status": "ok" if events_per_s is not None else "not_available",
    }
    obj.update(extra)
    return obj


def not_available(system: str, workload: str, events: int, reason: str, **extra: Any) -> dict[str, Any]:
    return result(system, workload, events, None, status="not_available", reason=reason, **extra)


def write_results(name: str, objects: Sequence[Mapping[str, Any]], results_dir: Path = RESULTS_DIR) -> Path:
    """``benchmarks/results/<name>.json``: a list with one object per system."""
    for obj in objects:
        missing = [f for f in REQUIRED_FIELDS if f not in obj]
        if missing:
            raise ValueError(f"result for {name} lacks {missing}: {obj}")
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{name}.json"
    path.write_text(json.dumps(list(objects), indent=2, default=str) + "\n")
    return path


def run_count_child(
    client: KafkaClientConfig,
    *,
    system: str,
    workload: str,
    cmd: Sequence[str],
    output_topic: str,
    events: int,
    stats_path: Path,
    log_path: Path,
    timeout_s: float,
    terminate_when_done: bool,
    verify: bool = True,
    env: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Run one system as a child process and time it from outside (see the module docstring).

    The child writes ``{"first_consumed_at": <time.time()>}`` to ``stats_path`` when it consumes its
    first input record; the harness notes when ``events`` outputs are on the broker.
    """
    stats_path.unlink(missing_ok=True)
    t_launch = time.time()
    child = start_child(cmd, log_path, env)
    try:
        watch = wait_for_outputs(client, output_topic, events, timeout_s=timeout_s, alive=child.alive)
    finally:
        child.finish(timeout_s=60, terminate=terminate_when_done)
    stats = read_stats_file(stats_path, timeout_s=2.0) or {}
    base = {
        "output_topic": output_topic,
        "child_exit_code": child.returncode,
        "child_cpu_s": child.cpu_s,
        **(extra or {}),
    }
    first = stats.get("first_consumed_at")
    if not watch.reached or first is None:
        reason = (
            f"only {watch.seen}/{events} outputs within {timeout_s:.0f}s"
            if not watch.reached
            else "the child never reported its first consumed record"
        )
        return result(
            system,
            workload,
            events,
            None,
            status="failed",
            reason=f"{reason}; exit code {child.returncode}; log tail:\n{child.log_tail()}",
            **base,
        )
    elapsed = watch.end_wall - first
    obj = result(
        system,
        workload,
        events,
        events / elapsed,
        elapsed_s=round(elapsed, 3),
        startup_s=round(first - t_launch, 3),
        cpu_s_per_1m_events=round(child.cpu_s / events * 1e6, 2) if child.cpu_s else None,
        child_stats={k: v for k, v in stats.items() if k != "first_consumed_at"},
        **base,
    )
    if verify:
        obj["verification"] = verify_counts(client, output_topic, events)
    return obj

"""The edge's per-record path without a broker: CPU seconds per 1M events of the count topology.

Drives a :class:`~edge.processor.task.StreamTask` directly with pre-serialized records held in memory
(the shared workload: JSON values over 10k keys), a null RecordCollector and a null ChangelogSink, so
the figure is exactly what the edge library costs per record -- deserialization, processors, store
stack (metered -> [cache] -> changelogging -> RocksDB), serialization -- and nothing of the Kafka
client. ``commit_prepare()`` runs every ``--commit-every`` records (what the runtime does once per
commit interval: ~1 s at ~50k records/s).

Configurations (each measured with ``time.process_time``, best of ``--rounds``):

* ``count-nocache`` -- the benchmark topology of ``benchmarks/systems/streamhouse_count.py``: count with
  caching disabled (one output per input), RocksDB + changelog, JSON output ``{"user", "count"}``;
* ``count-nocache-batch`` -- the same through ``StreamTask.process_batch`` (tuples);
* ``count-nocache-collapse`` -- the same with ``StreamsConfig(changelog_collapse=True)`` (changelog
  records collapsed per key until the commit: compare ``changelog_records``);
* ``count-cached`` -- the same with the record cache on (Kafka Streams' default; collapsed output);

and a breakdown of the per-record cost by component, each a stripped-down loop over the same input:

* ``raw-python``: orjson parse + dict count + orjson dump (what the raw confluent-kafka loop does);
* ``deserialize``: the source's key + value deserializers;
* ``stateless``: task + source + ``map_values`` + JSON sink (no store);
* ``store-get-put``: the count store's metered get + put (caching off, RocksDB + changelog).

Writes ``benchmarks/results/edge_hotpath.json``.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from benchmarks.common import DEFAULT_KEYS, generate_events, write_results
from edge.dsl import Consumed, Materialized, Produced, StreamsBuilder
from edge.processor import StreamsConfig
from edge.processor.task import StreamTask, task_id
from edge.serde import Serdes

TOPIC = "events"
OUT = "counts-out"


class NullCollector:
    """RecordCollector that drops records (counts them)."""

    __slots__ = ("sent",)

    def __init__(self) -> None:
        self.sent = 0

    def send(self, topic, key, value, timestamp, headers, partition=None) -> None:
        self.sent += 1

    def partitions_for(self, topic: str) -> int:
        return 1


class NullSink:
    """ChangelogSink that drops records (counts them)."""

    __slots__ = ("sent",)

    def __init__(self) -> None:
        self.sent = 0

    def send(self, topic, partition, key, value, timestamp) -> None:
        self.sent += 1


def count_topology(caching: bool):
    b = StreamsBuilder()
    m = Materialized.as_("counts")
    if not caching:
        m = m.with_caching_disabled()
    (
        b.stream(TOPIC, Consumed.with_(Serdes.string(), Serdes.json()))
        .group_by_key()
        .count(materialized=m)
        .to_stream()
        .map_values(lambda key, n: {"user": key, "count": n}, with_key=True)
        .to(OUT, Produced.with_(Serdes.string(), Serdes.json()))
    )
    return b.build()


def stateless_topology():
    b = StreamsBuilder()
    (
        b.stream(TOPIC, Consumed.with_(Serdes.string(), Serdes.json()))
        .map_values(lambda key, v: {"user": key, "count": 1}, with_key=True)
        .to(OUT, Produced.with_(Serdes.string(), Serdes.json()))
    )
    return b.build()


def make_task(topology, state_dir: Path, **settings: Any) -> tuple[StreamTask, NullCollector, NullSink]:
    config = StreamsConfig("bench-hotpath", state_dir=state_dir, **settings)
    st = next(iter(topology.subtopologies()))
    pt = topology.build_processor_topology(st.id, config)
    collector, sink = NullCollector(), NullSink()
    task = StreamTask(task_id(st.id, 0), pt, config, collector, sink, partition=0)
    task.initialize()
    return task, collector, sink


def _timed(fn) -> float:
    gc.collect()
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def run_task(
    events: list[tuple[bytes, bytes]],
    caching: bool,
    commit_every: int,
    batch: bool,
    profile: str | None,
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="edge-hotpath-"))
    try:
        task, collector, sink = make_task(count_topology(caching), tmp, **(settings or {}))
        n = len(events)

        def per_record() -> None:
            process = task.process
            punct = task.punctuate_stream_time
            commit = task.commit_prepare
            ts = 1_760_000_000_000
            for i, (k, v) in enumerate(events):
                process(TOPIC, 0, i, ts + i, k, v, None)
                punct()
                if (i + 1) % commit_every == 0:
                    commit()
            commit()

        def batched() -> None:
            commit = task.commit_prepare
            ts = 1_760_000_000_000
            for start in range(0, n, 1000):
                chunk = [
                    (TOPIC, 0, i, ts + i, events[i][0], events[i][1], None)
                    for i in range(start, min(start + 1000, n))
                ]
                task.process_batch(chunk)
                if (start + 1000) % commit_every == 0:
                    commit()
            commit()

        fn = batched if batch else per_record
        if profile:
            from pyinstrument import Profiler

            prof = Profiler(interval=0.0005)
            prof.start()
            cpu = _timed(fn)
            prof.stop()
            Path(profile).write_text(prof.output_text(unicode=False, color=False, show_all=False))
        else:
            cpu = _timed(fn)
        # verify: highest count per key adds up to N (checked through the store)
        store = task.stores["counts"]
        total = sum(vt[0] for _, vt in store.all())
        task.close()
        return {
            "cpu_s": cpu,
            "outputs": collector.sent,
            "changelog_records": sink.sent,
            "sum_of_counts": total,
            "correct": total == n,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_raw(events: list[tuple[bytes, bytes]]) -> float:
    def loop() -> None:
        loads, dumps = orjson.loads, orjson.dumps
        counts: dict[bytes, int] = {}
        for k, v in events:
            loads(v)
            c = counts.get(k, 0) + 1
            counts[k] = c
            dumps({"user": k.decode(), "count": c})

    return _timed(loop)


def run_deserialize(events: list[tuple[bytes, bytes]]) -> float:
    kde = Serdes.string().deserialize
    vde = Serdes.json().deserialize

    def loop() -> None:
        for k, v in events:
            kde(TOPIC, k)
            vde(TOPIC, v)

    return _timed(loop)


def run_stateless(events: list[tuple[bytes, bytes]]) -> float:
    tmp = Path(tempfile.mkdtemp(prefix="edge-hotpath-"))
    try:
        task, _, _ = make_task(stateless_topology(), tmp)

        def loop() -> None:
            process = task.process
            punct = task.punctuate_stream_time
            for i, (k, v) in enumerate(events):
                process(TOPIC, 0, i, i, k, v, None)
                punct()

        cpu = _timed(loop)
        task.close()
        return cpu
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_store(events: list[tuple[bytes, bytes]], commit_every: int) -> float:
    tmp = Path(tempfile.mkdtemp(prefix="edge-hotpath-"))
    try:
        task, _, _ = make_task(count_topology(False), tmp)
        store = task.stores["counts"]
        keys = [k.decode() for k, _ in events]
        from edge.serde import ValueAndTimestamp

        def loop() -> None:
            get, put = store.get, store.put
            for i, k in enumerate(keys):
                old = get(k)
                put(k, ValueAndTimestamp(1 if old is None else old[0] + 1, i), i)
                if (i + 1) % commit_every == 0:
                    store.flush()
            store.flush()

        cpu = _timed(loop)
        task.close()
        return cpu
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=DEFAULT_KEYS)
    ap.add_argument("--commit-every", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--profile", default=None, help="write a pyinstrument profile of count-nocache here")
    ap.add_argument("--quick", action="store_true", help="only count-nocache, one round")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)

    events = list(generate_events(a.events, a.keys))
    n = len(events)
    per_m = 1_000_000 / n
    results: list[dict[str, Any]] = []

    def report(name: str, cpu: float, **extra: Any) -> None:
        cpu_per_m = round(cpu * per_m, 3)
        print(f"{name:>22}: {cpu_per_m:7.3f} CPU-s per 1M events ({cpu / n * 1e6:.2f} us/record)")
        results.append(
            {
                "system": "streamhouse-edge",
                "workload": name,
                "events": n,
                "events_per_s": round(n / cpu) if cpu else None,
                "status": "ok",
                "cpu_s": round(cpu, 3),
                "cpu_s_per_1m_events": cpu_per_m,
                "commit_every": a.commit_every,
                **extra,
            }
        )

    configs: list[tuple[str, bool, bool, dict[str, Any]]] = [("count-nocache", False, False, {})]
    if not a.quick:
        if hasattr(StreamTask, "process_batch"):
            configs.append(("count-nocache-batch", False, True, {}))
        if hasattr(StreamsConfig, "changelog_collapse"):
            configs.append(("count-nocache-collapse", False, False, {"changelog_collapse": True}))
        configs.append(("count-cached", True, False, {}))
    rounds = 1 if a.quick else a.rounds
    for name, caching, batch, settings in configs:
        best: dict[str, Any] | None = None
        for r in range(rounds):
            prof = a.profile if (a.profile and name == "count-nocache" and r == 0) else None
            res = run_task(events, caching, a.commit_every, batch, prof, settings)
            if not res["correct"]:
                raise SystemExit(f"{name}: wrong counts {res}")
            if best is None or res["cpu_s"] < best["cpu_s"]:
                best = res
        assert best is not None
        cpu = best.pop("cpu_s")
        report(name, cpu, caching=caching, settings=settings, **best)
    if not a.quick:
        for name, fn in (
            ("raw-python", lambda: run_raw(events)),
            ("deserialize", lambda: run_deserialize(events)),
            ("stateless", lambda: run_stateless(events)),
            ("store-get-put", lambda: run_store(events, a.commit_every)),
        ):
            report("component:" + name, min(fn() for _ in range(rounds)))
    if not a.no_write:
        write_results("edge_hotpath", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

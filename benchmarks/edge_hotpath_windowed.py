"""The edge's per-record path for the windowed count and the joins, without a broker, against a raw loop.

Like ``benchmarks/edge_hotpath.py`` (whose null collector, null changelog sink and task set-up it
reuses), a :class:`~edge.processor.task.StreamTask` is driven directly with pre-serialized records held
in memory, its stores deferring writes to RocksDB until after each commit as the runtime's do, so the
figure is what the edge library costs per record and nothing of the Kafka client.
Each workload is the topology the broker benchmarks run (``benchmarks/systems/streamhouse_windowed.py``,
``streamhouse_count.py``) on the same generated input (``benchmarks/event_time.py``,
``benchmarks/common.py``), and is measured beside a raw Python loop doing the same work with dicts:

* ``windowed-count``: 1-minute tumbling count, caching off (one output per counted input) vs a dict of
  ``(key, window start)`` counts (the late records dropped by the same stream-time rule);
* ``windowed-count-cached``: the same with the record cache on (Kafka Streams' default);
* ``stream-table-join``: events LEFT JOIN a 10k-row table vs a dict lookup per event;
* ``stream-stream-join``: orders JOIN payments within +-5 minutes (grace 1 minute) vs per-key lists of
  both sides' records, each searched for the other side's matches.

``ratio`` is the raw loop's CPU time over the edge's (1.0: as fast as the raw loop), both measured in
the same process, best of ``--rounds``: on a shared machine the ratio is steadier than either figure.
Writes ``benchmarks/results/edge_hotpath_windowed.json``.
"""

from __future__ import annotations

import argparse
import heapq
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from benchmarks.common import DEFAULT_KEYS, event_key, generate_events, table_row, write_results
from benchmarks.edge_hotpath import _timed, make_task
from benchmarks.event_time import JOIN_DIFF_MS, WINDOW_MS, generate_join, generate_windowed

#: (topic, key, value, timestamp) records in the order the task processes them
Records = list[tuple[str, bytes, bytes, int]]


def windowed_topology(caching: bool) -> Any:
    from edge.dsl import Consumed, Materialized, Produced, StreamsBuilder
    from edge.dsl.windows import TimeWindows
    from edge.serde import Serdes

    store = Materialized.as_("wcounts")
    if not caching:
        store = store.with_caching_disabled()
    b = StreamsBuilder()
    (
        b.stream("events", Consumed.with_(Serdes.string(), Serdes.json()))
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(WINDOW_MS))
        .count(materialized=store)
        .to_stream()
        .map(lambda wk, n: (wk.key, {"user": wk.key, "start": wk.window.start, "count": n}))
        .to("out", Produced.with_(Serdes.string(), Serdes.json()))
    )
    return b.build()


def raw_windowed(records: Records) -> Callable[[], None]:
    def loop() -> None:
        loads, dumps = orjson.loads, orjson.dumps
        counts: dict[tuple[bytes, int], int] = {}
        stream_time = -1
        for _, k, v, ts in records:
            loads(v)
            if ts > stream_time:
                stream_time = ts
            start = ts - ts % WINDOW_MS
            if start + WINDOW_MS <= stream_time:  # late: its window closed
                continue
            c = counts.get((k, start), 0) + 1
            counts[(k, start)] = c
            dumps({"user": k.decode(), "start": start, "count": c})

    return loop


def table_records(keys: int) -> Records:
    return [("users", event_key(k), table_row(k), 0) for k in range(keys)]


def enrichment_topology() -> Any:
    from benchmarks.systems.streamhouse_count import build_enrichment_topology

    return build_enrichment_topology("events", "users", "out")


def raw_enrichment(table: Records, records: Records) -> Callable[[], None]:
    def loop() -> None:
        loads, dumps = orjson.loads, orjson.dumps
        users = {k: loads(v) for _, k, v, _ in table}
        for _, k, v, _ in records:
            e = loads(v)
            u = users.get(k)
            if u is None:
                dumps({**e, "tier": None, "region": None})
            else:
                dumps({**e, "tier": u["tier"], "region": u["region"]})

    return loop


def join_topology() -> Any:
    from benchmarks.systems.streamhouse_windowed import build_join_topology

    return build_join_topology("orders", "payments", "out")


def join_records(n: int) -> tuple[Records, int]:
    """Both sides merged in timestamp order (orders first on ties), and the expected number of joins."""
    orders, payments, joins = generate_join(n)
    merged = heapq.merge(
        (("orders", k, v, ts) for k, v, ts in orders),
        (("payments", k, v, ts) for k, v, ts in payments),
        key=lambda r: r[3],
    )
    return list(merged), int(joins.sum())


def raw_join(records: Records) -> Callable[[], None]:
    from benchmarks.systems.streamhouse_windowed import join_order_payment

    def loop() -> None:
        loads, dumps = orjson.loads, orjson.dumps
        sides: dict[str, dict[bytes, list[tuple[int, Any]]]] = {"orders": {}, "payments": {}}
        for topic, k, v, ts in records:
            value = loads(v)
            sides[topic].setdefault(k, []).append((ts, value))
            other = sides["payments" if topic == "orders" else "orders"].get(k, ())
            for ots, ov in other:
                if abs(ots - ts) <= JOIN_DIFF_MS:
                    o, p = (value, ov) if topic == "orders" else (ov, value)
                    dumps(join_order_payment(o, p))

    return loop


def edge_loop(
    topology: Any, records: Records, commit_every: int, tmp: Path, preload: Records = ()
) -> tuple[Callable[[], None], Any]:
    task, collector, _ = make_task(topology, tmp)
    task.defer_store_writes()  # as the runtime: stores reach RocksDB after each commit
    for i, (topic, k, v, ts) in enumerate(preload):
        task.process(topic, 0, i, ts, k, v, None)
    task.commit_prepare()
    task.persist_stores()
    offsets: dict[str, int] = {}

    def loop() -> None:
        process, punct = task.process, task.punctuate_stream_time
        commit, persist = task.commit_prepare, task.persist_stores
        for i, (topic, k, v, ts) in enumerate(records):
            off = offsets.get(topic, 0)
            offsets[topic] = off + 1
            process(topic, 0, off, ts, k, v, None)
            punct()
            if (i + 1) % commit_every == 0:
                commit()
                persist()
        commit()
        persist()

    return loop, (task, collector)


def measure(
    name: str, topology: Callable[[], Any], records: Records, raw: Callable[[], None], rounds: int,
    commit_every: int, preload: Records = (), expected_outputs: int | None = None, profile: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    best_edge, best_raw, outputs = float("inf"), float("inf"), None
    for r in range(rounds):
        best_raw = min(best_raw, _timed(raw))
        tmp = Path(tempfile.mkdtemp(prefix="edge-hotpath-w-"))
        try:
            loop, (task, collector) = edge_loop(topology(), records, commit_every, tmp, preload)
            if profile and r == 0:
                import cProfile

                prof = cProfile.Profile()
                prof.enable()
                cpu = _timed(loop)
                prof.disable()
                prof.dump_stats(f"{profile}.{name}.prof")
            else:
                cpu = _timed(loop)
            best_edge = min(best_edge, cpu)
            outputs = collector.sent
            task.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    n = len(records)
    res = {
        "system": "streamhouse-edge",
        "workload": name,
        "events": n,
        "status": "ok",
        "events_per_s": round(n / best_edge),
        "cpu_s_per_1m_events": round(best_edge * 1e6 / n, 3),
        "raw_events_per_s": round(n / best_raw),
        "raw_cpu_s_per_1m_events": round(best_raw * 1e6 / n, 3),
        "ratio": round(best_raw / best_edge, 3),
        "outputs": outputs,
    }
    if expected_outputs is not None:
        res["correct"] = outputs == expected_outputs
    edge_cpu, raw_cpu = res["cpu_s_per_1m_events"], res["raw_cpu_s_per_1m_events"]
    print(
        f"{name:>22}: edge {edge_cpu:6.3f} CPU-s/1M, raw {raw_cpu:6.3f} -> {res['ratio']:.3f}x raw"
        f"  (outputs {outputs})",
        flush=True,
    )
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=300_000)
    ap.add_argument("--keys", type=int, default=1_000, help="windowed count keys (10k for the table join)")
    ap.add_argument("--commit-every", type=int, default=20_000, help="records per commit (~1 s of input)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated workloads")
    ap.add_argument("--profile", default=None, help="write cProfile stats to PREFIX.<workload>.prof")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    only = set(filter(None, a.only.split(",")))
    want = lambda w: not only or w in only  # noqa: E731
    common = {"rounds": a.rounds, "commit_every": a.commit_every, "profile": a.profile}
    results = []
    if want("windowed-count") or want("windowed-count-cached"):
        wevents, truth = generate_windowed(a.events, a.keys)
        records = [("events", k, v, ts) for k, v, ts in wevents]
        expected = truth.outputs("partition", len(records))
        if want("windowed-count"):
            results.append(measure("windowed-count", lambda: windowed_topology(False), records,
                                   raw_windowed(records), expected_outputs=expected, **common))  # fmt: skip
        if want("windowed-count-cached"):
            results.append(measure("windowed-count-cached", lambda: windowed_topology(True), records,
                                   raw_windowed(records), **common))  # fmt: skip
    if want("stream-table-join"):
        table = table_records(DEFAULT_KEYS)
        records = [("events", k, v, 1) for k, v in generate_events(a.events, DEFAULT_KEYS)]
        raw = raw_enrichment(table, records)
        results.append(measure("stream-table-join", enrichment_topology, records, raw, preload=table,
                               expected_outputs=len(records), **common))  # fmt: skip
    if want("stream-stream-join"):
        records, joins = join_records(a.events)
        results.append(measure("stream-stream-join", join_topology, records, raw_join(records),
                               expected_outputs=joins, **common))  # fmt: skip
    for r in results:
        if r.get("correct") is False:
            raise SystemExit(f"{r['workload']}: wrong number of outputs {r['outputs']}")
    if not a.no_write:
        write_results("edge_hotpath_windowed", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

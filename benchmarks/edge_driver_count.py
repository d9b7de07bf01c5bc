"""Count topology in the TopologyTestDriver: the in-process baseline for the Kafka runtime benchmark.

Pipes pre-serialized events (the shared workload: JSON values over 10k keys) through
``stream -> group_by_key -> count -> to_stream -> to`` with no broker, so the figure is the cost of
our deserialization, processors, record cache, RocksDB store and changelog path per record. Two modes:

* ``batched`` -- commit every ``--commit-every`` records (what the runtime does per commit interval; the
  record cache collapses updates between commits);
* ``per-record`` -- commit after every record (Kafka's TopologyTestDriver semantics; cache flush per record).

A stateless pipeline (``filter -> map_values -> to`` on raw bytes) is measured too: the per-record cost
of the task, processor graph and driver without any store.

Writes ``benchmarks/results/edge_driver_count.json``.
"""

from __future__ import annotations

import argparse
import time

from benchmarks.common import DEFAULT_KEYS, generate_events, write_results
from edge.dsl import Consumed, Produced, StreamsBuilder
from edge.processor import StreamsConfig
from edge.serde import Serdes
from edge.testing import TopologyTestDriver


def count_topology():
    b = StreamsBuilder()
    (
        b.stream("events", Consumed.with_(Serdes.string(), Serdes.json()))
        .group_by_key()
        .count(materialized="counts")
        .to_stream()
        .to("counts-out", Produced.with_(Serdes.string(), Serdes.long()))
    )
    return b.build()


def stateless_topology():
    b = StreamsBuilder()
    b.stream("events").filter(lambda _k, v: v is not None).map_values(bytes.upper).to("out")
    return b.build()


def run_stateless(events: list[tuple[bytes, bytes]]) -> dict:
    with TopologyTestDriver(stateless_topology(), StreamsConfig("bench-driver-stateless")) as driver:
        pipe = driver.pipe_raw
        driver.auto_commit = False
        start = time.perf_counter()
        for key, value in events:
            pipe("events", key, value, 0)
        elapsed = time.perf_counter() - start
        assert driver.create_output_topic("out").get_queue_size() == len(events)
    rate = len(events) / elapsed
    print(
        f"{'stateless':>10}: {len(events):,} events in {elapsed:.2f}s = {rate:,.0f} events/s "
        f"({elapsed / len(events) * 1e6:.1f} us/record)"
    )
    return {
        "system": "edge-ttd-stateless",
        "workload": "filter-map_values-to",
        "events": len(events),
        "events_per_s": round(rate),
        "seconds": round(elapsed, 3),
    }


def run(events: list[tuple[bytes, bytes]], *, commit_every: int, label: str) -> dict:
    config = StreamsConfig("bench-driver-count")
    with TopologyTestDriver(count_topology(), config, auto_commit=False) as driver:
        pipe = driver.pipe_raw
        start = time.perf_counter()
        ts = 1_760_000_000_000
        for i, (key, value) in enumerate(events, 1):
            pipe("events", key, value, ts + i)
            if i % commit_every == 0:
                driver.commit()
        driver.commit()
        elapsed = time.perf_counter() - start
        counted = sum(v for _, v in driver.get_key_value_store("counts").all())
        outputs = driver.create_output_topic("counts-out").get_queue_size()
    assert counted == len(events), (counted, len(events))
    rate = len(events) / elapsed
    print(
        f"{label:>10}: {len(events):,} events in {elapsed:.2f}s = {rate:,.0f} events/s ({outputs:,} outputs)"
    )
    return {
        "system": f"edge-ttd-{label}",
        "workload": "count",
        "events": len(events),
        "events_per_s": round(rate),
        "seconds": round(elapsed, 3),
        "commit_every": commit_every,
        "output_records": outputs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=DEFAULT_KEYS)
    parser.add_argument("--commit-every", type=int, default=10_000)
    parser.add_argument("--per-record-events", type=int, default=20_000, help="events for per-record mode")
    args = parser.parse_args()
    events = list(generate_events(args.events, args.keys))
    results = [run_stateless(events), run(events, commit_every=args.commit_every, label="batched")]
    results.append(run(events[: args.per_record_events], commit_every=1, label="per-record"))
    path = write_results("edge_driver_count", results)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Kafka -> bronze Delta records/s: the bronze assets' own ingestion, exactly once, on the shared broker.

What is timed is ``assets.bronze.ingest.ingest_topic`` — the function every ``bronze/<topic>`` asset
runs: read the resume offsets from the table's app transactions, consume to partition EOF, and commit
each batch (Arrow -> Parquet -> one Delta commit carrying the batch's next offsets). No Spark is
involved. Before timing, one small ingest warms up pyarrow's compute kernels (about 1 s, paid once per
process) so that one-off cost is not billed to the figure.

Input: the run's shared JSON input topic (``ctx.input_topic``, the same events the edge systems read)
when there is one, otherwise a 4-partition topic of ``ctx.events`` events produced here. The output is
verified: the table holds exactly one row per (partition, offset) of the topic, none missing.
"""

from __future__ import annotations

import os
import resource
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.common import DEFAULT_EVENTS, DEFAULT_KEYS, prepare_input, result

if TYPE_CHECKING:
    from benchmarks.run_all import BenchContext

SYSTEM = "streamhouse-lakehouse"
WORKLOAD = "kafka-to-bronze"
BATCH_RECORDS = 250_000
WARMUP_EVENTS = 20_000


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _verify(table_uri: str, expected: int) -> dict[str, Any]:
    """Exactly once: one row per (partition, offset), contiguous offsets, as many as were produced.

    (The expected count is what was produced, not the broker's high watermark: Tansu can report a
    watermark a little behind right after a bulk produce.)
    """
    from assets.delta import read_arrow

    table = read_arrow(table_uri, columns=["partition", "offset"])
    rows = table.num_rows
    distinct = table.group_by(["partition", "offset"]).aggregate([]).num_rows
    per_partition = table.group_by("partition").aggregate(
        [("offset", "min"), ("offset", "max"), ("offset", "count")]
    )
    gaps = sum(
        1
        for lo, hi, n in zip(
            per_partition.column("offset_min").to_pylist(),
            per_partition.column("offset_max").to_pylist(),
            per_partition.column("offset_count").to_pylist(),
            strict=True,
        )
        if lo != 0 or hi - lo + 1 != n
    )
    correct = rows == expected and distinct == rows and gaps == 0
    return {"correct": correct, "rows": rows, "distinct_positions": distinct, "expected": expected,
            "partitions_with_gaps": gaps}  # fmt: skip


def ingest_once(
    client: Any, topic: str, table_uri: str, expected: int, batch_records: int = BATCH_RECORDS
) -> dict[str, Any]:
    """One timed ingest of ``topic`` (holding ``expected`` records) into a new table, verified."""
    from assets.bronze.ingest import ingest_topic

    cpu0, t0 = _cpu_s(), time.perf_counter()
    r = ingest_topic(client, topic, table_uri, batch_records=batch_records, show_progress=False)
    wall, cpu = time.perf_counter() - t0, _cpu_s() - cpu0
    return {
        "records": r.records,
        "seconds": round(wall, 3),
        "records_per_s": round(r.records / wall) if wall else None,
        "consume_s": round(r.consume_seconds, 3),
        "write_s": round(r.write_seconds, 3),
        "commits": sum(1 for c in r.commits if not c.skipped),
        "process_cpu_s_per_1m": round(cpu / r.records * 1e6, 2) if r.records else None,
        "verification": _verify(table_uri, expected),
    }


def bench(ctx: BenchContext) -> list[dict[str, Any]]:
    client = ctx.client
    topic = getattr(ctx, "input_topic", "") or ""
    events = getattr(ctx, "events", 0) or DEFAULT_EVENTS
    source = "the run's shared JSON input topic"
    if not topic:
        topic = f"bench-{ctx.run_id}-bronze"
        prepare_input(client, topic, events, getattr(ctx, "keys", 0) or DEFAULT_KEYS, partitions=4)
        source = "a 4-partition JSON topic produced for this benchmark"
    warm_topic = f"bench-{ctx.run_id}-bronze-warmup"
    prepare_input(client, warm_topic, WARMUP_EVENTS, 100)
    workdir = Path(getattr(ctx, "workdir", "") or tempfile.mkdtemp(prefix="bronze-bench-"))
    ingest_once(client, warm_topic, str(workdir / "bronze-warmup"), WARMUP_EVENTS)
    runs = [ingest_once(client, topic, str(workdir / f"bronze-{i}"), events) for i in range(2)]
    best = max(runs, key=lambda r: r["records_per_s"] or 0)
    correct = all(r["verification"]["correct"] for r in runs)
    return [
        result(
            SYSTEM,
            WORKLOAD,
            best["records"],
            best["records_per_s"] if correct else None,
            status="ok" if correct else "failed",
            reason="" if correct else f"bronze output wrong: {[r['verification'] for r in runs]}",
            runs=runs,
            verification={"correct": correct},
            input=source,
            topic=topic,
            batch_records=BATCH_RECORDS,
            method="ingest_topic (what each bronze asset runs) into a new Delta table; best of 2 runs, "
            "after a 20k-record warm-up; exactly-once checked per (partition, offset)",
            loadavg_1m=round(os.getloadavg()[0], 2),
        )
    ]

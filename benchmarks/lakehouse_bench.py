"""Lakehouse throughput: Kafka → bronze records/s, and silver + gold materialization time.

    .venv/bin/python benchmarks/lakehouse_bench.py --events 1000000 [--events 5000000]

For each size: sample events (orders + clicks + dimensions) are produced to an embedded broker, the
bronze assets' ingestion (``ingest_topic``, exactly-once commits) is timed per topic, then the
``daily_job`` (silver events + four gold tables) runs through Dagster in-process over all days.
Results go to ``benchmarks/results/lakehouse.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
warnings.filterwarnings("ignore")

from assets import sample_data  # noqa: E402
from assets.bronze.ingest import ingest_topic  # noqa: E402
from edge.broker import local_broker, profile_for  # noqa: E402
from edge.kafka import KafkaClientConfig  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "lakehouse.json"
CHUNK = 1_000_000
BATCH = int(os.environ.get("LAKEHOUSE_BENCH_BATCH", "250000"))


def _produce(client: KafkaClientConfig, events: int, prefix: str) -> tuple[int, float, float]:
    """Produce in 1M-event chunks (bounded memory); each chunk covers 3 later days."""
    gen_s = prod_s = 0.0
    total = 0
    for i, start in enumerate(range(0, events, CHUNK)):
        n = min(CHUNK, events - start)
        t0 = time.perf_counter()
        data = sample_data.generate(
            n,
            seed=100 + i,
            start=sample_data.DEFAULT_START + timedelta(days=3 * i),
            days=3,
            customers=500,
            id_prefix=f"c{i}-",
            include_dimensions=i == 0,
            late_ratio=0.01,
            invalid_ratio=0.001,
            duplicate_ratio=0.001,
        )
        t1 = time.perf_counter()
        sample_data.produce(client, data, prefix=prefix, create=i == 0)
        t2 = time.perf_counter()
        gen_s += t1 - t0
        prod_s += t2 - t1
        total += data.count()
        del data
    return total, gen_s, prod_s


def _warm_up(spark, client: KafkaClientConfig, workdir: Path) -> float:
    """One small ingest so JIT compilation of Spark's Parquet/JSON paths is not billed to a topic."""
    t0 = time.perf_counter()
    data = sample_data.generate(100_000, seed=1, id_prefix="warm-")
    sample_data.produce(client, data, prefix="warmup.")
    for topic in ("orders", "clicks"):
        ingest_topic(client, f"warmup.{topic}", str(workdir / "warm" / topic), show_progress=False)
    return time.perf_counter() - t0


def run(events: int, workdir: Path, spark, client: KafkaClientConfig, bronze_only: bool = False) -> dict:
    from dagster import DagsterInstance

    from assets.resources import ExistingSparkResource
    from orchestration.definitions import build_definitions
    from orchestration.pipeline import materializations, run_daily
    from orchestration.settings import Settings

    prefix = f"bench{events}."
    lake = workdir / f"lake{events}"
    records, gen_s, prod_s = _produce(client, events, prefix)
    print(
        f"[{events:,}] generated {records:,} records in {gen_s:.1f}s, produced in {prod_s:.1f}s", flush=True
    )

    bronze = {}
    dates: dict[str, list[str]] = {}
    t0 = time.perf_counter()
    for topic in sample_data.TOPICS:
        r = ingest_topic(
            client,
            prefix + topic,
            str(lake / "bronze" / topic),
            batch_records=BATCH,
            show_progress=False,
        )
        bronze[topic] = {
            "records": r.records,
            "seconds": round(r.seconds, 2),
            "consume_s": round(r.consume_seconds, 2),
            "write_s": round(r.write_seconds, 2),
            "records_per_s": round(r.records / r.seconds) if r.seconds else 0,
        }
        dates[topic] = sorted(r.event_dates)
        print(f"[{events:,}] bronze {topic}: {bronze[topic]}", flush=True)
    bronze_s = time.perf_counter() - t0
    bronze_total = sum(b["records"] for b in bronze.values())
    if bronze_only:
        print(f"[{events:,}] Kafka→bronze {bronze_total:,} records in {bronze_s:.1f}s", flush=True)
        return {"events": events, "bronze": bronze, "bronze_records_per_s": round(bronze_total / bronze_s)}

    settings = Settings(
        broker_profile=client.profile, bootstrap_servers=client.bootstrap_servers, lake_root=lake
    )
    defs = build_definitions(settings, topic_prefix=prefix, spark=ExistingSparkResource())
    instance = DagsterInstance.ephemeral()
    t1 = time.perf_counter()
    dims = defs.resolve_job_def("ingest_job").execute_in_process(
        instance=instance,
        asset_selection=[
            k
            for k in defs.resolve_job_def("ingest_job").asset_layer.executable_asset_keys
            if k.path[0] != "bronze"
        ],
    )
    dims_s = time.perf_counter() - t1
    assert dims.success
    from assets.partitions import affected_days

    days = affected_days(dates)
    t2 = time.perf_counter()
    results = run_daily(defs, days, instance)
    daily_s = time.perf_counter() - t2
    assert all(r.success for r in results)
    steps: dict[str, float] = {}
    for res in results:
        for ev in res.all_events:
            if ev.event_type_value == "STEP_SUCCESS":
                steps[ev.step_key] = round(
                    steps.get(ev.step_key, 0) + ev.event_specific_data.duration_ms / 1000, 2
                )
    rows = {k: v.get("rows_written") for res in results for k, v in materializations(res).items()}
    gold_s = sum(v for k, v in steps.items() if k.startswith("gold"))
    out = {
        "events": events,
        "records_produced": records,
        "generate_s": round(gen_s, 1),
        "produce_s": round(prod_s, 1),
        "produce_records_per_s": round(records / prod_s),
        "bronze": bronze,
        "bronze_total_s": round(bronze_s, 2),
        "bronze_records_per_s": round(bronze_total / bronze_s),
        "silver_dimensions_s": round(dims_s, 2),
        "days": len(days),
        "daily_job_s": round(daily_s, 2),
        "gold_materialization_s": round(gold_s, 2),
        "step_seconds": steps,
        "rows_written": rows,
    }
    print(
        f"[{events:,}] Kafka→bronze {bronze_total:,} records in {bronze_s:.1f}s = "
        f"{out['bronze_records_per_s']:,} rec/s; silver+gold {daily_s:.1f}s (gold steps {gold_s:.1f}s) "
        f"over {len(days)} days",
        flush=True,
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, action="append", help="events per run (repeatable)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--cold", action="store_true", help="no JVM warm-up before measuring")
    parser.add_argument("--bronze-only", action="store_true", help="measure Kafka → bronze only (no JSON)")
    args = parser.parse_args()
    sizes = args.events or [1_000_000]

    from assets.spark.session import build_spark_session

    spark = build_spark_session(
        args.master,
        app_name="lakehouse-bench",
        extra_conf={"spark.driver.memory": "4g", "spark.ui.showConsoleProgress": "false"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    results = []
    with tempfile.TemporaryDirectory(prefix="lakehouse-bench-") as tmp:
        workdir = Path(tmp)
        with local_broker(log_dir=workdir / "broker") as broker:
            client = KafkaClientConfig(broker.bootstrap_servers, profile_for(broker.kind))
            if not args.cold:
                warm_s = _warm_up(spark, client, workdir)
                print(f"JVM warm-up (not measured): {warm_s:.1f}s", flush=True)
            for events in sizes:
                results.append(run(events, workdir, spark, client, args.bronze_only))
    if args.bronze_only:
        return
    payload = {
        "benchmark": "lakehouse",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "spark_master": args.master},
        "note": "2 shared cores (other work running concurrently); embedded Tansu broker, local Spark; "
        + ("cold JVM" if args.cold else "after a 100k-event JVM warm-up"),
        "runs": results,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    existing = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    by_size = {r["events"]: r for r in existing.get("runs", [])}
    by_size.update({r["events"]: r for r in results})
    payload["runs"] = [by_size[k] for k in sorted(by_size)]
    RESULTS.write_text(json.dumps(payload, indent=2, default=str))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()

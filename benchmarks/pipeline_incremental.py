"""The IoT pipeline's incremental run after 1 % new data against a full run: declared, not the demo's.

    .venv/bin/python benchmarks/pipeline_incremental.py [--devices 200] [--days 30]

The pipeline is examples/iot, selected by STREAMHOUSE_PIPELINE as a deployment selects it; every step
is the code ``streamhouse demo --pipeline`` runs (``run_ingest``, the affected days derived from the
declaration, ``run_daily``), on one embedded broker, lake, Dagster instance and Spark session:

1. **full**: ``--devices`` devices reporting every few minutes for ``--days`` days, from scratch;
2. **overhead**: an ingest that finds nothing and a daily run of one day without data (the fixed cost
   of polling Kafka, rebuilding the change table, a Dagster run and its Delta commits);
3. **incremental**: 1 % more readings, all on the newest day, then ingest and the affected days only.

Reported: each run's wall seconds, and the *marginal* ratio ``(incremental - overhead) / (full -
overhead)``, the demo's measure (benchmarks/systems/lakehouse_incremental.py), whose target is 5 %.
Checked: silver holds every valid reading produced exactly once (the incremental run lost nothing and
added nothing twice). Writes benchmarks/results/pipeline_incremental.json.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["STREAMHOUSE_PIPELINE"] = str(ROOT / "examples" / "iot")
os.environ.setdefault("STREAMHOUSE_PARTITIONS_START", "2026-01-01")
warnings.filterwarnings("ignore")

from benchmarks.common import machine_info, write_results  # noqa: E402
from edge.broker import local_broker, profile_for  # noqa: E402
from edge.broker.local import broker_kind_from_env  # noqa: E402
from edge.kafka import KafkaClientConfig  # noqa: E402

TARGET = 0.05


def _produce(client: KafkaClientConfig, records: dict[str, list[tuple[bytes, bytes, int]]]) -> int:
    from confluent_kafka import Producer

    from benchmarks.common import bulk_producer_config
    from edge.kafka import TopicSpec, create_topics

    create_topics(client, [TopicSpec(t, 2) for t in records])
    producer = Producer(bulk_producer_config(client))
    sent = 0
    for topic, rows in records.items():
        for key, value, ts in rows:
            while True:
                try:
                    producer.produce(topic, value=value, key=key, timestamp=ts)
                    break
                except BufferError:
                    producer.poll(0.05)
            sent += 1
    if producer.flush(120):
        raise RuntimeError("sample readings not delivered")
    return sent


def _valid_ids(readings: list[tuple[bytes, bytes, int]]) -> set[str]:
    """The reading ids silver must hold: the readings the pipeline's expectations let through."""
    import json
    import re

    out = set()
    for _key, value, _ts in readings:
        r = json.loads(value)
        numbers = all(isinstance(r.get(f), int | float) for f in ("temperature", "humidity"))
        device = isinstance(r.get("device_id"), str) and re.fullmatch(r"dev-[0-9]+", r["device_id"])
        if numbers and device and -50 <= r["temperature"] <= 150 and isinstance(r.get("read_at"), str):
            out.add(r["reading_id"])
    return out


def _timed(work: object) -> tuple[object, float]:
    started = time.perf_counter()
    out = work()  # type: ignore[operator]
    return out, time.perf_counter() - started


def run(devices: int, days: int) -> dict:
    from dagster import DagsterInstance

    from assets.pipeline.active import active_pipeline
    from orchestration.definitions import build_definitions
    from orchestration.partitions import DAILY
    from orchestration.pipeline import QUIET_RUN_CONFIG, run_daily, run_ingest
    from orchestration.settings import Settings

    sys.path.insert(0, str(ROOT / "examples" / "iot"))
    iot = importlib.import_module("iot_data")
    pipeline = active_pipeline()
    workdir = Path(tempfile.mkdtemp(prefix="iot-incremental-"))
    kind = broker_kind_from_env()
    broker = local_broker(kind, log_dir=workdir / "broker", data_dir=workdir / "broker" / "data")
    broker.start()
    try:
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(kind))
        settings = Settings(
            broker_profile=client.profile,
            bootstrap_servers=client.bootstrap_servers,
            lake_root=workdir / "lake",
            pipeline=ROOT / "examples" / "iot",
        )
        defs = build_definitions(settings)
        instance = DagsterInstance.ephemeral()
        start = datetime(2026, 2, 1, tzinfo=UTC)
        full_sample = iot.sample(start, days=days, devices=devices, seed=1)
        produced = _produce(client, full_sample.records)

        def everything(new: bool = True) -> tuple[list[str], float]:
            ingest, ingest_s = _timed(lambda: run_ingest(defs, instance, run_config=QUIET_RUN_CONFIG))
            wanted = [d for d in ingest.affected_days if DAILY.has_partition_key(d)]  # type: ignore[attr-defined]
            runs, daily_s = _timed(lambda: run_daily(defs, wanted, instance, run_config=QUIET_RUN_CONFIG))
            assert all(r.success for r in runs) and ingest.result.success  # type: ignore[attr-defined]
            return wanted, ingest_s + daily_s

        full_days, full_s = everything()
        _, idle_ingest_s = everything()
        empty_day = (start - timedelta(days=20)).date().isoformat()
        _, empty_s = _timed(lambda: run_daily(defs, [empty_day], instance, run_config=QUIET_RUN_CONFIG))
        overhead_s = idle_ingest_s + empty_s
        # 1 % more readings, all on the newest day (new reading ids: another seed)
        newest = start + timedelta(days=days - 1)
        extra = iot.sample(newest, days=1, devices=devices, seed=2).records["readings"]
        share = max(1, len(full_sample.records["readings"]) // 100)
        new_records = _produce(client, {"readings": extra[:share]})
        inc_days, inc_s = everything()
        expected = _valid_ids([*full_sample.records["readings"], *extra[:share]])
        from deltalake import DeltaTable

        silver = DeltaTable(str(workdir / "lake" / "silver" / "readings")).to_pyarrow_table(
            columns=["reading_id"]
        )
        ids = silver.column("reading_id").to_pylist()
        assert len(ids) == len(set(ids)) == len(expected) and set(ids) == expected, (
            "silver lost or doubled rows"
        )
        return {
            "system": "streamhouse",
            "workload": "iot_incremental",
            "events": produced,
            "events_per_s": round(produced / full_s),
            "pipeline": pipeline.name,
            "devices": devices,
            "days": days,
            "full_s": round(full_s, 1),
            "full_days": len(full_days),
            "overhead_s": round(overhead_s, 1),
            "new_readings": new_records,
            "incremental_s": round(inc_s, 1),
            "incremental_days": inc_days,
            "marginal_ratio": round((inc_s - overhead_s) / (full_s - overhead_s), 4),
            "silver_rows": len(expected),
            "target": TARGET,
            "machine": machine_info(),
        }
    finally:
        broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--devices", type=int, default=200)
    parser.add_argument("--days", type=int, default=30)
    args = parser.parse_args()
    figures = run(args.devices, args.days)
    for key, value in figures.items():
        if key != "machine":
            print(f"{key:>18}: {value}")
    figures["target_met"] = figures["marginal_ratio"] <= TARGET
    print(f"{'target_met':>18}: {figures['target_met']}")
    print(f"results: {write_results('pipeline_incremental', [figures])}")


if __name__ == "__main__":
    main()

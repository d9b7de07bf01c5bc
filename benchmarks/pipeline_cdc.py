"""A declared change table at scale: N upserts, a share out of order, applied into SCD2 history.

    .venv/bin/python benchmarks/pipeline_cdc.py --changes 1000000 [--keys 100000] [--out-of-order 0.3]

The IoT example's ``devices`` change table (examples/iot/pipeline.yaml: keys device_id, sequence_by
changed_at, SCD2) is the pipeline under test, selected by STREAMHOUSE_PIPELINE as a deployment selects
it. ``--changes`` device changes (``--keys`` devices, versions one to a few hours apart) are produced to
an embedded broker with the given share moved out of sequence order and 1 % sent twice; bronze ingests
them (exactly once) and the ``silver/devices`` asset applies them through Dagster in-process. The
history is then recomputed from bronze in DuckDB (one row per device and changed_at, valid until the
next) and compared row for row. Prints the figures and writes benchmarks/results/pipeline_cdc.json.
"""

from __future__ import annotations

import argparse
import os
import random
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

import orjson  # noqa: E402

from benchmarks.common import machine_info, write_results  # noqa: E402
from edge.broker import local_broker, profile_for  # noqa: E402
from edge.broker.local import broker_kind_from_env  # noqa: E402
from edge.kafka import KafkaClientConfig  # noqa: E402

START = datetime(2026, 3, 1, tzinfo=UTC)
SITES = ["berlin", "lyon", "porto", "oslo"]


def changes(n: int, keys: int, out_of_order: float, seed: int = 3) -> list[tuple[bytes, bytes, int]]:
    """``n`` upserts over ``keys`` devices in sequence order, then a share moved to random positions."""
    rng = random.Random(seed)
    per_key = max(1, n // keys)
    out: list[tuple[bytes, bytes, int]] = []
    for k in range(keys):
        t = START + timedelta(minutes=rng.randint(0, 600))
        for _ in range(per_key if k < keys - 1 else n - per_key * (keys - 1)):
            body = {"device_id": f"dev-{k}", "site": rng.choice(SITES), "model": rng.choice(["th-1", "th-2"])}
            body["changed_at"] = t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
            out.append((f"dev-{k}".encode(), orjson.dumps(body), int(t.timestamp() * 1000)))
            t += timedelta(minutes=rng.randint(30, 300), milliseconds=rng.randint(0, 999))
    # Interleave the keys as a real feed does (sequence order per key), then move a share out of order.
    rng.shuffle(out)
    out.sort(key=lambda r: r[2])
    moved = rng.sample(range(len(out)), k=int(len(out) * out_of_order))
    picked = [out[i] for i in moved]
    for i in sorted(moved, reverse=True):
        del out[i]
    for record in picked:
        out.insert(rng.randrange(len(out) + 1), record)
    out += rng.sample(out, k=len(out) // 100)  # producer retries: the same change twice
    return out


def produce(client: KafkaClientConfig, topic: str, records: list[tuple[bytes, bytes, int]]) -> float:
    from confluent_kafka import Producer

    from benchmarks.common import bulk_producer_config
    from edge.kafka import TopicSpec, create_topics

    create_topics(client, [TopicSpec(topic, 1)])
    producer = Producer(bulk_producer_config(client))
    started = time.perf_counter()
    for key, value, ts in records:
        while True:
            try:
                producer.produce(topic, value=value, key=key, timestamp=ts)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120):
        raise RuntimeError(f"changes not delivered to {topic}")
    return time.perf_counter() - started


def duckdb_history(lake: Path) -> list[tuple]:
    import duckdb
    from deltalake import DeltaTable

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("b", DeltaTable(str(lake / "bronze" / "devices")).to_pyarrow_table(columns=["value"]))
    return con.sql("""
        SELECT device_id, changed_at, site, model,
               lead(changed_at) OVER (PARTITION BY device_id ORDER BY changed_at)
        FROM (SELECT DISTINCT json_extract_string(v, '$.device_id') AS device_id,
                     try_cast(json_extract_string(v, '$.changed_at') AS TIMESTAMPTZ)::TIMESTAMP AS changed_at,
                     json_extract_string(v, '$.site') AS site, json_extract_string(v, '$.model') AS model
              FROM (SELECT decode(value) AS v FROM b))
    """).fetchall()


def lake_history(lake: Path) -> list[tuple]:
    from deltalake import DeltaTable

    table = DeltaTable(str(lake / "silver" / "devices")).to_pyarrow_table(
        columns=["device_id", "changed_at", "site", "model", "valid_to"]
    )
    return [
        (r["device_id"], _naive(r["changed_at"]), r["site"], r["model"], _naive(r["valid_to"]))
        for r in table.to_pylist()
    ]


def _naive(t: datetime | None) -> datetime | None:
    return t.astimezone(UTC).replace(tzinfo=None) if t is not None and t.tzinfo else t


def start_spark(settings: object) -> float:
    """The session the run's PySpark resource gets (``getOrCreate``), started outside the timing."""
    from assets.spark.session import build_spark_session
    from orchestration.resources import spark_config_from_settings

    started = time.perf_counter()
    conf = dict(spark_config_from_settings(settings))
    master = conf.pop("spark.master", "local[*]")
    conf.pop("spark.app.name", None)
    build_spark_session(
        master,
        app_name="streamhouse",
        ui_enabled=False,
        extra_conf=conf,
        delta_jars_available=settings.native_delta(),  # type: ignore[attr-defined]
        delta_jars=settings.spark_delta_jars(),  # type: ignore[attr-defined]
    )
    return time.perf_counter() - started


def run(n: int, keys: int, out_of_order: float) -> dict:
    from dagster import AssetKey, DagsterInstance, materialize

    from assets.bronze.ingest import ingest_topic
    from orchestration.definitions import build_definitions
    from orchestration.settings import Settings

    workdir = Path(tempfile.mkdtemp(prefix="cdc-bench-"))
    kind = broker_kind_from_env()
    broker = local_broker(kind, log_dir=workdir / "broker", data_dir=workdir / "broker" / "data")
    broker.start()
    try:
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(kind))
        t0 = time.perf_counter()
        records = changes(n, keys, out_of_order)
        generate_s = time.perf_counter() - t0
        produce_s = produce(client, "devices", records)
        lake = workdir / "lake"
        t1 = time.perf_counter()
        ingested = ingest_topic(client, "devices", str(lake / "bronze" / "devices"), show_progress=False)
        bronze_s = time.perf_counter() - t1
        settings = Settings(
            broker_profile=client.profile,
            bootstrap_servers=client.bootstrap_servers,
            lake_root=lake,
            pipeline=Path(os.environ["STREAMHOUSE_PIPELINE"]),
        )
        defs = build_definitions(settings)
        silver = defs.resolve_assets_def(AssetKey(["silver", "devices"]))
        spark_s = start_spark(settings)  # before the clock: the run then reuses this session
        t2 = time.perf_counter()
        result = materialize([silver], instance=DagsterInstance.ephemeral())
        apply_s = time.perf_counter() - t2
        assert result.success
        t3 = time.perf_counter()
        expected = sorted(duckdb_history(lake), key=repr)
        duckdb_s = time.perf_counter() - t3
        actual = sorted(lake_history(lake), key=repr)
        return {
            "system": "streamhouse",
            "workload": "cdc_scd2_apply",
            "events": len(records),
            "events_per_s": round(len(records) / apply_s),
            "spark_start_s": round(spark_s, 2),
            "changes": n,
            "records_sent": len(records),
            "keys": keys,
            "out_of_order_share": out_of_order,
            "broker": kind.value,
            "ingested": getattr(ingested, "records", None),
            "generate_s": round(generate_s, 2),
            "produce_s": round(produce_s, 2),
            "bronze_s": round(bronze_s, 2),
            "silver_scd2_apply_s": round(apply_s, 2),
            "silver_changes_per_s": round(len(records) / apply_s),
            "duckdb_recompute_s": round(duckdb_s, 2),
            "history_rows": len(actual),
            "equal_to_duckdb": actual == expected,
            "machine": machine_info(),
        }
    finally:
        broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--out-of-order", type=float, default=0.3)
    args = parser.parse_args()
    figures = run(args.changes, args.keys, args.out_of_order)
    for key, value in figures.items():
        if key != "machine":
            print(f"{key:>24}: {value}")
    print(f"results: {write_results('pipeline_cdc', [figures])}")
    if not figures["equal_to_duckdb"]:
        sys.exit(1)


if __name__ == "__main__":
    main()

"""The end-to-end demo: broker → topic → consumer group → Spark → Delta → read back three ways.

Each step prints what it did; the closing table is the summary a person reads. Later issues grow this
into the full edge + Dagster pipeline; the shape (one function per step, one summary) stays.
"""

from __future__ import annotations

import contextlib
import time
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field

import orjson
from confluent_kafka import Consumer, KafkaError, Producer
from rich.console import Console
from rich.table import Table

from edge.broker import EmbeddedBroker
from edge.kafka import BrokerProfile, KafkaClientConfig, TopicSpec, create_topics
from orchestration.settings import Settings

console = Console()

PRODUCTS = ["espresso", "latte", "mocha", "tea", "scone", "bagel", "muffin", "juice"]


@dataclass
class DemoSummary:
    rows: list[tuple[str, str]] = field(default_factory=list)

    def add(self, step: str, result: str) -> None:
        self.rows.append((step, result))
        console.print(f"[green]✓[/green] {step}: {result}")


@contextlib.contextmanager
def _kafka(settings: Settings, keep_broker: bool) -> Iterator[KafkaClientConfig]:
    if settings.broker_profile is BrokerProfile.REAL or settings.bootstrap_servers:
        yield settings.kafka_client()
        return
    if keep_broker:
        from edge.broker.embedded import ensure_recorded_broker

        info, _ = ensure_recorded_broker(settings.state_dir)
        yield settings.kafka_client(info.bootstrap_servers)
        return
    with EmbeddedBroker(log_dir=settings.state_dir / "broker") as broker:
        yield settings.kafka_client(broker.bootstrap_servers)


def _order(i: int, base_ms: int) -> dict[str, object]:
    return {
        "order_id": f"o-{i}",
        "customer_id": f"c-{i % 97}",
        "product": PRODUCTS[i % len(PRODUCTS)],
        "quantity": 1 + i % 4,
        "price": round(2.5 + (i % 13) * 0.75, 2),
        "ts": base_ms + i * 250,
    }


def produce_orders(client: KafkaClientConfig, topic: str, events: int) -> float:
    producer = Producer(client.producer(**{"linger.ms": 5}))
    base_ms = int(time.time() * 1000) - events * 250
    started = time.perf_counter()
    for i in range(events):
        order = _order(i, base_ms)
        while True:
            try:
                producer.produce(topic, key=str(order["customer_id"]).encode(), value=orjson.dumps(order))
                break
            except BufferError:
                producer.poll(0.05)
    remaining = producer.flush(30)
    if remaining:
        raise RuntimeError(f"{remaining} demo records were not acknowledged by {client.bootstrap_servers}")
    return time.perf_counter() - started


def consume_orders(client: KafkaClientConfig, topic: str, partitions: int, group: str) -> list[dict]:
    consumer = Consumer(
        client.consumer(group, **{"auto.offset.reset": "earliest", "enable.partition.eof": True})
    )
    consumer.subscribe([topic])
    rows: list[dict] = []
    at_eof: set[int] = set()
    deadline = time.monotonic() + 120
    try:
        while len(at_eof) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"did not reach the end of {topic} within 120s")
            for msg in consumer.consume(1000, 0.2):
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        at_eof.add(msg.partition())
                        continue
                    raise RuntimeError(f"consume error on {topic}[{msg.partition()}]: {msg.error()}")
                at_eof.discard(msg.partition())
                row = orjson.loads(msg.value())
                row.update(partition=msg.partition(), offset=msg.offset())
                rows.append(row)
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return rows


def run_demo(settings: Settings, *, events: int = 20_000, keep_broker: bool = False) -> DemoSummary:
    summary = DemoSummary()
    run_id = uuid.uuid4().hex[:8]
    topic = f"demo.orders.{run_id}"
    partitions = 4
    with _kafka(settings, keep_broker) as client:
        summary.add("Kafka", f"{client.profile.value} broker at {client.bootstrap_servers}")
        create_topics(client, [TopicSpec(topic, partitions)])
        seconds = produce_orders(client, topic, events)
        summary.add("Produce", f"{events:,} orders to {topic} ({events / seconds:,.0f}/s)")
        rows = consume_orders(client, topic, partitions, group=f"demo-{run_id}")
        summary.add("Consume", f"{len(rows):,} orders read back by consumer group demo-{run_id}")
        if len(rows) != events:
            raise RuntimeError(f"produced {events} but consumed {len(rows)} from {topic}")
    _lakehouse_round_trip(settings, rows, run_id, summary)
    table = Table(title="Streamhouse demo")
    table.add_column("step")
    table.add_column("result")
    for step, result in summary.rows:
        table.add_row(step, result)
    console.print(table)
    return summary


def _lakehouse_round_trip(settings: Settings, rows: list[dict], run_id: str, summary: DemoSummary) -> None:
    import duckdb
    from pyspark.sql import functions as F

    from assets.delta import duckdb_relation, read_arrow, read_spark, write_delta
    from assets.spark.session import build_spark_session

    with warnings.catch_warnings():
        # pyspark warns that pandas 3 is "not fully supported"; the demo does not use pandas-on-Spark.
        warnings.simplefilter("ignore", FutureWarning)
        spark = build_spark_session(
            settings.spark_master, app_name="streamhouse-demo", extra_conf=settings.spark_conf
        )
    spark.sparkContext.setLogLevel("ERROR")
    table_uri = str(settings.lake_root / "demo" / f"orders_{run_id}")
    df = (
        spark.createDataFrame(rows)
        .withColumn("event_time", (F.col("ts") / 1000).cast("timestamp"))
        .withColumn("event_date", F.to_date("event_time"))
    )
    started = time.perf_counter()
    result = write_delta(
        df,
        table_uri,
        mode="append",
        partition_by=["event_date"],
        commit_metadata={"operation": "demo", "run_id": run_id},
    )
    summary.add(
        "Delta write",
        f"version {result.version}, {result.rows_written:,} rows, "
        f"{result.files_added} files in {time.perf_counter() - started:.1f}s → {table_uri}",
    )
    spark_rows = read_spark(spark, table_uri).count()
    arrow_rows = read_arrow(table_uri).num_rows
    con = duckdb.connect()
    revenue = (
        duckdb_relation(con, table_uri)
        .aggregate("product, round(sum(quantity * price), 2) AS revenue")
        .order("revenue DESC")
        .fetchall()
    )
    duck_rows = duckdb_relation(con, table_uri).count("*").fetchall()[0][0]
    if not spark_rows == arrow_rows == duck_rows == len(rows):
        raise RuntimeError(
            f"read-back mismatch on {table_uri}: spark={spark_rows} arrow={arrow_rows} duckdb={duck_rows}"
        )
    summary.add("Read back", f"{spark_rows:,} rows each from Spark, deltalake (Arrow) and DuckDB")
    top = ", ".join(f"{p} {r:,.2f}" for p, r in revenue[:3])
    summary.add("Top revenue", top)

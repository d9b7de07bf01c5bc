"""The end-to-end demo: sample events → Kafka → edge app + Dagster lakehouse → one summary.

Steps: an embedded broker (or the configured cluster); ``run_main_job`` produces orders, customers,
products and clicks and materializes bronze → silver → gold through Dagster; the edge app
``examples.revenue`` runs over the same orders topic and its live revenue-per-product store is read
over HTTP (interactive queries), beside the same figure from the gold table in DuckDB.

Topics get a per-run prefix: the embedded broker keeps data in memory only, so a new run's topics
restart at offset 0, and bronze (which resumes from the offsets stored in its Delta commits) must not
mistake them for the old ones.
"""

from __future__ import annotations

import contextlib
import json
import time
import urllib.request
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, TopicPartition
from rich.console import Console
from rich.table import Table

from edge.broker import BrokerKind, local_broker
from edge.kafka import BrokerProfile, KafkaClientConfig
from edge.kafka.admin import topic_partitions
from orchestration.settings import Settings

console = Console()


@dataclass
class DemoSummary:
    rows: list[tuple[str, str]] = field(default_factory=list)

    def add(self, step: str, result: str) -> None:
        self.rows.append((step, result))
        console.print(f"[green]✓[/green] {step}: {result}")


@contextlib.contextmanager
def _kafka(settings: Settings, keep_broker: bool) -> Iterator[KafkaClientConfig]:
    remote = settings.broker_profile is BrokerProfile.REAL and settings.broker_kind is BrokerKind.TANSU
    if remote or settings.bootstrap_servers:
        yield settings.kafka_client()
        return
    if keep_broker:
        from edge.broker.embedded import ensure_recorded_broker

        info, _ = ensure_recorded_broker(settings.state_dir, kind=settings.broker_kind.value)
        yield settings.kafka_client(info.bootstrap_servers)
        return
    # broker_kind: tansu (default) or kafka; Apache Kafka gets a temporary data dir removed afterwards.
    with local_broker(
        settings.broker_kind, log_dir=settings.state_dir / "broker", state_dir=settings.state_dir
    ) as broker:
        yield settings.kafka_client(broker.bootstrap_servers)


def count_records(client: KafkaClientConfig, topic: str) -> int:
    """Records in ``topic``, by reading every partition to EOF (the embedded broker's watermarks lie)."""
    from confluent_kafka.admin import AdminClient

    partitions = topic_partitions(AdminClient(client.admin()), topic) or 0
    consumer = Consumer(
        client.consumer(
            f"count-{uuid.uuid4().hex}", **{"enable.partition.eof": True, "enable.auto.commit": False}
        )
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    total, at_eof, deadline = 0, set(), time.monotonic() + 120
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
                total += 1
    finally:
        consumer.close()
    return total


def run_edge_revenue(
    settings: Settings,
    client: KafkaClientConfig,
    orders_topic: str,
    output: str,
    run_id: str,
    summary: DemoSummary,
) -> dict[str, float]:
    """Run examples.revenue in-process until it has read every order; return its store via HTTP."""
    from edge.runtime import StreamsApp
    from examples.revenue import STORE, topology

    expected = count_records(client, orders_topic)
    app = StreamsApp(
        topology(orders_topic, output),
        {
            "application.id": f"demo-revenue-{run_id}",
            "bootstrap.servers": client.bootstrap_servers,
            "broker.profile": client.profile.value,
            "kafka": dict(client.extra),
            "state.dir": str(settings.state_dir / "streams"),
            "application.server": "127.0.0.1:0",
            "commit.interval.ms": 500,
            "default.deserialization.exception.handler": "continue",
        },
    )
    started = time.perf_counter()
    app.start()
    try:
        if not app.wait_until_running(90):
            raise RuntimeError(f"the edge app did not reach RUNNING (state {app.state.name})")
        # Sub-topology 0 reads every order; the valid ones pass the repartition topic into sub-topology 1.
        # Caught up = at least every order processed, then no progress for 1.5 s (three commit intervals).
        deadline = time.monotonic() + 180
        last, still_since = -1, time.monotonic()
        while time.monotonic() < deadline:
            n = app.stats.records_processed
            if n != last:
                last, still_since = n, time.monotonic()
            elif n >= expected and time.monotonic() - still_since > 1.5:
                break
            time.sleep(0.1)
        else:
            raise TimeoutError(f"the edge app processed {last} records; expected at least {expected}")
        with urllib.request.urlopen(
            f"http://{app.advertised_server}/v1/stores/{STORE}/all?limit=1000"
        ) as resp:
            body = json.loads(resp.read())
        revenue = {entry["key"]: float(entry["value"]) for entry in body["entries"]}
        summary.add(
            "Edge app",
            f"examples.revenue read {expected:,} orders in {time.perf_counter() - started:.1f}s; "
            f"store {STORE!r} holds {len(revenue)} products, queried at http://{app.advertised_server}",
        )
        return revenue
    finally:
        app.close(30)


def run_edge_sessions(
    settings: Settings,
    client: KafkaClientConfig,
    clicks_topic: str,
    output: str,
    run_id: str,
    summary: DemoSummary,
) -> tuple[set[tuple[str, int, int, int, int]], int]:
    """Run examples.click_sessions in-process over every click; return its sessions (from the session
    store, over HTTP) and how many final sessions it emitted (sessions whose window had closed)."""
    from edge.kafka import TopicSpec, create_topics
    from edge.runtime import StreamsApp
    from examples.click_sessions import STORE, topology

    expected = count_records(client, clicks_topic)
    create_topics(client, [TopicSpec(output, 4)])
    app = StreamsApp(
        topology(clicks_topic, output),
        {
            "application.id": f"demo-sessions-{run_id}",
            "bootstrap.servers": client.bootstrap_servers,
            "broker.profile": client.profile.value,
            "kafka": dict(client.extra),
            "state.dir": str(settings.state_dir / "streams"),
            "application.server": "127.0.0.1:0",
            "commit.interval.ms": 500,
            "default.deserialization.exception.handler": "continue",
        },
    )
    started = time.perf_counter()
    app.start()
    try:
        if not app.wait_until_running(90):
            raise RuntimeError(f"the sessions app did not reach RUNNING (state {app.state.name})")
        _wait_caught_up(app, expected, "examples.click_sessions")
        with urllib.request.urlopen(
            f"http://{app.advertised_server}/v1/stores/{STORE}/all?limit=1000000"
        ) as resp:
            body = json.loads(resp.read())
        sessions = {
            (
                e["key"],
                e["window"]["start"],
                e["window"]["end"],
                len(e["value"]["events"]),
                len(e["value"]["pages"]),
            )
            for e in body["entries"]
        }
    finally:
        app.close(30)
    final = count_records(client, output)
    summary.add(
        "Edge sessions",
        f"examples.click_sessions read {expected:,} clicks in {time.perf_counter() - started:.1f}s: "
        f"{len(sessions):,} sessions in store {STORE!r}, {final:,} final results emitted to {output} "
        f"(windows closed; the rest are still open at the end of the data)",
    )
    return sessions, final


def _wait_caught_up(app: object, expected: int, what: str) -> None:
    """At least every input processed, then no progress for 1.5 s (three commit intervals)."""
    deadline = time.monotonic() + 180
    last, still_since = -1, time.monotonic()
    while time.monotonic() < deadline:
        n = app.stats.records_processed  # type: ignore[attr-defined]
        if n != last:
            last, still_since = n, time.monotonic()
        elif n >= expected and time.monotonic() - still_since > 1.5:
            return
        time.sleep(0.1)
    raise TimeoutError(f"{what} processed {last} records; expected at least {expected}")


def gold_sessions(settings: Settings) -> set[tuple[str, int, int, int, int]]:
    """``gold/click_sessions`` as (user, start ms, end ms, clicks, pages), the edge's shape."""
    import duckdb

    from assets.delta import duckdb_relation

    con = duckdb.connect()
    rel = duckdb_relation(con, str(settings.lake_root / "gold" / "click_sessions"))
    rows = rel.project("user_id, epoch_ms(session_start), epoch_ms(session_end), clicks, pages").fetchall()
    return {(u, int(s), int(e), int(c), int(p)) for u, s, e, c, p in rows}


def _ingest_edge_output(
    settings: Settings, client: KafkaClientConfig, prefix: str, spark: object, summary: DemoSummary
) -> None:
    """Run the ingest job again: only the edge app's new output records are new to bronze."""
    from dagster import DagsterInstance

    from assets.sample_data import EDGE_REVENUE
    from orchestration.definitions import build_definitions
    from orchestration.pipeline import QUIET_RUN_CONFIG, run_ingest

    defs = build_definitions(
        settings, bootstrap_servers=client.bootstrap_servers, topic_prefix=prefix, spark=spark
    )
    ingest = run_ingest(defs, DagsterInstance.ephemeral(), run_config=QUIET_RUN_CONFIG)
    others = sum(n for topic, n in ingest.records.items() if topic != EDGE_REVENUE)
    summary.add(
        "Bronze, edge output",
        f"{ingest.records.get(EDGE_REVENUE, 0):,} records of {prefix}{EDGE_REVENUE} → bronze/{EDGE_REVENUE} "
        f"({others} new raw records: the rerun resumed exactly where the first stopped)",
    )


def gold_revenue(settings: Settings) -> dict[str, float]:
    import duckdb

    from assets.delta import duckdb_relation

    con = duckdb.connect()
    rel = duckdb_relation(con, str(settings.lake_root / "gold" / "revenue_tumbling_5m"))
    cols = set(rel.columns)
    value = "revenue" if "revenue" in cols else next(c for c in rel.columns if "revenue" in c)
    rows = rel.aggregate(f"product_id, sum({value}) AS revenue").fetchall()
    return {product: float(total) for product, total in rows}


def _quiet_spark(settings: Settings) -> object:
    """The demo's Spark session, with Spark's own WARN chatter and progress bars off (the summary speaks)."""
    from assets.spark.session import build_spark_session

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        spark = build_spark_session(
            settings.spark_master,
            app_name="streamhouse-demo",
            extra_conf={"spark.ui.showConsoleProgress": "false", **settings.spark_conf},
            delta_jars_available=settings.native_delta(),
            delta_jars=settings.spark_delta_jars(),
        )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_demo(
    settings: Settings, *, events: int = 20_000, keep_broker: bool = False, spark: object = None
) -> DemoSummary:
    from assets import sample_data
    from orchestration.pipeline import run_main_job
    from orchestration.resources import ExistingSparkResource

    summary = DemoSummary()
    if spark is None:
        _quiet_spark(settings)  # started here so its logging is quiet; the assets pick it up
        spark = ExistingSparkResource()
    run_id = uuid.uuid4().hex[:8]
    prefix = f"demo-{run_id}."
    with _kafka(settings, keep_broker) as client:
        summary.add("Kafka", f"{client.profile.value} broker at {client.bootstrap_servers}, topics {prefix}*")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            rows = run_main_job(
                settings,
                bootstrap_servers=client.bootstrap_servers,
                events=events,
                topic_prefix=prefix,
                spark=spark,
            )
        for step, result in rows:
            summary.add(step, result)
        edge = run_edge_revenue(
            settings,
            client,
            f"{prefix}{sample_data.ORDERS}",
            f"{prefix}{sample_data.EDGE_REVENUE}",
            run_id,
            summary,
        )
        sessions, _ = run_edge_sessions(
            settings,
            client,
            f"{prefix}{sample_data.CLICKS}",
            f"{prefix}edge_click_sessions",
            run_id,
            summary,
        )
        _ingest_edge_output(settings, client, prefix, spark, summary)
    gold_session_rows = gold_sessions(settings)
    edge_clicks, gold_clicks = sum(r[3] for r in sessions), sum(r[3] for r in gold_session_rows)
    if gold_clicks != edge_clicks:
        summary.add(
            "Sessions, edge vs gold",
            f"not compared: gold/click_sessions holds {gold_clicks:,} clicks from every demo run in "
            f"{settings.lake_root}, the edge saw this run's {edge_clicks:,}; a fresh lake compares them",
        )
    elif sessions != gold_session_rows:
        only_edge, only_gold = sorted(sessions - gold_session_rows), sorted(gold_session_rows - sessions)
        raise RuntimeError(
            f"the edge's sessions differ from gold/click_sessions: {len(only_edge)} only in the edge "
            f"(e.g. {only_edge[:3]}), {len(only_gold)} only in gold (e.g. {only_gold[:3]})"
        )
    else:
        summary.add(
            "Sessions, edge = gold",
            f"all {len(sessions):,} sessions agree (user, start, end, clicks, pages): Kafka Streams' "
            f"session windows at the edge and Spark in gold apply the same 30-minute inclusive gap",
        )
    gold = gold_revenue(settings)
    top = sorted(edge, key=edge.__getitem__, reverse=True)[:3]
    summary.add("Revenue, live (edge store)", "; ".join(f"{p} {edge[p]:,.2f}" for p in top))
    summary.add(
        "Revenue, gold (every run in this lake)", "; ".join(f"{p} {gold.get(p, 0.0):,.2f}" for p in top)
    )
    table = Table(title="Streamhouse demo")
    table.add_column("step")
    table.add_column("result")
    for step, result in summary.rows:
        table.add_row(step, result)
    console.print(table)
    console.print(
        f"Delta tables under {settings.lake_root}; open the Dagster UI with `make dagster` to see the assets."
    )
    return summary

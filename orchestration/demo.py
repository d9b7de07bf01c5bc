"""The end-to-end demo: sample events → Kafka → Dagster lakehouse + edge apps → one summary, in the UI.

The demo works on the project's own things so that ``make dagster`` afterwards shows it: the recorded
local broker (started if none runs, and left running), unprefixed topics, the lake under ``lake_root``
and the Dagster instance in ``dagster_home``. Its runs, materializations, checks and plots are then in
the UI, and an ingest launched there finds the topics.

Steps, each printed as it starts and ends: produce three days of sample events ending last midnight
(so they land in the most recent daily partitions), ``ingest_job`` (Kafka → bronze, exactly once),
``daily_job`` for the affected days (silver, quarantine, gold), the edge apps ``revenue`` and
``sessions`` (application ids from ``assets.edge_apps``) over the same topics, a second ingest that
picks up only the edge output, and the comparisons edge vs gold.

Running it again adds a new batch: bronze resumes from the offsets in its Delta commits, the edge
apps resume from their consumer groups. Only when the lake has read further into a topic than the
topic holds (a memory-only Tansu broker was restarted, Kafka's data dir was deleted, a topic was
recreated) do the lake and the topics disagree. The demo then stops before changing anything, with
one line naming the topic, partition and offsets it found and what ``--reset`` would delete
(``reset_targets``); it never deletes on its own, since the lake and the history in the Dagster
instance may be all that is left of the data. ``--reset`` starts over on what it owns (``reset_demo``:
the lake's tables, their history in the Dagster instance, the edge apps' local state).
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
from datetime import date
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition
from rich.console import Console
from rich.table import Table

from edge.broker import BrokerKind
from edge.errors import StreamhouseError
from edge.kafka import BrokerProfile, KafkaClientConfig
from edge.kafka.admin import topic_partitions
from edge.paths import check_application_id, remove_tree_inside, remove_trees_inside
from orchestration.settings import Settings

console = Console(highlight=False)

#: The lake layers the demo writes (and ``reset_demo`` removes): every table of the pipeline.
LAYERS = ("bronze", "silver", "quarantine", "gold")
#: Days of sample data, ending last midnight (UTC).
DAYS = 3
#: Shares of the deliberately bad records in the demo's batch (see the summary's explanation).
LATE_RATIO, INVALID_RATIO, DUPLICATE_RATIO = 0.01, 0.002, 0.002


class DemoError(StreamhouseError):
    """The demo cannot go on as asked; the message says what to do (``--reset``, a broker, ...)."""


@dataclass
class TableRows:
    """A lake table's rows written by this demo run beside the rows it holds now: after a second run (or
    ``streamhouse generate``) the two differ, and one "rows" figure could not say which it is."""

    name: str
    #: the table's version now
    version: int | None
    #: rows this run wrote (bronze: records appended; silver/gold: rows of the days it replaced)
    run_rows: int
    #: rows in the table now (None: the Delta log does not count them)
    total_rows: int | None

    def describe(self) -> str:
        total = "?" if self.total_rows is None else f"{self.total_rows:,}"
        return f"version {self.version}, {self.run_rows:,} rows this run, {total} in the table"


@dataclass
class DemoSummary:
    rows: list[tuple[str, str]] = field(default_factory=list)
    #: the lake's tables, this run's rows and the totals (printed as their own table)
    tables: list[TableRows] = field(default_factory=list)

    def add(self, step: str, result: str) -> None:
        self.rows.append((step, result))
        console.print(f"[green]✓[/green] {step}: {result}")

    def add_tables(self, tables: list[TableRows]) -> None:
        """The tables' rows, also as summary rows (``dict(summary.rows)["silver/orders"]``), not printed
        one by one: ``_print`` shows them in their own table."""
        self.tables = tables
        self.rows += [(t.name, t.describe()) for t in tables]


class RunProgress:
    """Prints what an in-process Dagster run is doing while it runs, from the run's events (``on_event``
    of ``run_ingest``/``run_daily``): the runs log at WARNING only, so without this a step of a minute
    (``ingest_job``: the silver dimension tables' first Spark jobs) printed nothing until it ended.

    Printed: the bronze assets' progress lines (records so far, records/s; ``IngestProgress``) and each
    other step that took ``min_step_s`` or more, with its time. On a terminal a transient status line
    names the step running now."""

    def __init__(self, job: str, out: Console | None = None, min_step_s: float = 1.0) -> None:
        self.job = job
        self.out = out or console
        self.min_step_s = min_step_s
        self._started: dict[str, float] = {}
        self._status: Any = None

    def __enter__(self) -> RunProgress:
        if self.out.is_terminal:
            self._status = self.out.status(f"{self.job}: starting", spinner="dots")
            self._status.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.stop()

    def __call__(self, event: Any) -> None:
        from assets.bronze.ingest import PROGRESS_PREFIX

        step = event.step_key
        if not event.is_dagster_event:
            message = event.user_message or ""
            if message.startswith(PROGRESS_PREFIX):
                self.out.print(f"    {message[len(PROGRESS_PREFIX) :]}")
            return
        kind = event.dagster_event.event_type_value
        if step is None:
            return
        if kind == "STEP_START":
            self._started[step] = event.timestamp
            if self._status is not None:
                self._status.update(f"{self.job}: {step}")
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE"):
            seconds = event.timestamp - self._started.pop(step, event.timestamp)
            failed = kind == "STEP_FAILURE"
            if failed or (seconds >= self.min_step_s and not step.startswith("bronze__")):
                self.out.print(f"    {step}: {seconds:.1f}s{' [red](failed)[/red]' if failed else ''}")


@contextlib.contextmanager
def step(title: str) -> Iterator[None]:
    """Say what is starting (the long steps are silent otherwise) and how long it took."""
    console.print(f"[cyan]…[/cyan] {title}")
    started = time.perf_counter()
    yield
    console.print(f"  [dim]{title}: {time.perf_counter() - started:.1f}s[/dim]")


@dataclass
class KafkaUse:
    client: KafkaClientConfig
    #: "configured" (bootstrap_servers / a real cluster), "recorded" (the local broker, reused) or
    #: "started" (the local broker, started now and recorded)
    origin: str
    kind: str = BrokerKind.TANSU.value


@contextlib.contextmanager
def _kafka(settings: Settings, stop_broker: bool) -> Iterator[KafkaUse]:
    """The configured cluster, else the recorded local broker (started and recorded if none runs).

    The local broker is left running (unless ``stop_broker``), recorded as ``streamhouse broker start``
    records it, so ``make dagster`` and the CLI find the demo's topics.
    """
    remote = settings.broker_profile is BrokerProfile.REAL and settings.broker_kind is BrokerKind.TANSU
    if remote or settings.bootstrap_servers:
        yield KafkaUse(settings.kafka_client(), "configured", "configured")
        return
    from edge.broker.embedded import ensure_recorded_broker, stop_recorded_broker

    info, started = ensure_recorded_broker(settings.state_dir, kind=settings.broker_kind.value)
    if started and (warning := settings.broker_fallback_warning()):
        console.print(warning, style="yellow", markup=False)
    try:
        yield KafkaUse(
            settings.kafka_client(info.bootstrap_servers), "started" if started else "recorded", info.kind
        )
    finally:
        if stop_broker:
            stop_recorded_broker(settings.state_dir)
            console.print(f"stopped the local broker at {info.bootstrap_servers} (--stop-broker)")


def read_to_end(
    client: KafkaClientConfig, topic: str, start: dict[int, int] | None = None
) -> tuple[int, dict[int, int]] | None:
    """(records from ``start`` offsets to the end, next offset per partition), or None if ``topic`` is
    missing. Reads every partition to EOF: the embedded broker's watermarks are not reliable."""
    from confluent_kafka.admin import AdminClient

    partitions = topic_partitions(AdminClient(client.admin()), topic)
    if partitions is None:
        return None
    start = start or {}
    consumer = Consumer(
        client.consumer(
            f"count-{uuid.uuid4().hex}", **{"enable.partition.eof": True, "enable.auto.commit": False}
        )
    )
    consumer.assign([TopicPartition(topic, p, max(0, start.get(p, 0))) for p in range(partitions)])
    ends = {p: max(0, start.get(p, 0)) for p in range(partitions)}
    total, at_eof, deadline = 0, set(), time.monotonic() + 120
    try:
        while len(at_eof) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"did not reach the end of {topic} within 120s")
            for msg in consumer.consume(1000, 0.2):
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        at_eof.add(msg.partition())
                        ends[msg.partition()] = max(ends[msg.partition()], msg.offset())
                        continue
                    if msg.error().code() == KafkaError._AUTO_OFFSET_RESET:
                        # the start offset is past the partition's end: nothing new there
                        at_eof.add(msg.partition())
                        continue
                    raise RuntimeError(f"consume error on {topic}[{msg.partition()}]: {msg.error()}")
                total += 1
                ends[msg.partition()] = msg.offset() + 1
    finally:
        consumer.close()
    return total, ends


def count_records(client: KafkaClientConfig, topic: str) -> int:
    """Records in ``topic`` (0 if it does not exist)."""
    read = read_to_end(client, topic)
    return read[0] if read else 0


def group_offsets(client: KafkaClientConfig, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The consumer group's committed offset per partition (partitions it never committed left out)."""
    consumer = Consumer(client.consumer(group, **{"enable.auto.commit": False}))
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in tps if tp.offset >= 0}


def stale_topics(settings: Settings, client: KafkaClientConfig, prefix: str) -> list[str]:
    """Topics that bronze has read further than they reach: the broker lost them (a restarted
    memory-only broker) or they were recreated. Ingesting them again would skip or misplace records."""
    from assets.bronze.assets import BRONZE_TOPICS
    from assets.bronze.ingest import committed_offsets

    stale: list[str] = []
    for topic in BRONZE_TOPICS:
        committed = committed_offsets(str(settings.lake_root / "bronze" / topic), f"{prefix}{topic}")
        if not any(committed.values()):
            continue
        read = read_to_end(client, f"{prefix}{topic}")
        if read is None:
            stale.append(f"{prefix}{topic} (missing; bronze read {sum(committed.values()):,} records)")
            continue
        _, ends = read
        behind = [p for p, offset in committed.items() if offset > ends.get(p, 0)]
        if behind:
            p = behind[0]
            stale.append(
                f"{prefix}{topic} (partition {p} ends at {ends.get(p, 0)}, bronze read to {committed[p]})"
            )
    return stale


def reset_targets(settings: Settings, instance: Any, prefix: str) -> str:
    """What ``reset_demo`` would delete now, in one phrase (for the refusal that names ``--reset``)."""
    from dagster import AssetKey

    from assets.edge_apps import EDGE_APPS

    parts: list[str] = []
    tables = [name for name in (*LAYERS, "_plots") if (settings.lake_root / name).exists()]
    if tables:
        parts.append(f"{', '.join(tables)} under {settings.lake_root}")
    keys = [k for k in instance.all_asset_keys() if isinstance(k, AssetKey) and k.path[0] in LAYERS]
    if keys:
        parts.append(f"the history of {len(keys)} assets in {settings.dagster_home}")
    for app in EDGE_APPS:
        path = settings.state_dir / "streams" / f"{prefix}{app.application_id}"
        if path.exists():
            parts.append(str(path))
    return ", ".join(parts) or "nothing yet"


def reset_demo(settings: Settings, instance: Any, prefix: str) -> list[str]:
    """Start over on what the demo owns: the lake's tables and plots, their materialization history in
    the Dagster instance (runs stay, so the UI keeps the record), and the edge apps' local state."""
    from dagster import AssetKey

    from assets.edge_apps import EDGE_APPS

    lake_dirs = [settings.lake_root / name for name in (*LAYERS, "_plots")]
    removed = [str(p) for p in remove_trees_inside(lake_dirs, settings.lake_root, what="the demo's tables")]
    keys = [k for k in instance.all_asset_keys() if isinstance(k, AssetKey) and k.path[0] in LAYERS]
    if keys:
        instance.wipe_assets(keys)
        removed.append(f"the history of {len(keys)} assets in {settings.dagster_home}")
    for app in EDGE_APPS:
        app_id = check_application_id(f"{prefix}{app.application_id}")
        path = settings.state_dir / "streams" / app_id
        if remove_tree_inside(path, settings.state_dir / "streams", what=f"the state of {app_id!r}"):
            removed.append(str(path))
    return removed


def wait_caught_up(app: Any, expected: int, what: str) -> None:
    """At least every new input processed, then no progress for 1.5 s (three commit intervals)."""
    deadline = time.monotonic() + 180
    last, still_since = -1, time.monotonic()
    while time.monotonic() < deadline:
        n = app.stats.records_processed
        if n != last:
            last, still_since = n, time.monotonic()
        elif n >= expected and time.monotonic() - still_since > 1.5:
            return
        time.sleep(0.1)
    raise TimeoutError(f"{what} processed {last} records; expected at least {expected}")


def _pending(client: KafkaClientConfig, group: str, topic: str) -> int:
    """Records of ``topic`` the group has not committed yet (what the app will read this run)."""
    read = read_to_end(client, topic)
    if read is None:
        return 0
    _, ends = read
    committed = group_offsets(client, group, topic, len(ends))
    again = read_to_end(client, topic, committed)
    return again[0] if again else 0


def _start_app(settings: Settings, client: KafkaClientConfig, topology: Any, application_id: str) -> Any:
    from edge.runtime import StreamsApp

    app = StreamsApp(
        topology,
        {
            "application.id": application_id,
            "bootstrap.servers": client.bootstrap_servers,
            "broker.profile": client.profile.value,
            "kafka": dict(client.extra),
            "state.dir": str(settings.state_dir / "streams"),
            "application.server": "127.0.0.1:0",
            "commit.interval.ms": 500,
            "default.deserialization.exception.handler": "continue",
        },
    )
    app.start()
    if not app.wait_until_running(90):
        app.close(30)
        raise RuntimeError(f"edge app {application_id} did not reach RUNNING (state {app.state.name})")
    return app


def _store(app: Any, store: str) -> list[dict[str, Any]]:
    """Every entry of ``store``, through the app's interactive-query HTTP server."""
    with urllib.request.urlopen(f"http://{app.advertised_server}/v1/stores/{store}/all?limit=10000000") as r:
        return list(json.loads(r.read())["entries"])


def run_edge_revenue(
    settings: Settings, client: KafkaClientConfig, prefix: str, summary: DemoSummary
) -> dict[str, float]:
    """The ``revenue`` edge app over the orders until caught up; its store read over HTTP."""
    from assets.edge_apps import edge_app
    from assets.sample_data import EDGE_REVENUE, ORDERS
    from examples.revenue import STORE, topology

    application_id = f"{prefix}{edge_app('revenue').application_id}"
    orders = f"{prefix}{ORDERS}"
    expected = _pending(client, application_id, orders)
    started = time.perf_counter()
    app = _start_app(settings, client, topology(orders, f"{prefix}{EDGE_REVENUE}"), application_id)
    try:
        wait_caught_up(app, expected, application_id)
        revenue = {e["key"]: float(e["value"]) for e in _store(app, STORE)}
        server = app.advertised_server
    finally:
        app.close(30)
    summary.add(
        "Edge app revenue",
        f"examples.revenue (application.id {application_id}) read {expected:,} new orders in "
        f"{time.perf_counter() - started:.1f}s; store {STORE!r} holds {len(revenue)} products, "
        f"queried at http://{server}",
    )
    return revenue


def run_edge_sessions(
    settings: Settings, client: KafkaClientConfig, prefix: str, summary: DemoSummary
) -> set[tuple[str, int, int, int, int]]:
    """The ``sessions`` edge app over the clicks until caught up; its sessions (user, start, end,
    clicks, pages) from the session store over HTTP."""
    from assets.edge_apps import edge_app
    from assets.sample_data import CLICKS
    from edge.kafka import TopicSpec, create_topics
    from examples.click_sessions import STORE, topology

    application_id = f"{prefix}{edge_app('sessions').application_id}"
    clicks, output = f"{prefix}{CLICKS}", f"{prefix}edge_click_sessions"
    expected = _pending(client, application_id, clicks)
    create_topics(client, [TopicSpec(output, 4)])
    started = time.perf_counter()
    app = _start_app(settings, client, topology(clicks, output), application_id)
    try:
        wait_caught_up(app, expected, application_id)
        sessions = {
            (
                e["key"],
                e["window"]["start"],
                e["window"]["end"],
                len(e["value"]["events"]),
                len(e["value"]["pages"]),
            )
            for e in _store(app, STORE)
        }
    finally:
        app.close(30)
    final = count_records(client, output)
    summary.add(
        "Edge app sessions",
        f"examples.click_sessions (application.id {application_id}) read {expected:,} new clicks in "
        f"{time.perf_counter() - started:.1f}s: {len(sessions):,} sessions in store {STORE!r}, "
        f"{final:,} final results in {output} (closed windows; the latest are still open)",
    )
    return sessions


def gold_sessions(settings: Settings) -> set[tuple[str, int, int, int, int]]:
    """``gold/click_sessions`` as (user, start ms, end ms, clicks, pages), the edge's shape."""
    import duckdb

    from assets.delta import duckdb_relation

    con = duckdb.connect()
    rel = duckdb_relation(con, str(settings.lake_root / "gold" / "click_sessions"))
    rows = rel.project("user_id, epoch_ms(session_start), epoch_ms(session_end), clicks, pages").fetchall()
    return {(u, int(s), int(e), int(c), int(p)) for u, s, e, c, p in rows}


def gold_revenue(settings: Settings) -> dict[str, float]:
    """Revenue per product over every window of ``gold/revenue_tumbling_5m``."""
    import duckdb

    from assets.delta import duckdb_relation

    con = duckdb.connect()
    rel = duckdb_relation(con, str(settings.lake_root / "gold" / "revenue_tumbling_5m"))
    value = "revenue" if "revenue" in rel.columns else next(c for c in rel.columns if "revenue" in c)
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


def open_instance(dagster_home: Path) -> Any:
    """The project's Dagster instance (what ``make dagster`` opens with DAGSTER_HOME=dagster_home)."""
    from dagster import DagsterInstance

    from orchestration.instance import ensure_instance_dir

    ensure_instance_dir(dagster_home)  # with a dagster.yaml: no warning, no telemetry banner
    return DagsterInstance.from_config(str(dagster_home))


def run_demo(
    settings: Settings,
    *,
    events: int = 20_000,
    spark: object = None,
    topic_prefix: str = "",
    instance: Any = None,
    reset: bool = False,
    stop_broker: bool = False,
    today: date | None = None,
) -> DemoSummary:
    """Run the demo; returns the summary rows (also printed). Tests pass a ``topic_prefix`` (the shared
    broker), a tmp ``dagster_home``/lake in ``settings`` and a fixed ``today`` (deterministic dates)."""
    from assets import sample_data
    from orchestration.definitions import build_definitions
    from orchestration.partitions import DAILY
    from orchestration.pipeline import QUIET_RUN_CONFIG, bronze_summary, daily_summary, run_daily, run_ingest
    from orchestration.resources import ExistingSparkResource

    summary = DemoSummary()
    own_instance = instance is None
    instance = instance if instance is not None else open_instance(settings.dagster_home)
    where = settings.dagster_home if own_instance else "the given instance"
    try:
        with _kafka(settings, stop_broker) as kafka:
            client = kafka.client
            broker = {
                "configured": "the configured cluster",
                "recorded": f"the recorded local {kafka.kind} broker (reused)",
                "started": f"a local {kafka.kind} broker, started and recorded (left running)",
            }[kafka.origin]
            summary.add(
                "Kafka", f"{broker} at {client.bootstrap_servers}, topics {topic_prefix or '(no prefix)'}*"
            )
            with step("checking the lake against the topics"):
                stale = stale_topics(settings, client, topic_prefix)
            if stale and not reset:
                # Never delete on our own: the lake and the instance's history may be all that is left.
                raise DemoError(
                    f"the lake at {settings.lake_root} has read further than the topics at "
                    f"{client.bootstrap_servers} hold: {'; '.join(stale)}; the broker lost or recreated "
                    "them, so nothing was changed. `streamhouse demo --reset` starts over from the topics "
                    f"(deleting {reset_targets(settings, instance, topic_prefix)})"
                )
            if reset:
                removed = reset_demo(settings, instance, topic_prefix)
                summary.add("Reset", f"--reset: starting over; removed {', '.join(removed) or 'nothing'}")

            if spark is None:
                with step("starting Spark"):
                    _quiet_spark(settings)  # started here so its logging is quiet; the runs pick it up
                spark = ExistingSparkResource()
            defs = build_definitions(
                settings, bootstrap_servers=client.bootstrap_servers, topic_prefix=topic_prefix, spark=spark
            )
            start = sample_data.recent_start(DAYS, today)
            with step(f"producing {events:,} sample events over {DAYS} days from {start.date()}"):
                started = time.perf_counter()
                data = sample_data.generate(
                    events,
                    start=start,
                    days=DAYS,
                    id_prefix=f"{uuid.uuid4().hex[:6]}-",
                    late_ratio=LATE_RATIO,
                    invalid_ratio=INVALID_RATIO,
                    duplicate_ratio=DUPLICATE_RATIO,
                )
                counts = sample_data.produce(client, data, prefix=topic_prefix)
            summary.add(
                "Produce",
                f"{sum(counts.values()):,} records to {', '.join(counts)} "
                f"in {time.perf_counter() - started:.1f}s",
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                with (
                    step("ingest_job: Kafka → bronze (and the silver dimension tables)"),
                    RunProgress("ingest_job") as progress,
                ):
                    ingest = run_ingest(defs, instance, run_config=QUIET_RUN_CONFIG, on_event=progress)
                summary.add("Bronze", bronze_summary(ingest, settings.lake_root / "bronze"))
                written = rows_written([ingest.result])
                # A daily partition exists once its day is over: today's (sessions reach D+1) is not one yet.
                days = [d for d in ingest.affected_days if DAILY.has_partition_key(d)]
                with step(f"daily_job: silver, quarantine and gold for {len(days)} day(s)"):
                    started = time.perf_counter()
                    with RunProgress("daily_job") as progress:
                        results = run_daily(
                            defs, days, instance, run_config=QUIET_RUN_CONFIG, on_event=progress
                        )
                # the tables' rows go to the summary's table of this run vs the totals (lake_tables)
                rows = daily_summary(days, results, time.perf_counter() - started)
                summary.add(*rows[0])
                written = rows_written(results, written)
            with step("edge app revenue (examples.revenue) over the orders"):
                edge = run_edge_revenue(settings, client, topic_prefix, summary)
            with step("edge app sessions (examples.click_sessions) over the clicks"):
                sessions = run_edge_sessions(settings, client, topic_prefix, summary)
            with step("ingest_job again: only the edge output is new"), RunProgress("ingest_job") as progress:
                again = run_ingest(defs, instance, run_config=QUIET_RUN_CONFIG, on_event=progress)
            written = rows_written([again.result], written)
            others = sum(n for t, n in again.records.items() if t != sample_data.EDGE_REVENUE)
            summary.add(
                "Bronze, edge output",
                f"{again.records.get(sample_data.EDGE_REVENUE, 0):,} records of {topic_prefix}"
                f"{sample_data.EDGE_REVENUE} → bronze/{sample_data.EDGE_REVENUE} ({others} new raw "
                "records: the rerun resumed exactly where the first stopped)",
            )
    finally:
        if own_instance:
            instance.dispose()
    _compare(settings, summary, edge, sessions, data)
    summary.add_tables(lake_tables(settings.lake_root, written))
    _print(summary, settings, where, kafka)
    return summary


def _compare(
    settings: Settings,
    summary: DemoSummary,
    edge: dict[str, float],
    sessions: set[tuple[str, int, int, int, int]],
    data: Any,
) -> None:
    from assets.sample_data import CLICKS, ORDERS

    gold_rows = gold_sessions(settings)
    edge_clicks, gold_clicks = sum(r[3] for r in sessions), sum(r[3] for r in gold_rows)
    if gold_clicks != edge_clicks:
        summary.add(
            "Sessions, edge vs gold",
            f"not compared: gold/click_sessions holds {gold_clicks:,} clicks, the edge app {edge_clicks:,} "
            "(the lake and the topics hold different data, e.g. after an ingest outside the demo)",
        )
    elif sessions != gold_rows:
        only_edge, only_gold = sorted(sessions - gold_rows), sorted(gold_rows - sessions)
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
    summary.add("Revenue, gold (lake)", "; ".join(f"{p} {gold.get(p, 0.0):,.2f}" for p in top))
    orders, clicks = data.injected.get(ORDERS, {}), data.injected.get(CLICKS, {})
    summary.add(
        "Bad records (on purpose)",
        f"{orders.get('invalid', 0)} orders and {clicks.get('invalid', 0)} clicks malformed, "
        f"{orders.get('duplicate', 0) + clicks.get('duplicate', 0)} duplicated, "
        f"{orders.get('late', 0)} orders late",
    )


def rows_written(results: list[Any], into: dict[str, int] | None = None) -> dict[str, int]:
    """Rows each table got from these runs, by ``layer/table`` (the last two parts of the table's
    ``table_uri``: an asset's key can differ, ``quarantine/orders_quarantine`` writes
    ``quarantine/orders``), added to ``into``: bronze's ``records``, the others' ``rows_written``."""
    from orchestration.pipeline import materializations

    out = dict(into or {})
    for result in results:
        for meta in materializations(result).values():
            uri = str(meta.get("table_uri") or "")
            rows = meta.get("records", meta.get("rows_written"))
            if not uri or rows is None:
                continue
            name = "/".join(uri.rstrip("/").split("/")[-2:])
            out[name] = out.get(name, 0) + int(rows)
    return out


def lake_tables(lake_root: Path, written: dict[str, int]) -> list[TableRows]:
    """Every table of the lake: its version and rows now (the Delta log's counts), and the rows this run
    wrote (``written``, by ``layer/table``; 0 for a table it did not write)."""
    from assets.lake.catalog import list_tables

    out = []
    for info in list_tables(lake_root):
        name = f"{info.layer}/{info.name.split('.', 1)[1]}"
        out.append(TableRows(name, info.version, written.get(name, 0), info.rows))
    return out


def tables_table(tables: list[TableRows]) -> Table:
    """This run's rows and the tables' totals side by side, so a rerun's figures read right."""
    table = Table(title="Lake tables: this run and in total")
    table.add_column("table")
    table.add_column("version", justify="right")
    table.add_column("rows this run", justify="right")
    table.add_column("rows in the table", justify="right")
    for t in tables:
        total = "?" if t.total_rows is None else f"{t.total_rows:,}"
        table.add_row(t.name, str(t.version), f"{t.run_rows:,}" if t.run_rows else "-", total)
    return table


def _print(summary: DemoSummary, settings: Settings, where: object, kafka: KafkaUse) -> None:
    table = Table(title="Streamhouse demo")
    table.add_column("step")
    table.add_column("result")
    in_tables = {t.name for t in summary.tables}
    for name, result in summary.rows:
        if name not in in_tables:
            table.add_row(name, result)
    console.print(table)
    if summary.tables:
        console.print(tables_table(summary.tables))
    console.print(
        "[bold]Revenue, edge vs gold.[/bold] The edge app sums quantity * unit_price of every order it reads "
        "that passes its own filter (a product, a positive int quantity, a non-negative price), live, as "
        "records arrive: producer-retry duplicates count twice and an order missing its customer counts. "
        "Gold sums silver's orders in 5-minute windows: deduplicated by order_id, every malformed order "
        "quarantined, late orders placed in their own day. The two differ by those few records "
        "(well under 1%)."
    )
    console.print(
        "[bold]Malformed records.[/bold] The sample data mixes in broken JSON, orders and clicks missing "
        "their customer/user, quantities of 'many' or -1, negative prices and unparseable event times, plus "
        "exact duplicates and orders 6 h late. Silver sends each malformed record to quarantine/<topic> "
        "with the reason (see the checks in the UI), drops the duplicates, and late orders re-open their day."
    )
    servers = kafka.client.bootstrap_servers
    broker = (
        f"The local broker keeps running at {servers} (stop it with `streamhouse broker stop`; the embedded "
        "one forgets its topics, and the next demo then starts the lake over)."
        if kafka.origin != "configured"
        else f"Kafka: {servers}."
    )
    console.print(
        f"[bold]See it in the Dagster UI:[/bold] `make dagster`, then open http://127.0.0.1:3000 "
        f"(Runs: this demo's runs; Lineage: topics → edge apps → bronze → silver → gold, with checks and "
        f"plots). Instance {where}, tables under {settings.lake_root}. {broker} More events: "
        "`streamhouse generate --events 1000 --rate 50`."
    )

"""The lineage graph as users meet it in the Dagster UI: topics → edge apps → output topics → bronze →
silver → gold with kinds and owners, quarantine nodes named apart from their tables, declarative
automation on the daily assets (evaluated for real against a Dagster instance), and an edge app and
its input topic observed while the app runs against the real broker."""

from __future__ import annotations

import json
import time
import uuid
import warnings

import pytest
from confluent_kafka import Producer
from dagster import (
    AssetKey,
    AssetMaterialization,
    AssetSelection,
    DagsterInstance,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    MetadataValue,
    build_sensor_context,
    define_asset_job,
    evaluate_automation_conditions,
)

from assets.edge_apps.assets import build_edge_app_asset
from assets.edge_apps.registry import EDGE_APPS, EdgeApp
from assets.kafka.assets import KAFKA_TOPICS, build_topic_asset
from assets.kafka.keys import edge_app_key, topic_key
from assets.owners import OWNERS
from assets.partitions import affected_days
from assets.resources import KafkaResource
from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from orchestration.sensors import build_edge_observer_sensor

warnings.filterwarnings("ignore", message=".*is currently in beta.*")

DAILY_KEYS = [
    AssetKey(["silver", "orders"]),
    AssetKey(["silver", "clicks"]),
    AssetKey(["quarantine", "orders_quarantine"]),
    AssetKey(["quarantine", "clicks_quarantine"]),
    AssetKey(["gold", "revenue_tumbling_5m"]),
    AssetKey(["gold", "revenue_hopping_10m"]),
    AssetKey(["gold", "click_sessions"]),
    AssetKey(["gold", "orders_enriched"]),
]


@pytest.fixture(scope="module")
def defs() -> Definitions:
    from orchestration.definitions import defs

    return defs


def _upstream(graph, key: AssetKey) -> set[AssetKey]:
    seen: set[AssetKey] = set()
    todo = [key]
    while todo:
        for parent in graph.get(todo.pop()).parent_keys:
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return seen


def test_one_graph_from_topics_through_edge_apps_to_gold(defs: Definitions) -> None:
    graph = defs.resolve_asset_graph()
    keys = set(graph.get_all_asset_keys())
    topics = {"orders", "clicks", "customers", "products", "edge_revenue_by_product", "edge_click_sessions"}
    assert topics <= set(KAFKA_TOPICS)
    assert {topic_key(t) for t in KAFKA_TOPICS} <= keys
    for app in EDGE_APPS:
        node = graph.get(edge_app_key(app.application_id))
        assert node.is_observable and not node.is_materializable
        assert set(node.parent_keys) == {topic_key(t) for t in app.input_topics}
        for out in app.output_topics:
            assert edge_app_key(app.application_id) in graph.get(topic_key(out)).parent_keys
    revenue = edge_app_key("revenue")
    assert graph.get(AssetKey(["bronze", "edge_revenue_by_product"])).parent_keys == {
        topic_key("edge_revenue_by_product")
    }
    assert {topic_key("orders"), revenue} <= _upstream(graph, AssetKey(["bronze", "edge_revenue_by_product"]))
    assert {topic_key("orders"), AssetKey(["bronze", "orders"]), AssetKey(["silver", "orders"])} <= _upstream(
        graph, AssetKey(["gold", "revenue_tumbling_5m"])
    )
    assert topic_key("clicks") in _upstream(graph, AssetKey(["gold", "click_sessions"]))


def test_kinds_owners_and_quarantine_names(defs: Definitions) -> None:
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert list(node.owners) == OWNERS, key
        layer = key.path[0]
        expected = {
            "kafka": {"kafka"},
            "edge": {"kafka", "python"},
            "bronze": {"kafka", "delta"},
            "silver": {"spark", "delta"},
            "quarantine": {"spark", "delta"},
            "gold": {"spark", "delta"},
            "maintenance": {"delta"},
        }[layer]
        assert expected <= set(node.kinds), key
        if layer in ("kafka", "edge"):
            assert node.is_observable, key
    silver_names = {k.path[-1] for k in graph.get_all_asset_keys() if k.path[0] == "silver"}
    quarantine = {k for k in graph.get_all_asset_keys() if k.path[0] == "quarantine"}
    assert {k.path[-1] for k in quarantine} == {f"{t}_quarantine" for t in silver_names}
    assert not {k.path[-1] for k in quarantine} & silver_names


def test_automation_sensors_and_schedules(defs: Definitions) -> None:
    graph = defs.resolve_asset_graph()
    for key in DAILY_KEYS:
        condition = graph.get(key).automation_condition
        assert condition is not None, key
        assert "bronze_event_days" in {n.name for n in _walk(condition)}, key
    for key in graph.get_all_asset_keys():
        if key.path[0] in ("kafka", "edge", "bronze", "maintenance") or key.path[-1].startswith(
            ("customers", "products")
        ):
            assert graph.get(key).automation_condition is None, key
    sensors = {"kafka_lag_sensor", "daily_automation", "edge_apps_observer"}
    assert {s.name for s in defs.sensors} == sensors
    for name in sensors:
        assert defs.resolve_sensor_def(name).default_status is DefaultSensorStatus.RUNNING
    assert defs.resolve_schedule_def("maintenance_nightly").default_status is DefaultScheduleStatus.RUNNING
    assert defs.resolve_sensor_def("kafka_lag_sensor").job_name == "ingest_job"
    observed = {k for k in graph.get_all_asset_keys() if k.path[0] in ("kafka", "edge")}
    assert defs.resolve_job_def("observe_job").asset_layer.selected_asset_keys == observed


def _walk(condition):
    yield condition
    for child in condition.children:
        yield from _walk(child)


def _bronze(instance: DagsterInstance, topic: str, dates: list[str]) -> None:
    instance.report_runless_asset_event(
        AssetMaterialization(AssetKey(["bronze", topic]), metadata={"event_dates": MetadataValue.json(dates)})
    )


def test_daily_assets_follow_the_days_bronze_events_touched(defs: Definitions) -> None:
    instance = DagsterInstance.ephemeral()
    daily = AssetSelection.assets(*DAILY_KEYS)
    tick = evaluate_automation_conditions(defs, instance, asset_selection=daily)
    assert tick.total_requested == 0  # the first tick only sets the baseline

    _bronze(instance, "orders", ["2026-01-05"])
    tick = evaluate_automation_conditions(defs, instance, asset_selection=daily, cursor=tick.cursor)
    expected = affected_days({"orders": ["2026-01-05"]})
    assert expected == ["2026-01-04", "2026-01-05"]  # the evening's hopping windows reach into D
    for key in DAILY_KEYS:
        assert sorted(tick.get_requested_partitions(key)) == expected, key

    # Requested once: the next tick, with no new bronze data, requests nothing.
    tick = evaluate_automation_conditions(defs, instance, asset_selection=daily, cursor=tick.cursor)
    assert tick.total_requested == 0

    # A late click two days back and a customer change: sessions around it, enriched orders from the
    # customer change's day up to the last day with events.
    _bronze(instance, "clicks", ["2026-01-02"])
    _bronze(instance, "customers", ["2026-01-01"])
    tick = evaluate_automation_conditions(defs, instance, asset_selection=daily, cursor=tick.cursor)
    days = sorted(tick.get_requested_partitions(AssetKey(["gold", "orders_enriched"])))
    assert days == ["2026-01-01", "2026-01-02", "2026-01-03"]

    # A bronze run that read nothing records no event dates: nothing downstream is requested.
    _bronze(instance, "orders", [])
    tick = evaluate_automation_conditions(defs, instance, asset_selection=daily, cursor=tick.cursor)
    assert tick.total_requested == 0


def test_daily_assets_wait_for_the_whole_ingest_run(defs: Definitions) -> None:
    """Bronze done but the ingest run still writing the dimensions: nothing is requested yet, then every
    daily asset at once (one backfill, one run), not silver now and orders_enriched a tick later."""
    instance = DagsterInstance.ephemeral()
    daily = AssetSelection.assets(*DAILY_KEYS)
    tick = evaluate_automation_conditions(defs, instance, asset_selection=daily)
    ingest = instance.create_run_for_job(defs.resolve_job_def("ingest_job"))  # plans bronze, not started
    _bronze(instance, "orders", ["2026-01-05"])
    tick = evaluate_automation_conditions(defs, instance, asset_selection=daily, cursor=tick.cursor)
    assert tick.total_requested == 0

    instance.report_run_failed(ingest)  # finished (a failed ingest still leaves bronze's new days)
    tick = evaluate_automation_conditions(defs, instance, asset_selection=daily, cursor=tick.cursor)
    expected = ["2026-01-04", "2026-01-05"]
    for key in DAILY_KEYS:
        assert sorted(tick.get_requested_partitions(key)) == expected, key


def test_daily_automation_sensor_requests_one_backfill_of_those_days(defs: Definitions) -> None:
    """The sensor `make dagster` runs (in the code location): one request covering every daily asset."""
    instance = DagsterInstance.ephemeral()
    sensor = defs.resolve_sensor_def("daily_automation")
    first = sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=defs))
    assert first.run_requests == []
    _bronze(instance, "clicks", ["2026-01-10"])
    context = build_sensor_context(instance=instance, definitions=defs, cursor=first.cursor)
    [request] = sensor.evaluate_tick(context).run_requests
    partitions = request.asset_graph_subset.iterate_asset_partitions()
    requested = {(ap.asset_key, ap.partition_key) for ap in partitions}
    days = ["2026-01-09", "2026-01-10", "2026-01-11"]
    assert requested == {(key, day) for key in DAILY_KEYS for day in days}


@pytest.mark.broker
def test_edge_app_and_topic_observed_while_the_app_runs(kafka_broker: KafkaClientConfig, tmp_path) -> None:
    from edge.runtime import StreamsApp
    from examples.revenue import STORE, topology

    prefix = f"obs{uuid.uuid4().hex[:8]}."
    orders, output = f"{prefix}orders", f"{prefix}edge_revenue_by_product"
    create_topics(kafka_broker, [TopicSpec(orders, 2), TopicSpec(output, 2)])
    producer = Producer(kafka_broker.producer())
    for i in range(20):
        order = {"order_id": f"o{i}", "product_id": f"p{i % 3}", "quantity": 2, "unit_price": 1.5}
        producer.produce(orders, key=f"o{i}".encode(), value=json.dumps(order).encode())
    assert producer.flush(30) == 0
    del producer  # destroyed now, not reconnecting to the stopped broker at the end of the session

    app_id = f"obs-revenue-{uuid.uuid4().hex[:6]}"
    kafka = KafkaResource(
        bootstrap_servers=kafka_broker.bootstrap_servers,
        profile=kafka_broker.profile.value,
        topic_prefix=prefix,
    )
    app = StreamsApp(
        topology(orders, output),
        {
            "application.id": app_id,
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "broker.profile": kafka_broker.profile.value,
            "state.dir": str(tmp_path / "streams"),
            "application.server": "127.0.0.1:0",
            "commit.interval.ms": 200,
        },
    )
    app.start()
    try:
        assert app.wait_until_running(90)
        deadline = time.monotonic() + 60
        while app.stats.records_processed < 20 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.6)  # a commit interval or two: the group's offsets reach the broker
        running = EdgeApp(app_id, "examples.revenue:topology", app.advertised_server)
        stopped = EdgeApp("obs-not-running", "examples.revenue:topology", "127.0.0.1:9")
        observer = build_edge_observer_sensor([running, stopped])
        with build_sensor_context(instance=DagsterInstance.ephemeral()) as ctx:
            ticked = observer(ctx)
        assets = [build_edge_app_asset(running), build_edge_app_asset(stopped), build_topic_asset("orders")]
        job = define_asset_job("observe_test", selection=AssetSelection.all(include_sources=True))
        result = (
            Definitions(assets=assets, jobs=[job], resources={"kafka": kafka})
            .resolve_job_def("observe_test")
            .execute_in_process(instance=DagsterInstance.ephemeral())
        )
    finally:
        app.close(30)
    assert result.success
    observed = {
        e.asset_key: {k: v.value for k, v in e.event_specific_data.asset_observation.metadata.items()}
        for e in result.get_asset_observation_events()
    }
    live = observed[edge_app_key(app_id)]
    assert live["running"] is True and "RUNNING" in live["status"].upper()
    assert live["records_processed_total"] >= 20
    assert live["guarantee"] == "at_least_once"
    assert live["state_stores"] == [STORE]
    assert live["input_topics"] == ["orders"] and live["output_topics"] == ["edge_revenue_by_product"]
    assert "Sub-topology: 0" in live["topology"]
    down = observed[edge_app_key("obs-not-running")]
    assert down["running"] is False and "not reachable at http://127.0.0.1:9/metrics" in down["status"]
    # The observer sensor records the same: both apps on its first tick, then only what changed.
    by_key = {e.asset_key: {k: v.value for k, v in e.metadata.items()} for e in ticked.asset_events}
    assert by_key[edge_app_key(app_id)]["running"] is True
    assert by_key[edge_app_key("obs-not-running")]["running"] is False
    with build_sensor_context(instance=DagsterInstance.ephemeral(), cursor=ticked.cursor) as ctx:
        idle = build_edge_observer_sensor([stopped])(ctx)
    assert idle.asset_events == [] and "no edge app" in idle.skip_reason.skip_message
    topic = observed[topic_key("orders")]
    assert topic["topic"] == orders and topic["records"] == 20 and topic["partitions"] == 2
    assert topic["consumer_lag"] == {app_id: 0}

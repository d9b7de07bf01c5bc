"""The Kafka lag sensor against the real broker: no run while nothing is new, a run request once
records wait (with topic observations), the cursor advancing to the offsets it saw, and the
``min_records`` / ``max_wait_s`` batching policy."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Producer
from dagster import (
    AssetKey,
    DagsterInstance,
    DagsterRun,
    DagsterRunStatus,
    SensorResult,
    SkipReason,
    build_sensor_context,
)

from assets.kafka.keys import topic_key
from assets.kafka.offsets import TopicOffsets, topic_offsets
from assets.resources import KafkaResource, LakeResource
from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from orchestration.sensors import PENDING_TAG, LagCursor, build_kafka_lag_sensor, decide

pytestmark = [pytest.mark.broker]

TOPICS = ["orders", "clicks"]
#: A lake without bronze tables: only the cursor counts (bronze's committed offsets are empty).
NO_LAKE = LakeResource(lake_root=f"/tmp/streamhouse-lag-sensor-{uuid.uuid4().hex}")


@pytest.fixture
def prefixed(kafka_broker: KafkaClientConfig) -> Iterator[tuple[KafkaResource, Callable[[str, int], None]]]:
    """A KafkaResource over fresh ``<prefix>orders`` / ``<prefix>clicks`` topics and a producer."""
    prefix = f"lag{uuid.uuid4().hex[:8]}."
    create_topics(kafka_broker, [TopicSpec(f"{prefix}{t}", 2) for t in TOPICS])
    resource = KafkaResource(
        bootstrap_servers=kafka_broker.bootstrap_servers,
        profile=kafka_broker.profile.value,
        topic_prefix=prefix,
    )
    producers: list[Producer] = [Producer(kafka_broker.producer())]

    def produce(topic: str, n: int) -> None:
        for i in range(n):
            producers[0].produce(f"{prefix}{topic}", key=f"k{i}".encode(), value=b"{}")
        assert producers[0].flush(30) == 0

    yield resource, produce
    producers.clear()  # destroyed now, not reconnecting to the stopped broker at the end of the session


def _tick(
    sensor,
    resource: KafkaResource,
    cursor: str | None,
    instance: DagsterInstance | None = None,
    lake: LakeResource = NO_LAKE,
) -> SensorResult | SkipReason:
    with build_sensor_context(
        instance=instance or DagsterInstance.ephemeral(),
        cursor=cursor,
        resources={"kafka": resource, "lake": lake},
    ) as ctx:
        return sensor(ctx)


def test_records_bronze_already_holds_start_no_run(prefixed, kafka_broker, tmp_path) -> None:
    """Issue 25 item 7: `make dagster` after `make demo` requested an ingest at once for "40410 new
    record(s)" that bronze already held (the sensor's cursor was empty; 0 records ingested). The
    baseline is bronze's committed offsets (its Delta commits), whatever the cursor says."""
    from assets.bronze.ingest import ingest_topic

    resource, produce = prefixed
    lake = LakeResource(lake_root=str(tmp_path / "lake"))
    produce("orders", 7)
    produce("clicks", 4)
    for t in TOPICS:  # what the demo did: bronze ingested everything
        result = ingest_topic(
            kafka_broker,
            resource.topic(t),
            lake.table_uri("bronze", t),
            eof_timeout_s=20,
            show_progress=False,
        )
        assert result.records == {"orders": 7, "clicks": 4}[t]
    sensor = build_kafka_lag_sensor(TOPICS)
    first = _tick(sensor, resource, None, lake=lake)  # a fresh sensor: empty cursor
    assert isinstance(first, SensorResult) and not first.run_requests, first.skip_reason
    assert "no new records" in first.skip_reason.skip_message

    produce("orders", 3)  # only what bronze has not ingested counts
    [request] = _tick(sensor, resource, first.cursor, lake=lake).run_requests
    assert request.tags[PENDING_TAG] == "3"


def test_run_requested_only_after_new_records(prefixed) -> None:
    resource, produce = prefixed
    sensor = build_kafka_lag_sensor(TOPICS)

    first = _tick(sensor, resource, None)
    assert isinstance(first, SensorResult) and not first.run_requests
    assert "no new records in 2 topic(s)" in first.skip_reason.skip_message

    produce("orders", 5)
    second = _tick(sensor, resource, first.cursor)
    assert isinstance(second, SensorResult)
    [request] = second.run_requests
    assert request.tags[PENDING_TAG] == "5"
    seen = json.loads(second.cursor)["seen"]
    assert sum(seen[resource.topic("orders")].values()) == 5
    assert sum(seen[resource.topic("clicks")].values()) == 0
    observed = {e.asset_key: e.metadata["records"].value for e in second.asset_events}
    assert observed == {topic_key("orders"): 5, topic_key("clicks"): 0}

    third = _tick(sensor, resource, second.cursor)
    assert not third.run_requests and third.cursor == second.cursor

    produce("clicks", 3)
    fourth = _tick(sensor, resource, third.cursor)
    [again] = fourth.run_requests
    assert again.tags[PENDING_TAG] == "3" and again.run_key != request.run_key
    assert sum(json.loads(fourth.cursor)["seen"][resource.topic("clicks")].values()) == 3


def test_no_second_run_while_ingest_is_in_progress(prefixed) -> None:
    resource, produce = prefixed
    sensor = build_kafka_lag_sensor(TOPICS)
    baseline = _tick(sensor, resource, None)
    produce("orders", 4)
    instance = DagsterInstance.ephemeral()
    run = instance.add_run(DagsterRun(job_name="ingest_job", status=DagsterRunStatus.STARTED))
    busy = _tick(sensor, resource, baseline.cursor, instance)
    assert isinstance(busy, SkipReason) and run.run_id in busy.skip_message
    instance.report_run_failed(run)  # finished (badly): the records still wait, so now a run
    [request] = _tick(sensor, resource, baseline.cursor, instance).run_requests
    assert request.tags[PENDING_TAG] == "4"

    # A bronze asset materialized from the UI is an ingest as well; other runs are not.
    def ui_run(layer: str) -> DagsterRun:
        keys = frozenset({AssetKey([layer, "orders"])})
        return DagsterRun(job_name="__ASSET_JOB", status=DagsterRunStatus.STARTED, asset_selection=keys)

    instance.add_run(ui_run("bronze"))
    assert isinstance(_tick(sensor, resource, baseline.cursor, instance), SkipReason)
    other = DagsterInstance.ephemeral()
    other.add_run(ui_run("silver"))
    assert _tick(sensor, resource, baseline.cursor, other).run_requests


def test_few_records_wait_until_max_wait(prefixed, kafka_broker: KafkaClientConfig) -> None:
    resource, produce = prefixed
    sensor = build_kafka_lag_sensor(TOPICS, min_records=100, max_wait_s=3600)
    baseline = _tick(sensor, resource, None)
    produce("orders", 2)

    waiting = _tick(sensor, resource, baseline.cursor)
    assert not waiting.run_requests
    assert "2 new record(s) wait, fewer than min_records=100" in waiting.skip_reason.skip_message
    cursor = LagCursor.parse(waiting.cursor)
    assert cursor.pending_since is not None and cursor.seen == LagCursor.parse(baseline.cursor).seen

    # The same offsets, judged once the first waiting record is older than max_wait_s.
    offsets = topic_offsets(kafka_broker, [resource.topic(t) for t in TOPICS])
    kwargs = {"min_records": 100, "max_wait_s": 3600}
    assert not decide(cursor, offsets, now=cursor.pending_since + 3599, **kwargs).run
    late = decide(cursor, offsets, now=cursor.pending_since + 3600, **kwargs)
    assert late.run and late.pending == 2 and late.cursor.pending_since is None
    assert sum(late.cursor.seen[resource.topic("orders")].values()) == 2


def test_recreated_topic_counts_as_new_and_missing_topics_are_not_created(kafka_broker) -> None:
    """Offsets going back mean a recreated topic (the embedded broker keeps data in memory); a topic
    that does not exist is reported, never created by the observation."""
    missing = f"lagmissing{uuid.uuid4().hex[:8]}"
    offsets = topic_offsets(kafka_broker, [missing])
    assert not offsets[missing].exists
    time.sleep(0.2)
    assert not topic_offsets(kafka_broker, [missing])[missing].exists
    recreated = {"t": TopicOffsets("t", True, {0: 0}, {0: 4})}
    decision = decide(LagCursor({"t": {0: 10}}), recreated, now=0.0, min_records=1, max_wait_s=60)
    assert decision.run and decision.pending == 4


def test_thresholds_come_from_the_settings(tmp_path) -> None:
    from orchestration.definitions import build_definitions
    from orchestration.settings import SettingsError, load_settings

    env = {"STREAMHOUSE_LAG_MIN_RECORDS": "500", "STREAMHOUSE_LAG_MAX_WAIT_S": "60"}
    defs = build_definitions(load_settings(env, base=tmp_path))
    description = defs.resolve_sensor_def("kafka_lag_sensor").description or ""
    assert "at least 500" in description and "once 60s passed" in description
    with pytest.raises(SettingsError, match="lag_min_records"):
        load_settings({"STREAMHOUSE_LAG_MIN_RECORDS": "0"}, base=tmp_path)


def _tick_logged(
    sensor, resource: KafkaResource, cursor: str | None
) -> tuple[SensorResult | SkipReason, list[logging.LogRecord]]:
    """One tick, with what it wrote to the sensor's log (what the daemon prints in `make dagster`)."""
    records: list[logging.LogRecord] = []

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    with build_sensor_context(
        instance=DagsterInstance.ephemeral(),
        cursor=cursor,
        resources={"kafka": resource, "lake": NO_LAKE},
    ) as ctx:
        ctx.log.addHandler(_Keep())
        return sensor(ctx), records


def test_unreachable_kafka_skips_with_one_line_and_logs_each_change_once(kafka_broker, tmp_path) -> None:
    """Issue 46 item 5: with the broker stopped, every 30 s tick failed and the daemon printed a ~40-line
    traceback into the `make dagster` terminal. Now a tick is skipped with one line saying where and
    what to do, and the sensor's log says so once when Kafka goes away and once when it is back."""
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sensor = build_kafka_lag_sensor(TOPICS)
    down = KafkaResource(bootstrap_servers=f"127.0.0.1:{port}", profile="real")

    first, first_logs = _tick_logged(sensor, down, None)
    assert isinstance(first, SensorResult) and first.skip_reason is not None
    reason = first.skip_reason.skip_message or ""
    assert reason.startswith(f"Kafka not reachable at 127.0.0.1:{port}: ")
    assert "start it with `streamhouse broker start`" in reason
    assert "\n" not in reason and "Traceback" not in reason
    assert [r.getMessage() for r in first_logs if r.levelno >= logging.WARNING] == [reason]
    assert all(r.exc_info is None for r in first_logs)

    second, second_logs = _tick_logged(sensor, down, first.cursor)
    assert isinstance(second, SensorResult) and second.skip_reason is not None
    assert second.skip_reason.skip_message == reason
    assert [r for r in second_logs if "Kafka" in r.getMessage()] == [], "logged once, not every tick"

    # Kafka back (the session's broker): one line saying so, and the tick counts offsets again.
    up = KafkaResource(bootstrap_servers=kafka_broker.bootstrap_servers, profile=kafka_broker.profile.value)
    third, third_logs = _tick_logged(sensor, up, second.cursor)
    assert [r.getMessage() for r in third_logs if "Kafka" in r.getMessage()] == [
        f"Kafka reachable again at {kafka_broker.bootstrap_servers}"
    ]
    assert isinstance(third, SensorResult) and "unreachable" not in json.loads(third.cursor or "{}")
    _fourth, fourth_logs = _tick_logged(sensor, up, third.cursor)
    assert [r for r in fourth_logs if "Kafka" in r.getMessage()] == []

    # No bootstrap servers and no recorded local broker: the same one line, naming the state dir.
    unrecorded = KafkaResource(bootstrap_servers="", state_dir=str(tmp_path / "state"))
    result, _logs = _tick_logged(sensor, unrecorded, None)
    assert isinstance(result, SensorResult) and result.skip_reason is not None
    message = result.skip_reason.skip_message or ""
    assert message.startswith("Kafka not reachable: no local broker is recorded") and "\n" not in message

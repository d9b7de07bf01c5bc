"""Internal topics are validated (exact partition counts, missing ones created) and clients never
auto-create topics; librdkafka's connection errors are logged rate-limited (docs/reliability.md,
broker restarts)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient

from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from edge.runtime import StreamsApp
from edge.runtime.connectivity import ClusterWatchdog, ConnectionLogLimiter
from edge.runtime.topics import InternalTopicPartitionsError, metadata_topic_name
from edge.serde import Serdes
from edge.state import key_value_store_builder
from edge.topology import Topology
from tests.edge.runtime.apps.count_app import CountProcessor

pytestmark = [pytest.mark.timeout(60)]


def _count_topology(source: str) -> Topology:
    t = Topology()
    t.add_source("in", source, key_serde=Serdes.string(), value_serde=Serdes.string())
    t.add_processor("count", CountProcessor, "in")
    t.add_state_store(key_value_store_builder("counts", Serdes.string(), Serdes.long()), "count")
    return t


def _app(client: KafkaClientConfig, app_id: str, source: str, state_dir: Path) -> StreamsApp:
    return StreamsApp(
        _count_topology(source),
        {
            "application.id": app_id,
            "bootstrap.servers": client.bootstrap_servers,
            "broker.profile": client.profile.value,
            "state.dir": str(state_dir),
            "http.enabled": "false",
        },
    )


def _partitions(client: KafkaClientConfig) -> dict[str, int]:
    topics = AdminClient(client.admin()).list_topics(timeout=10).topics
    return {name: len(t.partitions) for name, t in topics.items()}


@pytest.mark.broker
@pytest.mark.parametrize("which", ["changelog", "instances"])
def test_internal_topic_with_wrong_partition_count_is_a_clear_error(
    kafka_broker: KafkaClientConfig, make_topic, unique_name, tmp_path: Path, which: str
) -> None:
    source = make_topic("in", 2)
    app_id = unique_name("app")
    wrong, expected = (
        (f"{app_id}-counts-changelog", 2) if which == "changelog" else (metadata_topic_name(app_id), 1)
    )
    create_topics(kafka_broker, [TopicSpec(wrong, 3)])
    app = _app(kafka_broker, app_id, source, tmp_path)
    with pytest.raises(InternalTopicPartitionsError) as info:
        app.start()
    assert f"internal topic {wrong!r}" in str(info.value)
    assert f"expected: {expected}; actual: 3" in str(info.value)


@pytest.mark.broker
def test_missing_internal_topics_are_created_with_the_planned_counts(
    kafka_broker: KafkaClientConfig, make_topic, unique_name, tmp_path: Path
) -> None:
    source = make_topic("in", 3)
    app_id = unique_name("app")
    app = _app(kafka_broker, app_id, source, tmp_path)
    app.start()
    try:
        counts = _partitions(kafka_broker)
        assert counts[f"{app_id}-counts-changelog"] == 3
        assert counts[metadata_topic_name(app_id)] == 1
    finally:
        app.close(30)


@pytest.mark.broker
def test_producers_never_auto_create_topics(kafka_broker: KafkaClientConfig, unique_name) -> None:
    """A restarted broker that lost its topics must not get them back, mis-partitioned, from a producer's
    metadata request (what re-created changelogs with 4 partitions instead of 2)."""
    topic = unique_name("never-created")
    producer = Producer(kafka_broker.producer(**{"message.timeout.ms": 1000}))
    producer.produce(topic, b"x")
    producer.flush(3)
    assert topic not in _partitions(kafka_broker)


def test_connection_errors_are_logged_once_then_summarised(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    logger = logging.getLogger("test.rdkafka")
    limiter = ConnectionLogLimiter(10.0, logger=logger, clock=lambda: now[0])
    line = (
        "[thrd:127.0.0.1:9092/1]: 127.0.0.1:9092/1: Connect to ipv4#127.0.0.1:9092 failed: Connection refused"
    )
    with caplog.at_level(logging.INFO, logger="test.rdkafka"):
        for _ in range(300):  # librdkafka's retries from every client, 3 s
            limiter.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#consumer-1", line)
            now[0] += 0.01
        now[0] = 10.5
        limiter.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#producer-2", line)
        limiter.log(logging.INFO, "%s [%s] %s", "CGRPOP", "rdkafka#consumer-1", "joined the group")
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 3, messages
    assert "Connection refused" in messages[0]
    assert messages[1] == "broker 127.0.0.1:9092 unreachable (300 more errors in the last 10 s)"
    assert "joined the group" in messages[2]
    assert limiter.total == 301


def test_connection_errors_counted_at_shutdown_are_reported(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    logger = logging.getLogger("test.rdkafka")
    limiter = ConnectionLogLimiter(10.0, logger=logger, clock=lambda: now[0])
    line = "127.0.0.1:9092/1: Connect to ipv4#127.0.0.1:9092 failed: Connection refused"
    with caplog.at_level(logging.INFO, logger="test.rdkafka"):
        for _ in range(40):
            limiter.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#consumer-1", line)
            now[0] += 0.1
        limiter.report_pending()  # the instance gives up before the 10 s summary
        limiter.report_pending()  # nothing left: no second line
    messages = [r.getMessage() for r in caplog.records]
    assert messages[1:] == ["broker 127.0.0.1:9092 unreachable (39 more errors in the last 4 s)"], messages


def test_watchdog_counts_time_without_any_broker() -> None:
    now = [100.0]
    wd = ClusterWatchdog(lost_after_s=6, give_up_after_s=60, clock=lambda: now[0])
    up = {"127.0.0.1:9092/1": {"state": "UP", "source": "learned"}, "GroupCoordinator": {"source": "logical"}}
    down = {"127.0.0.1:9092/1": {"state": "CONNECT", "source": "learned"}}
    wd.observe_stats(up)
    assert wd.reachable and wd.unavailable_for == 0
    # librdkafka says "0/2 brokers are down" while it swaps the bootstrap broker for the learned ones
    wd.connection_error(KafkaError(KafkaError._ALL_BROKERS_DOWN, "0/2 brokers are down"))
    assert wd.reachable
    wd.observe_stats(down)
    now[0] += 7
    assert wd.lost and not wd.expired and wd.unavailable_for == 7
    now[0] += 60
    assert wd.expired
    wd.observe_stats(up)
    assert wd.reachable and not wd.lost and wd.outages == 1

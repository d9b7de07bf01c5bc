"""Window and session changelogs are bounded as Kafka Streams creates them: ``compact,delete`` and a
``retention.ms`` of the store's retention plus ``windowstore.changelog.additional.retention.ms``.

Before, every DSL window and session store's changelog was created ``compact`` only and grew without
bound (the window settings were only applied to Processor API builders).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from edge import Consumed, Materialized, Serdes, SessionWindows, StreamsBuilder, TimeWindows
from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from edge.runtime import StreamsApp
from edge.runtime.topics import ensure_internal_topics, plan_topics
from edge.state.window import window_store_builder
from edge.topology import Topology
from edge.topology.stores import changelog_topic_config

pytestmark = [pytest.mark.broker, pytest.mark.timeout(90)]

DAY = 86_400_000


def _configs(client: KafkaClientConfig, topic: str) -> dict[str, str]:
    admin = AdminClient(client.admin())
    [future] = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)]).values()
    entries = future.result(timeout=10)
    return {k: entries[k].value for k in ("cleanup.policy", "retention.ms") if k in entries}


def _windowed_topology(source: str) -> Topology:
    builder = StreamsBuilder()
    stream = builder.stream(source, Consumed.with_(Serdes.string(), Serdes.string()))
    grouped = stream.group_by_key()
    grouped.windowed_by(TimeWindows.of_size_and_grace(60_000, 5_000)).count(
        materialized=Materialized.as_("tumbling")
    )
    grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(30_000, 2_000)).count(
        materialized=Materialized.as_("sessions")
    )
    grouped.windowed_by(TimeWindows.of_size_with_no_grace(10_000)).count(
        materialized=Materialized.as_("kept-a-week").with_retention(7 * DAY)
    )
    grouped.count(materialized=Materialized.as_("totals"))
    return builder.build()


def test_dsl_window_and_session_changelogs_are_bounded(kafka_broker, make_topic, unique_name):
    source = make_topic("in", 2)
    app_id = unique_name("app")
    plan = plan_topics(_windowed_topology(source), app_id, kafka_broker)
    ensure_internal_topics(plan, kafka_broker)
    assert _configs(kafka_broker, f"{app_id}-tumbling-changelog") == {
        "cleanup.policy": "compact,delete",
        "retention.ms": str(65_000 + DAY),
    }
    assert _configs(kafka_broker, f"{app_id}-sessions-changelog") == {
        "cleanup.policy": "compact,delete",
        "retention.ms": str(32_000 + DAY),
    }
    assert _configs(kafka_broker, f"{app_id}-kept-a-week-changelog")["retention.ms"] == str(8 * DAY)
    assert _configs(kafka_broker, f"{app_id}-totals-changelog")["cleanup.policy"] == "compact"


def test_the_additional_retention_setting_reaches_the_topics_through_the_runtime(
    kafka_broker, make_topic, unique_name, tmp_path: Path
):
    source = make_topic("in", 1)
    app_id = unique_name("app")
    app = StreamsApp(
        _windowed_topology(source),
        {
            "application.id": app_id,
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "broker.profile": kafka_broker.profile.value,
            "state.dir": str(tmp_path),
            "http.enabled": "false",
            "windowstore.changelog.additional.retention.ms": "1000",
        },
    )
    app.start()
    try:
        assert app.wait_until_running(60)
        assert _configs(kafka_broker, f"{app_id}-tumbling-changelog")["retention.ms"] == str(66_000)
        assert _configs(kafka_broker, f"{app_id}-sessions-changelog")["retention.ms"] == str(33_000)
    finally:
        app.close(30)


def test_a_stores_own_retention_ms_wins_and_processor_api_builders_follow_the_setting():
    own = window_store_builder(
        "w", Serdes.string(), Serdes.long(), window_size_ms=1_000, retention_ms=5_000,
        changelog_config={"retention.ms": "123456", "segment.bytes": "1048576"},
    )  # fmt: skip
    assert changelog_topic_config(own, 10) == {
        "cleanup.policy": "compact,delete",
        "retention.ms": "123456",
        "segment.bytes": "1048576",
    }
    plain = window_store_builder(
        "w", Serdes.string(), Serdes.long(), window_size_ms=1_000, retention_ms=5_000
    )
    assert changelog_topic_config(plain, 10)["retention.ms"] == "5010"
    assert changelog_topic_config(plain)["retention.ms"] == str(5_000 + DAY)
    assert changelog_topic_config(plain, 2**63 - 1)["retention.ms"] == str(2**63 - 1)  # capped, as Kafka
    assert changelog_topic_config(plain.with_logging_disabled(), 10) == {}


def test_an_existing_compact_only_changelog_is_reported_not_altered(
    kafka_broker, make_topic, unique_name, caplog: pytest.LogCaptureFixture
):
    source = make_topic("in", 1)
    app_id = unique_name("app")
    old = f"{app_id}-tumbling-changelog"
    create_topics(kafka_broker, [TopicSpec(old, 1, config={"cleanup.policy": "compact"})])
    plan = plan_topics(_windowed_topology(source), app_id, kafka_broker)
    with caplog.at_level(logging.WARNING, logger="edge.runtime.topics"):
        ensure_internal_topics(plan, kafka_broker)
        ensure_internal_topics(plan, kafka_broker)  # after a rebalance: not again
    warnings = [r.getMessage() for r in caplog.records if "grows without bound" in r.getMessage()]
    assert len(warnings) == 1 and old in warnings[0] and f"retention.ms={65_000 + DAY}" in warnings[0]
    assert _configs(kafka_broker, old)["cleanup.policy"] == "compact"
    assert _configs(kafka_broker, f"{app_id}-sessions-changelog")["cleanup.policy"] == "compact,delete"

"""Issue 25 item 6: after the demo, `bronze/edge_revenue_5m` was green in the UI although its table did
not exist (the edge app that writes its topic had not run): the ingest reported a materialization for a
topic without records. Now nothing is reported until there is a table, and once records arrive the
asset materializes as before."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from dagster import AssetKey, DagsterInstance, materialize

from assets.bronze.assets import build_bronze_asset
from assets.resources import KafkaResource, LakeResource
from edge.kafka import KafkaClientConfig, TopicSpec, create_topics

pytestmark = [pytest.mark.broker]


def test_a_topic_without_records_is_not_materialized(kafka_broker: KafkaClientConfig, tmp_path: Path) -> None:
    prefix = f"nt{uuid.uuid4().hex[:8]}."
    topic = "edge_revenue_5m"
    create_topics(kafka_broker, [TopicSpec(f"{prefix}{topic}", 1)])
    resources = {
        "kafka": KafkaResource(
            bootstrap_servers=kafka_broker.bootstrap_servers,
            profile=kafka_broker.profile.value,
            topic_prefix=prefix,
        ),
        "lake": LakeResource(lake_root=str(tmp_path / "lake")),
    }
    asset = build_bronze_asset(topic)
    config = {"ops": {asset.op.name: {"config": {"eof_timeout_s": 10.0}}}}
    instance = DagsterInstance.ephemeral()
    empty = materialize([asset], resources=resources, instance=instance, run_config=config)
    assert empty.success  # nothing to ingest is not a failure...
    assert empty.get_asset_materialization_events() == []  # ...but nothing is materialized either
    assert instance.get_latest_materialization_event(AssetKey(["bronze", topic])) is None
    assert not (tmp_path / "lake" / "bronze" / topic).exists()

    producer = Producer(kafka_broker.producer())
    producer.produce(f"{prefix}{topic}", key=b"p-1", value=b'{"orders": 1}')
    assert producer.flush(30) == 0
    landed = materialize([asset], resources=resources, instance=instance, run_config=config)
    [event] = landed.get_asset_materialization_events()
    metadata = event.materialization.metadata
    assert metadata["records"].value == 1 and metadata["delta_version"].value == 0
    del producer  # not reconnecting to the broker after the session ends

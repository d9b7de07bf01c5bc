"""Restore from a changelog the broker has really compacted (offset gaps; under exactly-once also
transaction markers): state must come back exact and the app must not wait for offsets that are gone.

Tansu never compacts, so there the same test only checks the plain restore; on Apache Kafka
(``STREAMHOUSE_BROKER_KIND=kafka``) it first waits until the cleaner has removed superseded records.
"""

from __future__ import annotations

import shutil
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from edge.broker import BrokerKind
from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from edge.runtime.markers import is_marker
from tests.edge.runtime.harness import OutputReader, expected_counts, keyed, produce

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(240)]

#: Roll a segment on every write after 100 ms and clean at once: the cleaner compacts within seconds.
COMPACT_FAST = {
    "cleanup.policy": "compact",
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": "0",
}


def changelog_records(client: KafkaClientConfig, topic: str, partitions: int) -> tuple[int, int]:
    """(data records left in ``topic``, offsets its partitions span), read committed to the end."""
    consumer = Consumer(
        client.consumer(
            f"inspect-{uuid.uuid4().hex[:8]}",
            **{
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            },
        )
    )
    try:
        span = 0
        for p in range(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            span += high - low
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        records, at_eof, deadline = 0, set(), time.monotonic() + 30
        while len(at_eof) < partitions and time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.2):
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        at_eof.add(msg.partition())
                    continue
                if not is_marker(msg.key()):  # commit markers are read, never restored into a store
                    records += 1
        assert len(at_eof) == partitions, f"did not reach the end of {topic}"
        return records, span
    finally:
        consumer.close()


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_restore_from_a_compacted_changelog_is_exact(
    kafka_broker, broker_kind, make_topic, unique_name, spawn, tmp_path, guarantee
):
    src, out = make_topic("in", 2), make_topic("out", 2)
    app = unique_name("app")
    changelog = f"{app}-counts-changelog"
    # created before the app (which then uses it as is) so that the broker compacts it quickly
    create_topics(kafka_broker, [TopicSpec(changelog, 2, config=kafka_broker.topic_config(COMPACT_FAST))])
    state = tmp_path / "state"
    config = {"processing_guarantee": guarantee, "commit_interval_ms": 100}
    a = spawn(app, src, out, name="a", state_dir=state, **config)
    a.wait_running()
    reader = OutputReader(kafka_broker, out, unique_name("reader"))
    batches = []
    for i in range(6):  # six batches, each committed: several changelog records per key, many segments
        batch = keyed(300, 6, start=i * 300)
        batches.append(batch)
        produce(kafka_broker, src, batch)
        sent = 300 * (i + 1)
        reader.wait_for(lambda r, n=sent: len(r.records) >= n)
        time.sleep(0.3)
    assert a.terminate() == 0
    records, span = changelog_records(kafka_broker, changelog, 2)
    if broker_kind is BrokerKind.KAFKA:
        deadline = time.monotonic() + 60
        while records >= span // 2 and time.monotonic() < deadline:
            time.sleep(1)
            records, span = changelog_records(kafka_broker, changelog, 2)
        assert records < span // 2, f"the changelog was not compacted: {records} records over {span} offsets"
    shutil.rmtree(state)

    b = spawn(app, src, out, name="b", state_dir=state, **config)
    b.wait_running()
    want = expected_counts(*batches)
    for key, n in want.items():
        status, body = b.get(f"/v1/stores/counts/keys/{key}")
        assert status == 200 and body["value"] == n, (key, body)
    # the broker may compact again between the count above and the restore: at most `records`
    # records, at least one per key
    restored = b.metric("streamhouse_edge_restored_records_total")
    assert len(want) <= restored <= records, (restored, records)
    more = keyed(300, 6, start=1800)
    produce(kafka_broker, src, more)
    want = expected_counts(*batches, more)
    reader.wait_for(lambda r: r.latest() == want, what="counts after the restore")
    reader.close()

"""Exactly-once through a clean stop of the group coordinator's node (3-node Apache Kafka cluster).

The bug this guards (docs/reliability.md, ``broker_bounces``): librdkafka's
``send_offsets_to_transaction`` waits without a deadline for the TxnOffsetCommit to the group
coordinator, and when the coordinator's node leaves the cluster in a controlled shutdown (gone from the
metadata, so librdkafka decommissions its broker handle) nothing wakes that request up again
(confluentinc/librdkafka issues 5456 and 5511). The stream thread then blocked inside the commit for
good: the instance stayed up, processed nothing, and did not even close within a minute (Kafka's smoke
driver: PROCESSED-LESS-THAN-GENERATED in the ``short-eos`` broker bounce). The committer now gives the
call its timeout plus a grace and then treats the producer as failed: the tasks close without a commit
and resume with a new producer, whose ``init_transactions`` fences the stuck one.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from edge.broker import BrokerKind, kafka_unavailable_reason
from edge.broker.cluster import KafkaCluster
from edge.kafka import BrokerProfile, KafkaClientConfig, TopicSpec, create_topics
from tests.edge.runtime.harness import Instance, OutputReader, expected_counts, keyed, produce

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, broker_kind: BrokerKind) -> Iterator[KafkaCluster]:
    # its own 3-node cluster, once: in the Apache Kafka pass
    if broker_kind is not BrokerKind.KAFKA:
        pytest.skip("runs in the Apache Kafka pass: STREAMHOUSE_BROKER_KIND=kafka (`make test-kafka`)")
    if reason := kafka_unavailable_reason():
        pytest.skip(reason)
    c = KafkaCluster(3, data_dir=tmp_path_factory.mktemp("cluster"))
    c.start()
    try:
        yield c
    finally:
        c.stop()


def _group_coordinator(admin: AdminClient, group: str, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return int(admin.describe_consumer_groups([group])[group].result(10).coordinator.id)
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_exactly_once_counts_through_a_clean_stop_of_the_group_coordinator(
    cluster: KafkaCluster, tmp_path: Path, unique_name: Callable[[str], str]
) -> None:
    client = KafkaClientConfig(cluster.bootstrap_servers, BrokerProfile.REAL)
    admin = AdminClient(client.admin())
    src, out = unique_name("in"), unique_name("out")
    create_topics(client, [TopicSpec(src, 2, -1), TopicSpec(out, 2, -1)])
    app_id = unique_name("app")
    inst = Instance(
        client,
        app_id=app_id,
        state_dir=tmp_path / "state",
        in_topic=src,
        out_topic=out,
        config={
            "processing.guarantee": "exactly_once_v2",
            "commit.interval.ms": 200,
            "transaction.timeout.ms": 10_000,
            "cluster.unavailable.timeout.ms": 300_000,
        },
        log_dir=tmp_path,
    )
    reader = OutputReader(client, out, unique_name("reader"), committed=True)
    victim = None
    try:
        inst.wait_running(180)
        before, during = keyed(300, 10), keyed(300, 10, 300)
        produce(client, src, before)
        reader.wait_for(lambda r: r.latest() == expected_counts(before), 120, "counts before the stop")

        victim = _group_coordinator(admin, app_id)
        cluster.stop_node(victim)  # controlled shutdown: the node leaves the metadata
        stopped = time.monotonic()
        # nothing to commit until new input: the app's clients see the node leave the metadata first
        # (librdkafka decommissions its broker handle), as when a commit follows a bounce
        time.sleep(5)
        produce(client, src, during)
        truth = expected_counts(before, during)
        # without the bound on send_offsets_to_transaction the stream thread never returns from the
        # first commit after the stop (seen: still blocked 60 s after the node was back)
        reader.wait_for(lambda r: r.latest() == truth, 120, "counts with the coordinator's node stopped")
        stall = time.monotonic() - stopped
        assert inst.proc.poll() is None, inst.log_tail(80)

        reader.poll(1.0)
        values: dict[str, list[int]] = {}
        for key, value, _, _ in reader.records:
            values.setdefault(key, []).append(value)
        repeated = sum(c - 1 for vs in values.values() for c in Counter(vs).values() if c > 1)
        missing = sum(len(set(range(1, c + 1)) - set(values.get(k, []))) for k, c in truth.items())
        print(f"group coordinator node {victim} stopped; counts exact after {stall:.1f} s")
        assert missing == 0, f"{missing} count values never reached the output"
        assert repeated == 0, f"{repeated} outputs repeated under exactly-once"
    finally:
        reader.close()
        inst.stop()
        if victim is not None:
            cluster.restart_node(victim)

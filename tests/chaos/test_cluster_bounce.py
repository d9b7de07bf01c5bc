"""Hard bounces of a 3-node Apache Kafka cluster under a running edge app (docs/reliability.md).

The single-broker trials (``test_broker_restart.py``) stop the whole cluster; here one node of three is
SIGKILLed and restarted, as a crashed or rebooted broker in production: the leader of a partition the app
reads, so that partition (and whatever else that node led: changelog partitions, the group or
transaction coordinator) must move to a follower. With replication factor 3 (the app's default -1 on
this cluster) and ``min.insync.replicas=2`` nothing is lost and writes go on with two nodes: the app must
never exit or leave for long, and its counts must be exact under both guarantees (exactly-once: no
output repeated either). The stall is measured: from the kill until the records produced right after
it are counted.
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
from tests.chaos.conftest import Scale
from tests.edge.runtime.harness import Instance, OutputReader, expected_counts, keyed, produce

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, broker_kind: BrokerKind) -> Iterator[KafkaCluster]:
    # It starts its own cluster whatever the session's broker is: `make test` runs it once, in the
    # Apache Kafka pass (tests/chaos runs in both passes), not again beside Tansu.
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


def _leader(admin: AdminClient, topic: str, partition: int) -> int:
    return int(admin.list_topics(timeout=10).topics[topic].partitions[partition].leader)


def _isr_complete(admin: AdminClient, topics: list[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        meta = admin.list_topics(timeout=10).topics
        short = [
            (t, p) for t in topics for p, m in meta[t].partitions.items() if len(m.isrs) < len(m.replicas)
        ]
        if not short:
            return
        assert time.monotonic() < deadline, f"partitions without a full ISR: {short}"
        time.sleep(0.5)


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_app_counts_exactly_through_a_leader_bounce(
    cluster: KafkaCluster,
    tmp_path: Path,
    unique_name: Callable[[str], str],
    scale: Scale,
    record_figures: Callable[..., None],
    guarantee: str,
) -> None:
    client = KafkaClientConfig(cluster.bootstrap_servers, BrokerProfile.REAL)
    admin = AdminClient(client.admin())
    src, out = unique_name("in"), unique_name("out")
    create_topics(client, [TopicSpec(src, 2, -1), TopicSpec(out, 2, -1)])
    app_id = unique_name("app")
    eos = guarantee == "exactly_once_v2"
    inst = Instance(
        client,
        app_id=app_id,
        state_dir=tmp_path / "state",
        in_topic=src,
        out_topic=out,
        config={
            "processing.guarantee": guarantee,
            "commit.interval.ms": 500,
            "cluster.unavailable.timeout.ms": 300_000,
        },
        log_dir=tmp_path,
    )
    reader = OutputReader(client, out, unique_name("reader"), committed=eos)
    try:
        inst.wait_running(180)
        n = scale.events
        before, during, after = (
            keyed(n // 2, scale.keys),
            keyed(n // 4, scale.keys, n),
            keyed(n // 4, scale.keys, 2 * n),
        )
        produce(client, src, before)
        reader.wait_for(lambda r: r.latest() == expected_counts(before), 120, "counts before the bounce")
        _isr_complete(admin, [src, out])

        victim = _leader(admin, src, 0)
        cluster.kill_node(victim)  # kill -9: no controlled shutdown, leaderships move after fencing
        killed = time.monotonic()
        produce(client, src, during)
        produced_after = time.monotonic() - killed
        reader.wait_for(
            lambda r: r.latest() == expected_counts(before, during), 180, "counts with a node down"
        )
        stall = time.monotonic() - killed
        new_leader = _leader(admin, src, 0)
        assert inst.proc.poll() is None, inst.log_tail(80)

        cluster.restart_node(victim)
        restarted = time.monotonic()
        produce(client, src, after)
        truth = expected_counts(before, during, after)
        reader.wait_for(lambda r: r.latest() == truth, 180, "counts after the restart")
        _isr_complete(admin, [src, out])
        rejoined = time.monotonic() - restarted
        assert inst.proc.poll() is None, inst.log_tail(80)
        inst.wait_running(60)

        stores = {k: inst.get(f"/v1/stores/counts/keys/{k}")[1]["value"] for k in truth}
        reader.poll(1.0)
        per_key: dict[str, list[int]] = {}
        for key, value, _, _ in reader.records:
            per_key.setdefault(key, []).append(value)
        missing = sum(len(set(range(1, c + 1)) - set(per_key.get(k, []))) for k, c in truth.items())
        repeated = sum(c - 1 for vs in per_key.values() for c in Counter(vs).values() if c > 1)
        record_figures(
            broker="apache kafka, 3 nodes (RF 3, min ISR 2)",
            guarantee=guarantee,
            events=len(before) + len(during) + len(after),
            killed_node=victim,
            new_leader=new_leader,
            produce_during_outage_s=round(produced_after, 1),
            stall_s=round(stall, 1),
            isr_full_after_restart_s=round(rejoined, 1),
            outputs_missing=missing,
            outputs_repeated=repeated,
        )
        print(
            f"{guarantee}: killed node {victim}, leader now {new_leader}; produce {produced_after:.1f}s, "
            f"stall {stall:.1f}s, ISR full {rejoined:.1f}s after restart, repeated {repeated}"
        )
        wrong = {k: (stores[k], c) for k, c in truth.items() if stores[k] != c}
        assert not wrong, f"store != truth for {len(wrong)} keys: {list(wrong.items())[:5]}"
        assert missing == 0, f"{missing} count values never reached the output"
        if eos:
            assert repeated == 0, f"{repeated} outputs repeated under exactly-once"
        assert new_leader != victim
    finally:
        reader.close()
        inst.stop()

"""What ``/health`` says is wrong (:meth:`OutageWatchdog.health_reasons`), from librdkafka statistics as
a 3-node cluster produced them with the broker leading partition 0 of a replication-factor-1 topic
stopped (captured by hand; the end-to-end check is tests/foundation/test_kafka_cluster.py, which needs
Apache Kafka's jars). Here: which statistics make which reason, and that they clear again."""

from __future__ import annotations

import time

from edge.runtime.connectivity import ClusterWatchdog, ConnectionLogLimiter
from edge.runtime.outage import OutageWatchdog

BROKERS = {
    "127.0.0.1:9001/1": {"nodeid": 1, "state": "UP", "source": "learned"},
    "127.0.0.1:9002/2": {"nodeid": 2, "state": "UP", "source": "learned"},
}


def _partition(leader: int, queued: int = 0) -> dict:
    return {"leader": leader, "msgq_cnt": queued, "xmit_msgq_cnt": 0, "msgs_inflight": 0}


def _stats(topic: str, partitions: dict[int, dict], brokers: dict | None = None) -> dict:
    parts = {str(p): v for p, v in partitions.items()}
    parts["-1"] = _partition(-1)  # librdkafka's unassigned queue: never a partition without a leader
    return {"brokers": BROKERS if brokers is None else brokers, "topics": {topic: {"partitions": parts}}}


class _Collector:
    undelivered: tuple[int, float, float] | None = None


def _watchdog() -> OutageWatchdog:
    return OutageWatchdog(
        ClusterWatchdog(lost_after_s=45.0, give_up_after_s=300.0),
        ConnectionLogLimiter(),
        bootstrap_servers="127.0.0.1:9001",
        exactly_once=False,
        transaction_timeout_ms=10_000,
        cluster_unavailable_timeout_ms=300_000,
        closing=lambda: False,
    )


def test_partitions_without_a_leader_and_records_waiting_for_one() -> None:
    outage, collector = _watchdog(), _Collector()
    healthy = {0: _partition(3), 1: _partition(1), 2: _partition(2)}
    outage.partitions.observe("consumer", _stats("in", healthy))
    assert outage.health_reasons(collector) == []

    outage.partitions.observe("consumer", _stats("in", {**healthy, 0: _partition(-1)}))
    outage.partitions.observe("sink producer", _stats("out", {0: _partition(-1, 130), 1: _partition(1, 2)}))
    outage.partitions.observe("producer", _stats("out", {0: _partition(-1, 7)}))
    assert outage.health_reasons(collector) == [
        "2 partitions without a leader: in[0], out[0] (their broker is down and no in-sync replica took "
        "over: replication factor 1, or every replica down)",
        "sends failing: records waiting for a partition leader (137 for out)",
    ]

    # a crashed leader keeps its leadership until it is fenced: its records wait all the same
    outage.partitions.observe("consumer", _stats("in", healthy))
    outage.partitions.observe("producer", _stats("out", {}))
    outage.partitions.observe("sink producer", _stats("out", {2: _partition(3, 5)}))
    assert outage.health_reasons(collector) == [
        "sends failing: records waiting for a partition leader (5 for out)"
    ]

    # a commit waiting on sends (at-least-once: the flush gives up, and the instance stops, after 60 s)
    collector.undelivered = (1234, time.monotonic() - 12.4, 60.0)
    assert outage.health_reasons(collector)[-1] == (
        "sends failing: a commit has waited 12 s for 1234 records to be delivered (the instance stops "
        "after 60 s)"
    )

    # the leader is back: the next statistics clear everything
    collector.undelivered = None
    outage.partitions.observe("sink producer", _stats("out", {2: _partition(2)}))
    assert outage.health_reasons(collector) == []


def test_no_broker_answering_is_a_reason_too() -> None:
    outage = _watchdog()
    down = {k: {**b, "state": "DOWN"} for k, b in BROKERS.items()}
    outage.cluster.observe_stats(down)
    (reason,) = outage.health_reasons(None)
    assert reason.startswith("no broker of the Kafka cluster at 127.0.0.1:9001 has answered for ")
    outage.cluster.observe_stats(BROKERS)
    assert outage.health_reasons(None) == []

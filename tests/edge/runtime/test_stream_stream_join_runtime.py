"""Stream-stream joins on the embedded broker: an inner and a left join of the same two topics, exact
outputs (key, value, timestamp, order), join stores' changelog topics created."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient

from edge.dsl import Consumed, Produced, StreamJoined, StreamsBuilder
from edge.dsl.windows import JoinWindows
from edge.kafka import KafkaClientConfig
from edge.runtime import State, StreamsApp
from edge.serde import Serdes

pytestmark = [pytest.mark.broker, pytest.mark.timeout(120)]

S = Serdes.string()


def _produce(client: KafkaClientConfig, topic: str, records: list[tuple[str, str, int]]) -> None:
    p = Producer(client.producer(partitioner="murmur2_random"))
    for key, value, ts in records:
        p.produce(topic, value.encode(), key.encode(), timestamp=ts)
    assert p.flush(30) == 0


def _read(client: KafkaClientConfig, topic: str, group: str, n: int, timeout: float = 60) -> list:
    c = Consumer(client.consumer(group, **{"auto.offset.reset": "earliest", "enable.auto.commit": False}))
    c.subscribe([topic])
    out: list[tuple[str, str, int]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < n and time.monotonic() < deadline:
            for m in c.consume(100, 0.2):
                if m.error() is not None:
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        raise AssertionError(str(m.error()))
                    continue
                out.append((m.key().decode(), m.value().decode(), m.timestamp()[1]))
        # nothing more than expected arrives
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            out.extend(
                (m.key().decode(), m.value().decode(), m.timestamp()[1])
                for m in c.consume(100, 0.2)
                if m.error() is None
            )
    finally:
        c.close()
    return out


def test_inner_and_left_stream_stream_joins_on_the_broker(
    kafka_broker, make_topic, unique_name, tmp_path: Path
):
    left, right = make_topic("left", 1), make_topic("right", 1)
    inner_out, left_out = make_topic("inner", 1), make_topic("leftout", 1)
    # produced before the app starts, so the task sees both partitions buffered and processes in
    # timestamp order: L1, L2 (1000), R1 (1050), R9 (1500), L3 (5000), R3 (5010)
    _produce(kafka_broker, left, [("k1", "L1", 1000), ("k2", "L2", 1000), ("k3", "L3", 5000)])
    _produce(kafka_broker, right, [("k1", "R1", 1050), ("k9", "R9", 1500), ("k3", "R3", 5010)])

    b = StreamsBuilder()
    s1 = b.stream(left, Consumed.with_(S, S))
    s2 = b.stream(right, Consumed.with_(S, S))
    windows = JoinWindows.of_time_difference_with_no_grace(100)
    s1.join(s2, lambda a, c: f"{a}+{c}", windows, StreamJoined.with_(S, S, S)).to(
        inner_out, Produced.with_(S, S)
    )
    s1.left_join(s2, lambda a, c: f"{a}+{c}", windows, StreamJoined.with_(S, S, S).with_store_name("lj")).to(
        left_out, Produced.with_(S, S)
    )
    app_id = unique_name("app")
    app = StreamsApp(
        b.build(),
        {
            "application.id": app_id,
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "broker.profile": kafka_broker.profile.value,
            "state.dir": str(tmp_path),
            "commit.interval.ms": 100,
            "max.task.idle.ms": 500,
            "emit.interval.ms.kstreams.outer.join.spurious.results.fix": 0,
        },
    )
    app.start()
    try:
        assert app.wait_until_running(60)
        assert _read(kafka_broker, inner_out, unique_name("r1"), 2) == [
            ("k1", "L1+R1", 1050),
            ("k3", "L3+R3", 5010),
        ]
        assert _read(kafka_broker, left_out, unique_name("r2"), 3) == [
            ("k1", "L1+R1", 1050),
            ("k2", "L2+None", 1000),
            ("k3", "L3+R3", 5010),
        ]
        admin = AdminClient(kafka_broker.admin())
        topics = set(admin.list_topics(timeout=10).topics)
        for store in (
            "KSTREAM-JOINTHIS-0000000004-store",
            "KSTREAM-JOINOTHER-0000000005-store",
            "lj-this-join-store",
            "lj-outer-other-join-store",
            "lj-left-shared-join-store",
        ):
            assert f"{app_id}-{store}-changelog" in topics
        assert app.state is State.RUNNING
    finally:
        app.close(20)

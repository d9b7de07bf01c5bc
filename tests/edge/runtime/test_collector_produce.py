"""``KafkaCollector`` on a real broker: what it produces is what was sent, with positional ``produce``
arguments (key, value, partition, timestamp, headers land where they belong), and the delivery reports
it asks for are the ones the commit needs.

At-least-once, changelog records report only errors: every commit ends a written changelog partition
with a marker, whose offset is the checkpoint's -- so ``changelog_offsets`` holds the markers' offsets.
Exactly-once writes no markers, so every changelog record reports its offset. A failed record fails the
flush in both cases, also when sink records have a producer of their own (at-least-once: one that
reports only failed deliveries).
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from edge.runtime.producer import KafkaCollector, ProducerSendError

pytestmark = [pytest.mark.broker, pytest.mark.timeout(120)]


def _producer(kafka_broker: Any, **extra: Any) -> Producer:
    return Producer(
        kafka_broker.producer(
            **{"linger.ms": 5, "acks": "all", "enable.idempotence": True, "partitioner": "murmur2_random"},
            **extra,
        )
    )


def _read(kafka_broker: Any, topic: str, partitions: int, expected: int) -> list[Any]:
    consumer = Consumer(
        kafka_broker.consumer(None, **{"group.id": f"{topic}-reader", "enable.auto.commit": False})
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[Any] = []
    try:
        for _ in range(200):
            for m in consumer.consume(100, 0.2):
                if m.error() is None:
                    out.append(m)
            if len(out) >= expected:
                break
    finally:
        consumer.close()
    return out


def _sink_producer(kafka_broker: Any, **extra: Any) -> Producer:
    """What the runtime gives sink records under at-least-once: failed deliveries only are reported."""
    return _producer(kafka_broker, **{"delivery.report.only.error": True}, **extra)


@pytest.mark.parametrize("own_sink_producer", [False, True])
def test_sink_and_changelog_records_arrive_as_sent(
    kafka_broker: Any, make_topic: Any, own_sink_producer: bool
) -> None:
    out = make_topic("out", partitions=2)
    changelog = make_topic("changelog", partitions=2)
    collector = KafkaCollector(
        _producer(kafka_broker), sink_producer=_sink_producer(kafka_broker) if own_sink_producer else None
    )
    ts = 1_760_000_000_000
    collector.send(out, b"k1", b"v1", ts, [("h", b"x")], None)
    collector.send(out, b"k2", None, ts + 1, None, 1)
    collector.send(out, None, b"v3", ts + 2, None, 0)
    collector.send_changelog(changelog, 1, b"c1", b"one", ts + 3)
    collector.send_changelog(changelog, 1, b"c2", None, ts + 4)
    collector.send_marker(changelog, 1, b"\x00m", b"{}")
    collector.flush(30)

    sink = {m.key(): m for m in _read(kafka_broker, out, 2, 3)}
    assert sorted(k or b"" for k in sink) == [b"", b"k1", b"k2"]
    assert sink[b"k1"].value() == b"v1" and sink[b"k1"].timestamp()[1] == ts
    assert sink[b"k1"].headers() == [("h", b"x")]
    assert (
        sink[b"k2"].value() is None and sink[b"k2"].partition() == 1 and sink[b"k2"].timestamp()[1] == ts + 1
    )
    assert sink[None].value() == b"v3" and sink[None].partition() == 0

    logged = _read(kafka_broker, changelog, 2, 3)
    assert [(m.partition(), m.key(), m.value()) for m in logged] == [
        (1, b"c1", b"one"),
        (1, b"c2", None),
        (1, b"\x00m", b"{}"),
    ]
    assert [m.timestamp()[1] for m in logged[:2]] == [ts + 3, ts + 4]
    # at-least-once: the marker's offset is the one recorded (the last record of the partition)
    assert collector.changelog_offsets == {(changelog, 1): logged[2].offset()}
    assert collector.marker_due == set()


def test_exactly_once_changelog_records_report_their_offsets(kafka_broker: Any, make_topic: Any) -> None:
    changelog = make_topic("changelog", partitions=2)
    # the flag only decides which delivery reports are asked for; no transaction is needed for that
    collector = KafkaCollector(_producer(kafka_broker), exactly_once=True)
    collector.send_changelog(changelog, 0, b"a", b"1", 5)
    collector.send_changelog(changelog, 1, b"b", b"2", 6)
    collector.send_changelog(changelog, 1, b"c", b"3", 7)
    collector.flush(30)
    logged = {(m.partition(), m.key()): m.offset() for m in _read(kafka_broker, changelog, 2, 3)}
    assert collector.changelog_offsets == {
        (changelog, 0): logged[(0, b"a")],
        (changelog, 1): logged[(1, b"c")],
    }


@pytest.mark.parametrize("kind", ["sink", "sink-own-producer", "changelog"])
def test_a_failed_record_fails_the_flush(kafka_broker: Any, unique_name: Any, kind: str) -> None:
    missing = unique_name("missing")  # never created (the broker profile does not auto-create topics)
    timeout = {"message.timeout.ms": 3000}
    own = _sink_producer(kafka_broker, **timeout) if kind == "sink-own-producer" else None
    collector = KafkaCollector(_producer(kafka_broker, **timeout), sink_producer=own)
    if kind.startswith("sink"):
        collector.send(missing, b"k", b"v", 1, None, 0)
    else:
        collector.send_changelog(missing, 0, b"k", b"v", 1)
    with pytest.raises(ProducerSendError):
        collector.flush(30)


class _CountingCollector(KafkaCollector):
    delivery_reports = 0

    def _on_delivery(self, err: Any, msg: Any) -> None:
        self.delivery_reports += 1
        super()._on_delivery(err, msg)


def test_an_own_sink_producer_reports_no_successful_delivery(kafka_broker: Any, make_topic: Any) -> None:
    """The point of the sink producer: no Python call per acknowledged output record."""
    out = make_topic("out", partitions=2)
    shared = _CountingCollector(_producer(kafka_broker))
    own = _CountingCollector(_producer(kafka_broker), sink_producer=_sink_producer(kafka_broker))
    for collector in (shared, own):
        for i in range(200):
            collector.send(out, b"k%d" % i, b"v", 1_760_000_000_000 + i, None)
        collector.flush(30)
        assert collector.sent == 200
    assert shared.delivery_reports == 200
    assert own.delivery_reports == 0
    assert len(_read(kafka_broker, out, 2, 400)) == 400

"""``fetch_ready`` on a real broker: records already fetched are handed over at once (Kafka's ``poll``),
not after ``consume(n, timeout)`` waited for ``n`` of them or for its whole timeout."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from edge.runtime.fetch import fetch_ready
from tests.edge.runtime.harness import produce

pytestmark = [pytest.mark.broker, pytest.mark.timeout(60)]

#: far longer than any fetch: a call that takes anywhere near this long waited for nothing
LONG_S = 8.0


def _consumer(kafka_broker, topic: str, group: str) -> Consumer:
    consumer = Consumer(kafka_broker.consumer(group, **{"enable.auto.commit": False}))
    consumer.assign([TopicPartition(topic, 0, 0)])
    return consumer


def _until_some(consumer: Consumer, max_records: int) -> tuple[list, float]:
    """Call fetch_ready until it returns records (the first fetch may still be on its way); the
    duration of the call that returned them."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        started = time.monotonic()
        msgs = fetch_ready(consumer, max_records, LONG_S)
        if msgs:
            return msgs, time.monotonic() - started
    raise AssertionError("no records within 30 s")


def test_hands_over_fetched_records_without_waiting_for_a_full_batch(kafka_broker, make_topic, unique_name):
    topic = make_topic("in")
    produce(kafka_broker, topic, [(f"k{i}", i) for i in range(5)])
    consumer = _consumer(kafka_broker, topic, unique_name("g"))
    try:
        msgs, took = _until_some(consumer, 1000)
        # consume(1000, LONG_S) would have returned only after LONG_S: 5 records never fill the batch
        assert took < LONG_S / 2, f"fetch_ready waited {took:.2f}s with records available"
        seen = [m.offset() for m in msgs]
        while len(seen) < 5:
            more = fetch_ready(consumer, 1000, 1.0)
            seen += [m.offset() for m in more]
        assert seen == [0, 1, 2, 3, 4], "every record, in offset order"
        assert all(m.error() is None for m in msgs)
    finally:
        consumer.close()


def test_batches_are_bounded_and_nothing_is_lost(kafka_broker, make_topic, unique_name):
    topic = make_topic("in")
    produce(kafka_broker, topic, [(f"k{i}", i) for i in range(250)])
    consumer = _consumer(kafka_broker, topic, unique_name("g"))
    try:
        offsets: list[int] = []
        deadline = time.monotonic() + 30
        while len(offsets) < 250 and time.monotonic() < deadline:
            msgs = fetch_ready(consumer, 100, 1.0)
            assert len(msgs) <= 100
            offsets += [m.offset() for m in msgs]
        assert offsets == list(range(250))
    finally:
        consumer.close()


def test_waits_up_to_the_timeout_when_nothing_comes(kafka_broker, make_topic, unique_name):
    topic = make_topic("empty")
    consumer = _consumer(kafka_broker, topic, unique_name("g"))
    try:
        started = time.monotonic()
        assert fetch_ready(consumer, 1000, 0.5) == []
        assert time.monotonic() - started >= 0.4
    finally:
        consumer.close()

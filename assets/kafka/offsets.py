"""What a Kafka topic holds right now: end offsets, record counts and each consumer group's lag.

Asked through one consumer (watermarks) and one admin client (groups and their committed offsets),
never by reading records, so observing every topic of the project costs a few round trips. Topics are
looked up in the broker's full topic list first: a metadata request naming a missing topic makes the
embedded broker create it, and an observation must never create what it observes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from edge.kafka import BrokerProfile, KafkaClientConfig


@dataclass(frozen=True)
class TopicOffsets:
    """Per-partition log start and end offsets of one topic (``exists=False``: not on the broker)."""

    topic: str
    exists: bool
    beginning: dict[int, int] = field(default_factory=dict)
    end: dict[int, int] = field(default_factory=dict)

    @property
    def partitions(self) -> int:
        return len(self.end)

    @property
    def records(self) -> int:
        """Records the topic holds: the sum over partitions of end - beginning (compaction aside)."""
        return sum(max(0, e - self.beginning.get(p, 0)) for p, e in self.end.items())

    @property
    def end_total(self) -> int:
        return sum(self.end.values())


def topic_offsets(
    client: KafkaClientConfig, topics: Iterable[str], timeout_s: float = 10.0, exact: bool | None = None
) -> dict[str, TopicOffsets]:
    """Start and end offsets of every partition of ``topics``; missing topics come back as not existing.

    The embedded broker (Tansu) reports a partition's high watermark as the base offset of its last
    record batch + 1, so a batch of 5 records at offset 0 shows as 1. ``exact`` (default: on for the
    embedded profile) reads that last batch of each non-empty partition to find its true end: one
    fetch per partition, never the whole log. Any Kafka reports the end exactly.
    """
    from confluent_kafka import Consumer, TopicPartition

    if exact is None:
        exact = client.profile is BrokerProfile.EMBEDDED
    consumer = Consumer(
        client.consumer(
            f"streamhouse-observe-{uuid.uuid4().hex[:8]}",
            **{"enable.auto.commit": False, "enable.partition.eof": True},
        )
    )
    try:
        listed = consumer.list_topics(timeout=timeout_s).topics
        out: dict[str, TopicOffsets] = {}
        for topic in topics:
            meta = listed.get(topic)
            if meta is None or meta.error is not None or not meta.partitions:
                out[topic] = TopicOffsets(topic, exists=False)
                continue
            beginning: dict[int, int] = {}
            end: dict[int, int] = {}
            for p in sorted(meta.partitions):
                low, high = consumer.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=timeout_s, cached=False
                )
                beginning[p], end[p] = max(low, 0), max(high, 0)
            out[topic] = TopicOffsets(topic, exists=True, beginning=beginning, end=end)
        if exact:
            _read_last_batches(consumer, out, timeout_s)
        return out
    finally:
        consumer.close()


def _read_last_batches(consumer: Any, offsets: dict[str, TopicOffsets], timeout_s: float) -> None:
    """Raise each partition's end to one past the last record of the batch at ``end - 1``."""
    from confluent_kafka import KafkaError, TopicPartition

    pending = {
        (o.topic, p): high
        for o in offsets.values()
        if o.exists
        for p, high in o.end.items()
        if high > o.beginning.get(p, 0)
    }
    if not pending:
        return
    consumer.assign([TopicPartition(t, p, high - 1) for (t, p), high in pending.items()])
    deadline = time.monotonic() + timeout_s
    try:
        while pending and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 0.2):
                key = (msg.topic(), msg.partition())
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        pending.pop(key, None)
                    continue
                end = offsets[key[0]].end
                end[key[1]] = max(end[key[1]], msg.offset() + 1)
    finally:
        consumer.unassign()


def consumer_lag(
    client: KafkaClientConfig, offsets: dict[str, TopicOffsets], timeout_s: float = 10.0
) -> dict[str, dict[str, int]]:
    """``{topic: {group: records behind the end}}`` for every group with committed offsets on a topic.

    A partition the group never committed counts from the log start (that is what it would read).
    """
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(client.admin())
    listing = admin.list_consumer_groups(request_timeout=timeout_s).result(timeout=timeout_s)
    groups = sorted(g.group_id for g in listing.valid if not g.group_id.startswith("streamhouse-observe-"))
    lag: dict[str, dict[str, int]] = {}
    for group in groups:
        future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
        committed: dict[tuple[str, int], int] = {}
        for tp in future.result(timeout=timeout_s).topic_partitions or []:
            if tp.error is None and tp.offset >= 0:
                committed[(tp.topic, tp.partition)] = tp.offset
        for topic, off in offsets.items():
            if not off.exists or not any(t == topic for t, _ in committed):
                continue
            lag.setdefault(topic, {})[group] = sum(
                max(0, end - committed.get((topic, p), off.beginning.get(p, 0))) for p, end in off.end.items()
            )
    return lag

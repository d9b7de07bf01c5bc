"""Where the demo's topics end, and whether bronze and the edge apps have read further than that.

Reads every partition to its end rather than trusting watermarks (the embedded broker's are not
reliable). ``stale_topics`` is how the demo notices a broker that lost or recreated its topics before
it changes anything; ``pending_records`` is how much an edge app has to catch up on this run.
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, KafkaError, TopicPartition

from edge.kafka import KafkaClientConfig
from edge.kafka.admin import topic_partitions
from orchestration.settings import Settings


def read_to_end(
    client: KafkaClientConfig, topic: str, start: dict[int, int] | None = None
) -> tuple[int, dict[int, int]] | None:
    """(records from ``start`` offsets to the end, next offset per partition), or None if ``topic`` is
    missing. Reads every partition to EOF: the embedded broker's watermarks are not reliable."""
    from confluent_kafka.admin import AdminClient

    partitions = topic_partitions(AdminClient(client.admin()), topic)
    if partitions is None:
        return None
    start = start or {}
    consumer = Consumer(
        client.consumer(
            f"count-{uuid.uuid4().hex}", **{"enable.partition.eof": True, "enable.auto.commit": False}
        )
    )
    consumer.assign([TopicPartition(topic, p, max(0, start.get(p, 0))) for p in range(partitions)])
    ends = {p: max(0, start.get(p, 0)) for p in range(partitions)}
    total, at_eof, deadline = 0, set(), time.monotonic() + 120
    try:
        while len(at_eof) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"did not reach the end of {topic} within 120s")
            for msg in consumer.consume(1000, 0.2):
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        at_eof.add(msg.partition())
                        ends[msg.partition()] = max(ends[msg.partition()], msg.offset())
                        continue
                    if msg.error().code() == KafkaError._AUTO_OFFSET_RESET:
                        # the start offset is past the partition's end: nothing new there
                        at_eof.add(msg.partition())
                        continue
                    raise RuntimeError(f"consume error on {topic}[{msg.partition()}]: {msg.error()}")
                total += 1
                ends[msg.partition()] = msg.offset() + 1
    finally:
        consumer.close()
    return total, ends


def count_records(client: KafkaClientConfig, topic: str) -> int:
    """Records in ``topic`` (0 if it does not exist)."""
    read = read_to_end(client, topic)
    return read[0] if read else 0


def group_offsets(client: KafkaClientConfig, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The consumer group's committed offset per partition (partitions it never committed left out)."""
    consumer = Consumer(client.consumer(group, **{"enable.auto.commit": False}))
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in tps if tp.offset >= 0}


def stale_topics(settings: Settings, client: KafkaClientConfig, prefix: str) -> list[str]:
    """Topics that bronze has read further than they reach: the broker lost them (a restarted
    memory-only broker) or they were recreated. Ingesting them again would skip or misplace records."""
    from assets.bronze.assets import BRONZE_TOPICS
    from assets.bronze.ingest import committed_offsets

    stale: list[str] = []
    for topic in BRONZE_TOPICS:
        committed = committed_offsets(str(settings.lake_root / "bronze" / topic), f"{prefix}{topic}")
        if not any(committed.values()):
            continue
        read = read_to_end(client, f"{prefix}{topic}")
        if read is None:
            stale.append(f"{prefix}{topic} (missing; bronze read {sum(committed.values()):,} records)")
            continue
        _, ends = read
        behind = [p for p, offset in committed.items() if offset > ends.get(p, 0)]
        if behind:
            p = behind[0]
            stale.append(
                f"{prefix}{topic} (partition {p} ends at {ends.get(p, 0)}, bronze read to {committed[p]})"
            )
    return stale


def pending_records(client: KafkaClientConfig, group: str, topic: str) -> int:
    """Records of ``topic`` the group has not committed yet (what the app will read this run)."""
    read = read_to_end(client, topic)
    if read is None:
        return 0
    _, ends = read
    committed = group_offsets(client, group, topic, len(ends))
    again = read_to_end(client, topic, committed)
    return again[0] if again else 0

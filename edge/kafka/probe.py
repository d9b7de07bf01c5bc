"""Broker capability probe: does the broker hide aborted transactional records from read_committed
consumers?

Exactly-once v2 relies on it twice: outputs of an aborted transaction must be invisible downstream, and
a restore must never apply a changelog record of an aborted transaction. The embedded Tansu broker
fails this probe (it shows aborted records), so exactly-once there is weaker than on Apache Kafka: the
runtime runs the probe at start under ``processing.guarantee=exactly_once_v2`` and warns.

The probe produces one record in a transaction, aborts it, commits a second one, and reads the topic
``read_committed`` to the committed record: it passes when the aborted record is not seen.
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, KafkaError, Producer

from edge.kafka.admin import TopicSpec, create_topics
from edge.kafka.profile import KafkaClientConfig


def broker_hides_aborted_records(
    client: KafkaClientConfig, topic: str | None = None, timeout_s: float = 20.0
) -> bool:
    """True when read_committed consumers do not see aborted records (see the module doc).

    ``topic`` (created with one partition if missing) defaults to a fresh ``eos-probe-<uuid>`` topic.
    Raises the client's error when the probe cannot run (no broker, no permission to create topics).
    """
    topic = topic or f"eos-probe-{uuid.uuid4().hex[:8]}"
    create_topics(client, [TopicSpec(topic, 1)])
    nonce = uuid.uuid4().hex[:8].encode()
    aborted, committed = b"aborted-" + nonce, b"committed-" + nonce
    p = Producer(client.producer(**{"transactional.id": f"eos-probe-{uuid.uuid4().hex[:8]}"}))
    p.init_transactions(timeout_s)
    p.begin_transaction()
    p.produce(topic, aborted, b"probe", partition=0)
    p.flush(timeout_s)
    p.abort_transaction(timeout_s)
    p.begin_transaction()
    p.produce(topic, committed, b"probe", partition=0)
    p.commit_transaction(timeout_s)
    c = Consumer(
        client.consumer(
            f"eos-probe-{uuid.uuid4().hex[:8]}",
            **{
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.partition.eof": True,
                "enable.auto.commit": False,
            },
        )
    )
    c.subscribe([topic])
    seen: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF and committed in seen:
                    break
                continue
            seen.append(m.value())
    finally:
        c.close()
    if committed not in seen:
        raise TimeoutError(f"the probe did not read its committed record from {topic} in {timeout_s:.0f}s")
    return aborted not in seen

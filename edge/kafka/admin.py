"""Explicit topic creation: the embedded broker must never auto-create (topics need retention set)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from edge.errors import StreamhouseError
from edge.kafka.profile import KafkaClientConfig


class TopicAdminError(StreamhouseError):
    pass


#: ``replication_factor`` meaning "the broker's ``default.replication.factor``" (CreateTopics v4, Kafka
#: 2.4+): what Kafka Streams' ``replication.factor`` defaults to since 3.0, so a topic gets a cluster's
#: replication without being told the cluster's size. Apache Kafka and the embedded Tansu both take it
#: (Tansu: one replica).
BROKER_DEFAULT_REPLICATION = -1

#: CreateTopics errors to -1 from a broker older than 2.4, or whose default exceeds the brokers up
_NO_DEFAULT_REPLICATION = frozenset(
    {
        KafkaError.INVALID_REPLICATION_FACTOR,
        KafkaError.UNSUPPORTED_VERSION,
        KafkaError.INVALID_REQUEST,
        KafkaError._UNSUPPORTED_FEATURE,
    }
)


@dataclass(frozen=True)
class TopicSpec:
    """A topic to create. ``replication_factor`` -1 (the default) lets the broker choose its
    ``default.replication.factor``: 3 on a 3-node cluster, 1 on a single broker, so a topic created
    without one survives a broker down wherever the cluster is set up to."""

    name: str
    partitions: int = 1
    replication_factor: int = BROKER_DEFAULT_REPLICATION
    config: Mapping[str, str] = field(default_factory=dict)


def create_topics(
    client: KafkaClientConfig, specs: Iterable[TopicSpec], *, timeout_s: float = 30.0
) -> list[str]:
    """Create the topics that do not exist yet; returns the names created.

    An existing topic with fewer partitions than asked for is an error (co-partitioning would break);
    more is accepted because a real cluster's topics are often over-provisioned.
    """
    specs = list(specs)
    if not specs:
        return []
    admin = AdminClient(client.admin())
    try:
        existing = admin.list_topics(timeout=timeout_s).topics
    except KafkaException as exc:
        raise TopicAdminError(f"cannot reach Kafka at {client.bootstrap_servers}: {exc}") from exc
    to_create = []
    for spec in specs:
        meta = existing.get(spec.name)
        if meta is None:
            to_create.append(
                NewTopic(
                    spec.name,
                    num_partitions=spec.partitions,
                    replication_factor=spec.replication_factor,
                    config=client.topic_config(spec.config),
                )
            )
        elif len(meta.partitions) < spec.partitions:
            raise TopicAdminError(
                f"topic {spec.name!r} exists with {len(meta.partitions)} partitions but {spec.partitions} "
                "are required; recreate it or use a new name"
            )
    if not to_create:
        return []
    futures = admin.create_topics(to_create, request_timeout=timeout_s)
    replication = {t.topic: t.replication_factor for t in to_create}
    created = []
    for name, future in futures.items():
        try:
            future.result()
            created.append(name)
        except KafkaException as exc:
            code = exc.args[0].code() if exc.args else None
            if code == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            hint = ""
            if replication[name] == BROKER_DEFAULT_REPLICATION and code in _NO_DEFAULT_REPLICATION:
                hint = (
                    " (no replication factor given, so the broker's default.replication.factor was asked "
                    "for: more replicas than brokers up, or a broker older than Kafka 2.4; give one, e.g. "
                    "--replication-factor 1, or replication.factor=1 for an edge app)"
                )
            raise TopicAdminError(f"could not create topic {name!r}: {exc}{hint}") from exc
    _wait_visible(admin, {t.topic: t.num_partitions for t in to_create}, timeout_s)
    return created


def _wait_visible(admin: AdminClient, want: Mapping[str, int], timeout_s: float) -> None:
    """Wait until the broker's metadata shows every new topic with a leader for each partition.

    Apache Kafka acknowledges CreateTopics once the controller has created a topic; the brokers learn
    of it a moment later, and a client asking in between (the runtime checking its source topics, a
    producer) would be told it does not exist. Tansu shows it at once, so this returns at once there.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        topics = admin.list_topics(timeout=timeout_s).topics
        missing = [
            name
            for name, partitions in want.items()
            if (meta := topics.get(name)) is None
            or meta.error is not None
            or len(meta.partitions) < partitions
            or any(p.leader < 0 for p in meta.partitions.values())
        ]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise TopicAdminError(f"created topic(s) {missing} not in the metadata after {timeout_s}s")
        time.sleep(0.05)


def topic_partitions(handle: Any, topic: str, *, timeout_s: float = 10.0) -> int | None:
    """Partition count of ``topic``, or None if it does not exist.

    Lists *all* topics on purpose: a metadata request naming a topic lets a broker create it with its
    default partition count (Kafka with ``auto.create.topics.enable``, Tansu), which would turn a typo into a
    new 4-partition topic; the platform's producers and consumers also set ``allow.auto.create.topics=false``
    (:mod:`edge.kafka.profile`).
    ``handle`` is any confluent-kafka client (Producer, Consumer, AdminClient).
    """
    meta = handle.list_topics(timeout=timeout_s).topics.get(topic)
    if meta is None or meta.error is not None or not meta.partitions:
        return None
    return len(meta.partitions)

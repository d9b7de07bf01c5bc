"""Client settings for the two broker profiles: the embedded Tansu broker and a real Kafka cluster.

The profile is always an explicit setting, never guessed from the address: the embedded broker needs
settings that would be wrong for a real cluster (it completes a group join only after
``session.timeout.ms / 2``, so a short session timeout keeps rebalances fast; it must never auto-create
topics because every topic needs explicit retention), while a real cluster gets Kafka's normal defaults
plus whatever SASL/TLS settings the user passes through.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from edge.kafka.client_log import CLIENT_LOG


class BrokerProfile(StrEnum):
    EMBEDDED = "embedded"
    REAL = "real"


#: Measured on Tansu: without these a consumer-group join takes 22+ s and fetches idle 500 ms.
EMBEDDED_CONSUMER_DEFAULTS: Mapping[str, Any] = {
    "session.timeout.ms": 2000,
    "heartbeat.interval.ms": 300,
    "fetch.wait.max.ms": 10,
    "partition.assignment.strategy": "range",
    "allow.auto.create.topics": False,
}

#: Every producer and consumer: topics are created explicitly, never by a metadata request.
NO_AUTO_CREATE: Mapping[str, Any] = {"allow.auto.create.topics": False}

#: Every consumer, on any broker. librdkafka stops prefetching a partition once ``queued.min.messages``
#: (100k) records wait locally and then looks again only after ``fetch.queue.backoff.ms``, 1 s by
#: default: a consumer that drains its queue faster than that sits idle for the rest of the second.
#: Measured on the embedded broker, consuming 1M records while producing them on: 150k records/s with
#: the default, 1.0M/s with 10 ms (a bare consume: 285k/s vs 2M/s). The Java consumer has no such
#: pause. Memory stays bounded by the same queue limits.
CONSUMER_DEFAULTS: Mapping[str, Any] = {"fetch.queue.backoff.ms": 10}

#: Topics on the embedded broker always get explicit retention (it applies none by itself).
EMBEDDED_TOPIC_DEFAULTS: Mapping[str, str] = {
    "retention.ms": str(7 * 24 * 3600 * 1000),
    "retention.bytes": "-1",
}


@dataclass(frozen=True)
class KafkaClientConfig:
    """Builds librdkafka configs for consumers, producers and admin clients of one cluster."""

    bootstrap_servers: str
    profile: BrokerProfile = BrokerProfile.EMBEDDED
    #: Passed through to every client unchanged (security.protocol, sasl.*, ssl.*, client.id, ...).
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: ...and to admin clients only (Kafka Streams' ``admin.`` settings)
    admin_extra: Mapping[str, Any] = field(default_factory=dict)

    def common(self) -> dict[str, Any]:
        # librdkafka's lines through Python's logging (edge.kafka.client_log), not raw on stderr; a
        # ``logger`` in ``extra`` (the edge runtime's connection log) wins.
        return {"bootstrap.servers": self.bootstrap_servers, "logger": CLIENT_LOG, **self.extra}

    def admin(self, **overrides: Any) -> dict[str, Any]:
        return {**self.common(), **self.admin_extra, **overrides}

    def producer(self, **overrides: Any) -> dict[str, Any]:
        # A producer's metadata request for a missing topic would otherwise let the broker create it with
        # its default partition count (Kafka's auto.create.topics.enable, Tansu always): after a broker
        # restart that silently re-created internal topics with the wrong partition counts.
        return {**NO_AUTO_CREATE, **self.common(), **overrides}

    def consumer(self, group_id: str | None = None, **overrides: Any) -> dict[str, Any]:
        conf: dict[str, Any] = {**NO_AUTO_CREATE, **CONSUMER_DEFAULTS, **self.common()}
        if self.profile is BrokerProfile.EMBEDDED:
            conf.update(EMBEDDED_CONSUMER_DEFAULTS)
        if group_id is not None:
            conf["group.id"] = group_id
        conf.update(overrides)
        return conf

    def topic_config(self, config: Mapping[str, str] | None = None) -> dict[str, str]:
        merged = dict(EMBEDDED_TOPIC_DEFAULTS) if self.profile is BrokerProfile.EMBEDDED else {}
        merged.update(config or {})
        return merged


def client_property_scope(name: str, value: Any) -> tuple[str, ...] | None:
    """The clients librdkafka applies ``name`` to: ``("consumer",)``, ``("producer",)`` or every client
    (consumer, producer and admin); None when it is no librdkafka property. An invalid value raises
    ``ValueError`` naming the property and librdkafka's reason.

    librdkafka validates only when a client is built, deep inside whatever command first connects, and
    reports an alias (``acks`` -> ``request.required.acks``); asking it here, property by property, names
    the user's key. It also says when a property belongs to the other kind of client. A client without
    ``bootstrap.servers`` opens no connection; its configuration warnings go to a private logger.
    """
    from confluent_kafka import Consumer, KafkaException, Producer

    notes = _Notes()
    try:
        producer = Producer({name: value, "logger": notes})
        producer.poll(0)  # serves the configuration warnings to ``notes``
        consumer = Consumer({name: value, "group.id": "streamhouse-setting-probe", "logger": notes})
        consumer.poll(0)
        consumer.close()
    except KafkaException as exc:
        error = exc.args[0] if exc.args else exc
        reason = error.str() if hasattr(error, "str") else str(error)
        if "No such configuration property" in reason:
            return None
        if "Invalid value for configuration property" in reason:
            raise ValueError(f"{name}={value!r}: {reason}") from None
        # valid on its own but not alone (SASL_SSL wants its mechanism): the whole set is judged by
        # librdkafka when a client is built with it
        return ALL_CLIENTS
    if notes.saw("is a consumer property and will be ignored by this producer"):
        return ("consumer",)
    if notes.saw("is a producer property and will be ignored by this consumer"):
        return ("producer",)
    return ALL_CLIENTS


def check_client_property(name: str, value: Any) -> None:
    """Raise ``ValueError`` naming ``name`` when librdkafka does not know it or rejects its value."""
    if client_property_scope(name, value) is None:
        raise ValueError(f'{name}={value!r}: No such configuration property: "{name}"')


ALL_CLIENTS = ("consumer", "producer", "admin")


class _Notes:
    """A ``logging.Logger`` stand-in that keeps librdkafka's configuration warnings (for the probes)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def log(self, _level: int, fmt: str, *args: Any) -> None:
        self.lines.append(fmt % args if args else fmt)

    def saw(self, text: str) -> bool:
        return any(text in line for line in self.lines)


#: the cluster id the embedded broker (Tansu) reports unless started with another one
TANSU_CLUSTER_ID = "tansu_cluster"


def detect_profile(
    bootstrap_servers: str, extra: Mapping[str, Any] | None = None, timeout_s: float = 10.0
) -> BrokerProfile:
    """The profile for a cluster nobody named one for: ``embedded`` when it reports Tansu's cluster id,
    else ``real`` (Kafka's defaults, right for any real cluster and safe for any other).

    Asked of the cluster itself rather than guessed from an address: the embedded tuning (a 2 s session,
    range assignment) is wrong on a real cluster, and Kafka's defaults only slow Tansu's group joins.
    An unreachable cluster gets ``real``.
    """
    from confluent_kafka.admin import AdminClient

    conf = {"bootstrap.servers": bootstrap_servers, **(extra or {}), "logger": _Notes()}
    try:
        cluster_id = AdminClient(conf).list_topics(timeout=timeout_s).cluster_id
    except Exception:  # no answer: Kafka's defaults are the safe choice
        return BrokerProfile.REAL
    return BrokerProfile.EMBEDDED if cluster_id == TANSU_CLUSTER_ID else BrokerProfile.REAL

"""Local brokers for runs and tests: a single-node Apache Kafka run from jars that ``make install``
resolves with Maven (the default shared broker, topics on disk) and the embedded Kafka-compatible Tansu
broker (topics in memory; the tests' default, and the fallback without Kafka's jars). See ``local``.
``cluster.KafkaCluster`` runs N Apache Kafka nodes for replication and failover.

Real deployments point ``bootstrap.servers`` at any Kafka cluster; this package only exists so that a
fresh machine can run the whole platform with no Docker.
"""

from edge.broker.binary import BrokerBinaryNotFoundError, resolve_tansu_binary
from edge.broker.cluster import KafkaCluster
from edge.broker.embedded import (
    BrokerAlreadyRunningError,
    BrokerError,
    BrokerInfo,
    BrokerNotRunningError,
    BrokerPortInUseError,
    BrokerStartError,
    EmbeddedBroker,
    broker_status,
    stop_recorded_broker,
)
from edge.broker.kafka import (
    ApacheKafkaBroker,
    KafkaDistributionError,
    kafka_unavailable_reason,
    resolve_kafka_distribution,
)
from edge.broker.local import BROKER_KIND_ENV, BrokerKind, LocalBroker, local_broker, profile_for

__all__ = [
    "BROKER_KIND_ENV",
    "ApacheKafkaBroker",
    "BrokerAlreadyRunningError",
    "BrokerBinaryNotFoundError",
    "BrokerError",
    "BrokerInfo",
    "BrokerKind",
    "BrokerNotRunningError",
    "BrokerPortInUseError",
    "BrokerStartError",
    "EmbeddedBroker",
    "KafkaCluster",
    "KafkaDistributionError",
    "LocalBroker",
    "broker_status",
    "kafka_unavailable_reason",
    "local_broker",
    "profile_for",
    "resolve_kafka_distribution",
    "resolve_tansu_binary",
    "stop_recorded_broker",
]

"""The embedded Kafka-compatible broker (Tansu) used for local runs and tests.

Real deployments point ``bootstrap.servers`` at any Kafka cluster; this package only exists so that a
fresh machine can run the whole platform with no Docker and no JVM broker.
"""

from edge.broker.binary import BrokerBinaryNotFoundError, resolve_tansu_binary
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

__all__ = [
    "BrokerAlreadyRunningError",
    "BrokerBinaryNotFoundError",
    "BrokerError",
    "BrokerInfo",
    "BrokerNotRunningError",
    "BrokerPortInUseError",
    "BrokerStartError",
    "EmbeddedBroker",
    "broker_status",
    "resolve_tansu_binary",
    "stop_recorded_broker",
]

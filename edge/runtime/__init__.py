"""The Kafka runtime: runs a topology against Kafka, scales out by consumer group, survives crashes."""

from edge.runtime.app import StreamsApp, resolve_topology
from edge.runtime.config import (
    AT_LEAST_ONCE,
    EXACTLY_ONCE_V2,
    REPLACE_THREAD,
    SHUTDOWN_APPLICATION,
    SHUTDOWN_CLIENT,
    StreamsConfig,
    StreamsConfigError,
)
from edge.runtime.state import State
from edge.runtime.statedir import StateDirLockedError

__all__ = [
    "AT_LEAST_ONCE",
    "EXACTLY_ONCE_V2",
    "REPLACE_THREAD",
    "SHUTDOWN_APPLICATION",
    "SHUTDOWN_CLIENT",
    "State",
    "StateDirLockedError",
    "StreamsApp",
    "StreamsConfig",
    "StreamsConfigError",
    "resolve_topology",
]

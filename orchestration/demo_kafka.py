"""The Kafka cluster the demo works on: the configured one, else the recorded local broker.

Apart from the demo's steps because it decides, and reports, whether a broker was started (and left
running for ``make dagster`` and the CLI) or reused.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from edge.broker import BrokerKind
from edge.kafka import BrokerProfile, KafkaClientConfig
from orchestration.demo_progress import console
from orchestration.settings import Settings


@dataclass
class KafkaUse:
    client: KafkaClientConfig
    #: "configured" (bootstrap_servers / a real cluster), "recorded" (the local broker, reused) or
    #: "started" (the local broker, started now and recorded)
    origin: str
    kind: str = BrokerKind.TANSU.value


@contextlib.contextmanager
def use_kafka(settings: Settings, stop_broker: bool) -> Iterator[KafkaUse]:
    """The configured cluster, else the recorded local broker (started and recorded if none runs).

    The local broker is left running (unless ``stop_broker``), recorded as ``streamhouse broker start``
    records it, so ``make dagster`` and the CLI find the demo's topics.
    """
    remote = settings.broker_profile is BrokerProfile.REAL and settings.broker_kind is BrokerKind.TANSU
    if remote or settings.bootstrap_servers:
        yield KafkaUse(settings.kafka_client(), "configured", "configured")
        return
    from edge.broker.embedded import ensure_recorded_broker, stop_recorded_broker

    info, started = ensure_recorded_broker(settings.state_dir, kind=settings.broker_kind.value)
    if started and (warning := settings.broker_fallback_warning()):
        console.print(warning, style="yellow", markup=False)
    try:
        yield KafkaUse(
            settings.kafka_client(info.bootstrap_servers), "started" if started else "recorded", info.kind
        )
    finally:
        if stop_broker:
            stop_recorded_broker(settings.state_dir)
            console.print(f"stopped the local broker at {info.bootstrap_servers} (--stop-broker)")

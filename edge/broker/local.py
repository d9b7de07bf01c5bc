"""Which local broker to start: the embedded Tansu broker or Apache Kafka, and the client profile for each.

``broker_kind`` (``STREAMHOUSE_BROKER_KIND``) picks it everywhere a broker is started for you. Unset,
the two kinds of use default differently, on purpose:

* the broker the CLI records and shares (``streamhouse broker start``, the demo, the UI) is Apache Kafka
  where ``make install`` resolved its jars (``default_broker_kind``): it keeps topics on disk under the
  state dir, so stopping it between two demos loses nothing; Tansu keeps them in memory only;
* the throwaway brokers of tests and benchmarks (``local_broker``, ``broker_kind_from_env``) stay Tansu:
  ready in 0.1 s against Kafka's 4-12 s, which the suite pays per session and per lifecycle test.

The client profile follows the kind: Tansu needs the measured ``embedded`` settings, Apache Kafka gets
Kafka's own defaults (``real``).
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path

from edge.broker.embedded import BrokerError, EmbeddedBroker
from edge.broker.kafka import ApacheKafkaBroker, kafka_unavailable_reason
from edge.kafka.profile import BrokerProfile

BROKER_KIND_ENV = "STREAMHOUSE_BROKER_KIND"


class BrokerKind(StrEnum):
    TANSU = "tansu"
    KAFKA = "kafka"


LocalBroker = EmbeddedBroker | ApacheKafkaBroker


def broker_kind_from_env(environ: dict[str, str] | None = None) -> BrokerKind:
    raw = (os.environ if environ is None else environ).get(BROKER_KIND_ENV, "").strip().lower()
    if not raw:
        return BrokerKind.TANSU
    try:
        return BrokerKind(raw)
    except ValueError:
        raise BrokerError(f"{BROKER_KIND_ENV}={raw!r}: expected tansu or kafka") from None


def default_broker_kind(state_dir: Path | None = None) -> tuple[BrokerKind, str | None]:
    """The shared local broker's kind when ``broker_kind`` is unset, and why it is not Apache Kafka.

    Apache Kafka where its jars (and Java) are there, since a broker that loses its topics on stop makes
    the lake look ahead of them; else Tansu, with the reason Kafka cannot start (for a warning).
    """
    reason = kafka_unavailable_reason(state_dir)
    return (BrokerKind.KAFKA, None) if reason is None else (BrokerKind.TANSU, reason)


def profile_for(kind: BrokerKind | str) -> BrokerProfile:
    return BrokerProfile.REAL if BrokerKind(kind) is BrokerKind.KAFKA else BrokerProfile.EMBEDDED


def local_broker(
    kind: BrokerKind | str | None = None,
    *,
    port: int | None = None,
    log_dir: Path | None = None,
    data_dir: Path | None = None,
    state_dir: Path | None = None,
    detached: bool = False,
) -> LocalBroker:
    """A not-yet-started broker of ``kind`` (default: ``$STREAMHOUSE_BROKER_KIND``, else tansu).

    ``data_dir`` only matters for Apache Kafka (Tansu keeps everything in memory); without one it uses a
    temporary directory removed on ``stop()``.
    """
    kind = BrokerKind(kind) if kind is not None else broker_kind_from_env()
    if kind is BrokerKind.KAFKA:
        return ApacheKafkaBroker(
            port=port, log_dir=log_dir, data_dir=data_dir, state_dir=state_dir, detached=detached
        )
    return EmbeddedBroker(port=port, log_dir=log_dir, detached=detached)

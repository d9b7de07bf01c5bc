"""The stream thread's producers, owned in one place (Kafka Streams' ``StreamsProducer``).

Under exactly-once one transactional producer carries the output, the changelogs and the offsets of
every task of the instance; it is replaced, never repaired, when the coordinator has fenced it for a
transaction that outlived ``transaction.timeout.ms`` (``renew``). Under at-least-once a second producer
that reports only failed deliveries carries the sinks' records (see
:class:`edge.runtime.producer.KafkaCollector`), so the stream thread pays no Python callback per output.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from edge.errors import StreamhouseError

log = logging.getLogger(__name__)

#: settings of the main producer the sink producer must not share: its statistics stay away from the
#: outage watchdog (with no output for a while its connections close, which is no outage); it gets a
#: statistics callback of its own (``sink_stats_cb``) for /health
_MAIN_ONLY = ("stats_cb", "statistics.interval.ms")


class StreamsProducer:
    """The producer (transactional under exactly-once) and, under at-least-once, the sink producer."""

    def __init__(
        self,
        conf: dict[str, Any],
        *,
        exactly_once: bool,
        with_sink_producer: bool,
        sink_error_cb: Callable[[KafkaError], None],
        sink_stats_cb: Callable[[str], None] | None = None,
    ) -> None:
        #: the main producer's configuration (``transactional.id`` under exactly-once)
        self.conf = conf
        self.exactly_once = exactly_once
        #: None once released
        self.producer: Producer | None = self._start("could not initialise the transactional producer")
        self.sink_producer: Producer | None = None
        if with_sink_producer and not exactly_once:
            self.sink_producer = Producer(
                {
                    **{k: v for k, v in conf.items() if k not in _MAIN_ONLY},
                    "error_cb": sink_error_cb,
                    "delivery.report.only.error": True,
                    # partitions without a leader and records waiting for one, for /health only
                    **(
                        {"statistics.interval.ms": conf["statistics.interval.ms"], "stats_cb": sink_stats_cb}
                        if sink_stats_cb is not None and "statistics.interval.ms" in conf
                        else {}
                    ),
                }
            )

    @property
    def max_message_bytes(self) -> int:
        return int(self.conf.get("message.max.bytes", 1_000_000))

    def _start(self, failure: str) -> Producer:
        producer = Producer(self.conf)
        if self.exactly_once:
            try:
                # fences any previous incarnation with the same transactional.id and aborts its open txn
                producer.init_transactions(60)
            except KafkaException as exc:
                raise StreamhouseError(f"{failure}: {exc}") from exc
        return producer

    def renew(self) -> Producer:
        """Exactly-once: drop the fenced producer and start a new one with the same transactional.id, as
        Kafka Streams' handleLostAll does under exactly_once_v2; its ``init_transactions`` aborts
        whatever the old one left open. The callers point their collector and committer at it."""
        old = self.producer
        if old is not None:
            with contextlib.suppress(Exception):
                old.purge(in_queue=True, in_flight=True, blocking=False)
        self.producer = self._start("could not initialise the transactional producer again")
        return self.producer

    def close_actions(self) -> list[tuple[str, Callable[[], object]]]:
        """What closing flushes, named for the log: the sink producer first, then the main one."""
        return [
            ("sink producer", lambda: self.sink_producer is not None and self.sink_producer.flush(5)),
            ("producer", lambda: self.producer is not None and self.producer.flush(5)),
        ]

    def release(self) -> None:
        """Drop the handles so librdkafka's threads end now, not whenever the instance is collected."""
        self.producer = self.sink_producer = None

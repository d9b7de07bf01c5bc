"""The restore consumer between restores: its callbacks are served while it is idle, not saved up.

librdkafka queues a consumer's log lines and errors until the consumer is polled. Nothing polls the
restore consumer between restores, so after a broker outage the next restore delivered hundreds of
stale "Connection refused" at once, and the instance logged the cluster unreachable while it answered
(the broker-restart trial counted 385-671 of them). The stream thread's housekeeping now calls
``serve_idle`` every second. Here the cluster is a port nobody listens on.
"""

from __future__ import annotations

import socket
import time

from confluent_kafka import KafkaError

from edge.runtime.restore import ChangelogReader


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CountingLogger:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def log(self, level: int, msg: str, *args: object) -> None:
        self.lines.append(msg % args if args else msg)


def test_an_idle_restore_consumer_saves_up_its_errors_until_it_is_served() -> None:
    logger = CountingLogger()
    errors: list[KafkaError] = []
    reader = ChangelogReader(
        {
            "bootstrap.servers": f"127.0.0.1:{_closed_port()}",
            "group.id": "idle-restore",
            "logger": logger,
            "error_cb": errors.append,
            "reconnect.backoff.ms": 10,
            "reconnect.backoff.max.ms": 50,
        }
    )
    reader.serve_idle()  # no consumer yet (no restore so far): nothing to serve, nothing created
    assert reader._consumer is None
    reader._get_consumer()
    try:
        time.sleep(1.5)
        assert errors == [] and not [ln for ln in logger.lines if "refused" in ln], (
            "librdkafka delivered callbacks without a poll: the premise of serve_idle is gone"
        )
        reader.serve_idle()
        assert errors, "serve_idle did not serve the consumer's queued errors"
        assert any("refused" in ln.lower() for ln in logger.lines), logger.lines[:5]
    finally:
        reader.close()

"""librdkafka's log lines go through Python's logging (issue 46 item 7), not raw onto stderr.

The demo's output carried raw client lines (``%5|…|METADATAUPDATE|… Topic id … not found in cache``,
``GETPID … Coordinator load in progress: retrying``): every client built from ``KafkaClientConfig`` had
no ``logger``, so librdkafka printed its own."""

from __future__ import annotations

import logging
import socket

import pytest
from confluent_kafka import Producer

from edge.kafka import BrokerProfile, KafkaClientConfig
from edge.kafka.client_log import LOGGER_NAME, ClientLog


def test_a_client_logs_through_python_logging_not_onto_stderr(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as sock:  # a port nothing listens on: librdkafka logs its refused connection
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = KafkaClientConfig(f"127.0.0.1:{port}", BrokerProfile.REAL)
    reports: list[object] = []
    with caplog.at_level(logging.DEBUG, logger=LOGGER_NAME):
        producer = Producer(client.producer(**{"message.timeout.ms": 1500}))
        producer.produce("t", b"v", on_delivery=lambda err, _msg: reports.append(err))
        while not reports:  # the record times out after its connection attempts were refused
            producer.poll(0.2)
        producer.poll(0)
        del producer
    refused = [r for r in caplog.records if r.name == LOGGER_NAME and "Connection refused" in r.getMessage()]
    assert refused and refused[0].levelno == logging.ERROR, [r.getMessage() for r in caplog.records]
    err = capfd.readouterr().err
    assert "|FAIL|" not in err and "Connection refused" not in err, err


def test_a_clients_own_logger_wins() -> None:
    mine = ClientLog(logging.getLogger("mine"))
    assert KafkaClientConfig("127.0.0.1:1", extra={"logger": mine}).consumer("g")["logger"] is mine


@pytest.mark.parametrize(
    ("level", "text", "expected"),
    [
        (logging.INFO, "METADATAUPDATE [rdkafka#producer-1] [thrd:main]: Topic id AAAA not found in cache",
         logging.DEBUG),
        (logging.WARNING, "GETPID [rdkafka#producer-1] [thrd:main]: Failed to acquire transactional PID "
         "from broker: Coordinator load in progress: retrying", logging.DEBUG),
        (logging.ERROR, "FAIL [rdkafka#producer-1] [thrd:127.0.0.1:1/bootstrap]: Connect to ipv4#127.0.0.1:1 "
         "failed: Connection refused", logging.ERROR),
    ],
)  # fmt: skip
def test_transient_retry_notices_are_debug_the_rest_keep_their_level(
    level: int, text: str, expected: int
) -> None:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("test-client-log")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(Keep())
    facility, _, rest = text.partition(" ")
    name, _, message = rest.partition(" ")
    ClientLog(logger).log(level, "%s [%s] %s", facility, name.strip("[]"), message)
    assert [(r.levelno, r.getMessage()) for r in records] == [(expected, text)]

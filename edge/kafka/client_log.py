"""librdkafka's log lines through Python's ``logging``, at a level that says what they mean.

Without a ``logger`` in its configuration librdkafka writes its own lines to stderr
(``%4|1765…|GETPID|rdkafka#producer-1| [thrd:main]: … Coordinator load in progress: retrying``), which
is how the demo's output came to carry raw client chatter between its steps. Every client built from
:class:`~edge.kafka.profile.KafkaClientConfig` gets :data:`CLIENT_LOG` instead (a client's own ``logger``,
like the edge runtime's connection log, still wins): the lines go to the ``edge.kafka.librdkafka``
logger, and the notices of a state the client retries out of by itself a moment later are DEBUG.
confluent-kafka delivers them from ``poll()``/``flush()``, in the thread that polls.
"""

from __future__ import annotations

import logging
import re
from typing import Any

LOGGER_NAME = "edge.kafka.librdkafka"

#: Notices of a transient state the client resolves by retrying, without anything for a user to do:
#: a topic's id not yet in the metadata cache right after it was created, a transaction or group
#: coordinator still loading its log after a broker start, a leader being elected.
TRANSIENT = re.compile(
    r"Topic id \S+ not found in cache"
    r"|Coordinator load in progress"
    r"|Not coordinator"
    r"|Leader not available"
)


class ClientLog:
    """A ``logger`` for librdkafka: confluent-kafka calls ``log(level, "%s [%s] %s", facility, client,
    message)`` with librdkafka's syslog level mapped to Python's."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.logger = logger or logging.getLogger(LOGGER_NAME)

    def log(self, level: int, msg: str, *args: Any, **_kwargs: Any) -> None:
        text = msg % args if args else msg
        if TRANSIENT.search(text):
            level = logging.DEBUG
        self.logger.log(level, "%s", text)


#: The one every KafkaClientConfig client gets.
CLIENT_LOG = ClientLog()

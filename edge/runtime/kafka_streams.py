"""``KafkaStreams``: the runtime under the name Kafka Streams users look for, and the uncaught
exception handler's answers as Kafka's ``StreamThreadExceptionResponse`` enum.

It is :class:`~edge.runtime.app.StreamsApp` itself (a thin subclass, no second runtime), so Java code
ports line by line::

    streams = KafkaStreams(builder.build(), {"application.id": "wordcount", "bootstrap.servers": "host:9092"})
    streams.set_uncaught_exception_handler(lambda exc: StreamThreadExceptionResponse.REPLACE_THREAD)
    streams.start()
    assert streams.state() in (KafkaStreams.State.REBALANCING, KafkaStreams.State.RUNNING)
    streams.close()

The enum's members are strings equal to the ``uncaught.exception.response`` setting's values
(``"replace_thread"``, ``"shutdown_client"``, ``"shutdown_application"``), so a handler may answer
either, and the setting accepts either.
"""

from __future__ import annotations

import enum
from typing import Any

from edge.runtime.app import StreamsApp
from edge.runtime.config import REPLACE_THREAD, SHUTDOWN_APPLICATION, SHUTDOWN_CLIENT
from edge.runtime.state import State


class StreamThreadExceptionResponse(enum.StrEnum):
    """Kafka's ``StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse``: what the instance does
    after its stream thread failed. ``REPLACE_THREAD`` resumes from the last commit (the edge has one
    stream thread, so replacing it means restarting its tasks), ``SHUTDOWN_CLIENT`` stops this
    instance, ``SHUTDOWN_APPLICATION`` asks every instance of the application to stop.

    A ``StrEnum`` so the runtime, which compares answers with the setting's strings, takes the members
    as they are, and log lines show the setting's value."""

    REPLACE_THREAD = REPLACE_THREAD
    SHUTDOWN_CLIENT = SHUTDOWN_CLIENT
    SHUTDOWN_APPLICATION = SHUTDOWN_APPLICATION


class KafkaStreams(StreamsApp):
    """Kafka's ``KafkaStreams``: ``KafkaStreams(topology, props)`` with ``start()``, ``close()``,
    ``state()`` and ``set_uncaught_exception_handler(handler)``. Everything else is
    :class:`~edge.runtime.app.StreamsApp`'s."""

    #: ``KafkaStreams.State.RUNNING`` etc., as in Java
    State = State

    def set_uncaught_exception_handler(self, handler: Any) -> None:
        """``handler`` is a callable ``handler(exc) -> StreamThreadExceptionResponse`` or, as in Java, an
        object with a ``handle(exc)`` method (Kafka's ``StreamsUncaughtExceptionHandler``). Any other
        answer shuts the instance down, as ``SHUTDOWN_CLIENT`` does."""
        handle = getattr(handler, "handle", None)
        if callable(handle):
            handler = handle
        if not callable(handler):
            raise TypeError(
                "set_uncaught_exception_handler takes a callable or an object with handle(exc), "
                f"got {handler!r}"
            )
        super().set_uncaught_exception_handler(handler)

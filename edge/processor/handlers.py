"""Per-record error handling: what happens when a record cannot be deserialized or a processor raises.

A handler looks at an :class:`ErrorContext` and answers FAIL (stop the task with a
:class:`ProcessingFailed`) or CONTINUE, optionally with dead-letter records the task sends through its
record collector. Keeping the decision in one small object lets the runtime and the test driver share it.
"""

from __future__ import annotations

import enum
import logging
import traceback
from dataclasses import dataclass, field
from typing import Any, Protocol

from edge.errors import SerdeError, StreamhouseError
from edge.processor.record import Headers
from edge.processor.record_warnings import warn_record

log = logging.getLogger(__name__)

# Header names follow Kafka's KIP-1034 dead-letter queue convention.
HEADER_EXCEPTION = "__streams.errors.exception"
HEADER_MESSAGE = "__streams.errors.message"
HEADER_STACKTRACE = "__streams.errors.stacktrace"
HEADER_TOPIC = "__streams.errors.topic"
HEADER_PARTITION = "__streams.errors.partition"
HEADER_OFFSET = "__streams.errors.offset"
HEADER_TIMESTAMP = "__streams.errors.timestamp"


class ErrorKind(enum.Enum):
    DESERIALIZATION = "deserialization"
    PROCESSING = "processing"


class ErrorAction(enum.Enum):
    FAIL = "fail"
    CONTINUE = "continue"


@dataclass(slots=True)
class ErrorContext:
    """The failed record as it was read (raw bytes), where it came from, and what went wrong."""

    kind: ErrorKind
    exception: BaseException
    topic: str | None
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Headers | None
    task_id: str
    node_name: str | None = None


@dataclass(slots=True)
class DeadLetter:
    topic: str
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers


@dataclass(slots=True)
class ErrorResponse:
    action: ErrorAction
    dead_letters: list[DeadLetter] = field(default_factory=list)


FAIL = ErrorResponse(ErrorAction.FAIL)
CONTINUE = ErrorResponse(ErrorAction.CONTINUE)


class ExceptionHandler(Protocol):
    def handle(self, error: ErrorContext) -> ErrorResponse: ...


class ProcessingFailed(StreamhouseError):
    """A record could not be processed and the configured handler said FAIL; the task must stop."""

    def __init__(self, error: ErrorContext) -> None:
        self.error = error
        self.topic = error.topic
        self.partition = error.partition
        self.offset = error.offset
        where = f"topic={error.topic!r}, partition={error.partition}, offset={error.offset}"
        node = f", node={error.node_name!r}" if error.node_name else ""
        super().__init__(
            f"{error.kind.value} error in task {error.task_id} ({where}{node}): "
            f"{type(error.exception).__name__}: {error.exception}. Fix the record or the code, or configure "
            f"a log-and-continue or dead-letter-queue {error.kind.value} exception handler."
        )


#: Characters of an error's first line kept in a per-record warning (a JSON decoder's message can quote
#: the whole payload; the dead-letter record and the error counters keep everything).
ERROR_TEXT_LIMIT = 160


def _short(exc: BaseException) -> str:
    """The error in one line, bounded: the first line of its message. A ``SerdeError`` gives its reason
    (what could not be read, with which serde, and why) without the position it appends (the warning
    names topic, partition and offset itself) and without its advice after ``"; "`` (the same on every
    record); any other error is named by its type."""
    reason = getattr(exc, "reason", None)
    if isinstance(exc, SerdeError) and reason:
        text, prefix = str(reason).split("; ", 1)[0], ""
    else:
        text, prefix = str(exc), f"{type(exc).__name__}: "
    first = text.strip().split("\n", 1)[0]
    if len(first) > ERROR_TEXT_LIMIT:
        first = first[: ERROR_TEXT_LIMIT - 1] + "…"
    return prefix + first


def _skipping(error: ErrorContext) -> tuple[str, tuple[Any, ...]]:
    """Kafka's ``Skipping record due to deserialization error. topic=[..] partition=[..] offset=[..]``
    (``processing error`` for the other kind), then the error in one short line (the task and the full
    error are in the dead letter's headers and the error counters)."""
    return (
        "Skipping record due to %s error. topic=[%s] partition=[%s] offset=[%s]: %s",
        (error.kind.value, error.topic, error.partition, error.offset, _short(error.exception)),
    )


def _describe(error: ErrorContext) -> str:
    return (
        f"{error.kind.value} error on {error.topic}-{error.partition}@{error.offset} "
        f"(task {error.task_id}): {type(error.exception).__name__}: {error.exception}"
    )


class LogAndFailHandler:
    """Default: stop processing so a bad record or a bug is never silently skipped."""

    def handle(self, error: ErrorContext) -> ErrorResponse:
        log.error("%s; failing", _describe(error))
        return FAIL


class LogAndContinueHandler:
    """Skip the record after logging it (the record is lost, its offset is committed).

    The log is one short line per record kind, summarised (:mod:`edge.processor.record_warnings`): a
    topic full of bad records must not flood the log, and the task's dropped-records metric (and the
    runtime's error counters) count every one."""

    def handle(self, error: ErrorContext) -> ErrorResponse:
        msg, args = _skipping(error)
        warn_record(log, f"Skipping record due to {error.kind.value} error", msg, *args)
        return CONTINUE


class DeadLetterQueueHandler:
    """Send the original bytes with error headers to ``topic`` and continue.

    The runtime's collector makes the send safe: a record too large for the producer is truncated (with
    a header saying so) and a send that fails is logged and counted, never raised -- a dead-letter queue
    exists so that one bad record cannot stop the app, so sending it must not either.
    """

    def __init__(self, topic: str, *, include_stacktrace: bool = False) -> None:
        self.topic = topic
        self.include_stacktrace = include_stacktrace

    def handle(self, error: ErrorContext) -> ErrorResponse:
        exc = error.exception
        headers: Headers = list(error.headers or ())
        headers += [
            (HEADER_EXCEPTION, f"{type(exc).__module__}.{type(exc).__qualname__}".encode()),
            (HEADER_MESSAGE, str(exc).encode()),
            (HEADER_TOPIC, (error.topic or "").encode()),
            (HEADER_PARTITION, str(error.partition).encode()),
            (HEADER_OFFSET, str(error.offset).encode()),
            (HEADER_TIMESTAMP, str(error.timestamp).encode()),
        ]
        if self.include_stacktrace:
            trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            headers.append((HEADER_STACKTRACE, trace.encode()))
        # the send happens later (through the task's collector); the runtime logs its delivery report
        msg, args = _skipping(error)
        warn_record(
            log,
            f"Routing records to dead-letter topic {self.topic} after {error.kind.value} errors",
            msg + "; routing it to dead-letter topic %s",
            *args,
            self.topic,
        )
        letter = DeadLetter(self.topic, error.key, error.value, error.timestamp, headers)
        return ErrorResponse(ErrorAction.CONTINUE, [letter])

"""What both system-test clients share: Kafka's ``SmokeTestUtil`` in the edge's terms.

The stdout lines are the contract with whoever drives the clients (Kafka's ducktape services, and
``scripts/system_test.py`` here, which waits for the same lines): keep their wording.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from edge.processor.api import Processor, ProcessorContext
from edge.processor.record import Record

#: Kafka's ``SmokeTestUtil.END`` (``Integer.MAX_VALUE``): a value the smoke client filters out.
END = 2**31 - 1
INT_MIN = -(2**31)

#: ``sum``: one aggregate made off by one (its initial value -1 instead of 0), so a test can prove that
#: Kafka's driver notices a wrong result and says FAILURE. Anything else: the faithful port.
SABOTAGE_ENV = "STREAMHOUSE_SYSTEM_TEST_SABOTAGE"


def sabotaged(aggregate: str) -> bool:
    return os.environ.get(SABOTAGE_ENV, "").strip() == aggregate


def instant() -> str:
    """Java's ``Instant.now().toString()`` (ISO-8601 UTC with a ``Z``)."""
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def say(*lines: object) -> None:
    """Print whole lines at once: the driver tails the file while the stream thread prints too."""
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    sys.stdout.flush()


def setup_process() -> None:
    """Line-buffered stdout (a file, read while we run) and the runtime's log on stderr."""
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    logging.basicConfig(
        level=os.environ.get("STREAMHOUSE_SYSTEM_TEST_LOG_LEVEL", "INFO"),
        stream=sys.stderr,
        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)",
    )


def load_properties(path: str | Path) -> dict[str, str]:
    """The driver's properties file, read as Java's ``Utils.loadProps`` reads it."""
    import javaproperties

    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return {str(k): str(v) for k, v in javaproperties.loads(text).items()}


def java_props(props: dict[str, Any]) -> str:
    """``Properties.toString()``'s shape, for the ``props=`` line of the start banner."""
    return "{" + ", ".join(f"{k}={v}" for k, v in props.items()) + "}"


class PrintProcessor(Processor):
    """``SmokeTestUtil.printProcessorSupplier``: counts a topic's records per task and says so every
    100 records ("processed N records from topic=T" is what the services wait for to know that an
    instance really works, not only that it joined)."""

    def __init__(self, topic: str, name: str) -> None:
        self.topic = topic
        self.name = name
        self.num_records_processed = 0
        self.smallest_offset = 2**63 - 1
        self.largest_offset = -(2**63)

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        say(f"[DEV] initializing processor: topic={self.topic} taskId={context.task_id}")
        self.num_records_processed = 0
        self.smallest_offset = 2**63 - 1
        self.largest_offset = -(2**63)

    def process(self, record: Record) -> None:
        self.num_records_processed += 1
        if self.num_records_processed % 100 == 0:
            say(
                f"{self.name}: {instant()}",
                f"processed {self.num_records_processed} records from topic={self.topic}",
            )
        offset = self.context.offset
        if offset is not None and offset >= 0:
            self.smallest_offset = min(self.smallest_offset, offset)
            self.largest_offset = max(self.largest_offset, offset)

    def close(self) -> None:
        processed = (
            1 + self.largest_offset - self.smallest_offset
            if self.largest_offset >= self.smallest_offset
            else 0
        )
        say(
            f"Close processor for task {self.context.task_id}",
            f"processed {self.num_records_processed} records",
            f"offset {self.smallest_offset} to {self.largest_offset} -> processed {processed}",
        )


def print_processor(topic: str, name: str = "") -> Callable[[], PrintProcessor]:
    return lambda: PrintProcessor(topic, name)


def wait_for_sigterm(also_stop: threading.Event | None = None) -> threading.Event:
    """An event set on SIGTERM/SIGINT: the JVM's shutdown hooks, which the Java clients close in."""
    stop = also_stop or threading.Event()

    def _on_signal(_signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    return stop

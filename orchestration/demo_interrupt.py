"""Ctrl-C during the demo: one line saying where it stopped, exit status 130, nothing else.

Run in the main thread, the demo's Dagster runs turned a Ctrl-C into ``DagsterExecutionInterruptedError``
(Dagster replaces the SIGINT handler while a run executes), logged a step failure and a run failure with
their stack traces, and the CLI died with a third; PySpark's own SIGINT handler and SQLAlchemy's pool
added more (~140 lines and exit status 1 after `make demo`). So the demo runs in a worker thread
(``run_interruptibly``): Dagster and PySpark install signal handlers only in the main thread, which
keeps Python's default and only waits. On Ctrl-C the main thread sends everything the process prints
(Python's streams and the file descriptors the JVM and librdkafka write to) to /dev/null, cancels the
running Spark jobs, raises ``KeyboardInterrupt`` in the worker so its ``finally`` blocks close the
edge apps and the Dagster instance, and waits for it (a second Ctrl-C stops waiting). The caller then
prints ``DemoInterrupted``'s one line. Nothing written is lost: bronze commits its Kafka offsets with
its Delta commits, so the next run resumes where this one stopped.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

from orchestration.demo_progress import console, current_step, stop_requested

T = TypeVar("T")

#: How long the worker gets to close its edge apps and Dagster runs after a Ctrl-C (a second Ctrl-C
#: stops waiting at once).
WIND_DOWN_S = 60.0


class DemoInterrupted(Exception):
    """The user pressed Ctrl-C; ``step``: the step that was running (title, True) or had finished last
    (title, False), None before the first."""

    def __init__(self, step: tuple[str, bool] | None) -> None:
        self.step = step
        super().__init__(self.line())

    def line(self) -> str:
        if self.step is None:
            where = "before its first step"
        else:
            title, running = self.step
            where = f"{'during' if running else 'after'} {title!r}"
        return (
            f"interrupted {where}; nothing written is lost: run `make demo` (`streamhouse demo`) again "
            "to continue (bronze resumes from the offsets it committed)"
        )


def run_interruptibly(work: Callable[[], T]) -> T:
    """``work()`` in a worker thread; its result or its exception, or ``DemoInterrupted`` on Ctrl-C."""
    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the main thread, which decides what the user sees
            outcome["error"] = exc

    worker = threading.Thread(target=target, name="streamhouse-demo", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
    except KeyboardInterrupt:
        where = current_step()
        with _silenced():
            _stop(worker)
        raise DemoInterrupted(where) from None
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


@contextlib.contextmanager
def _silenced() -> Iterator[None]:
    """Everything the process prints goes to /dev/null meanwhile: Python's loggers and streams, and
    file descriptors 1 and 2 (the Spark JVM's and librdkafka's output)."""
    for live in list(getattr(console, "_live_stack", [])):  # the transient status line of a Dagster run
        with contextlib.suppress(Exception):
            live.stop()
    logging.disable(logging.CRITICAL)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    devnull = os.open(os.devnull, os.O_WRONLY)
    streams = sys.stdout, sys.stderr
    try:
        for fd in saved:
            os.dup2(devnull, fd)
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (closed below)
        yield
    finally:
        quiet = sys.stdout
        sys.stdout, sys.stderr = streams
        quiet.close()
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        os.close(devnull)
        if console.is_terminal:
            console.show_cursor(True)


def _stop(worker: threading.Thread) -> None:
    """Cancel the Spark jobs, interrupt the worker and wait for its cleanup (a second Ctrl-C: stop)."""
    stop_requested.set()
    if "pyspark" in sys.modules:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context
        if sc is not None:
            with contextlib.suppress(Exception):
                sc.cancelAllJobs()
    if worker.ident is not None and worker.is_alive():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(worker.ident), ctypes.py_object(KeyboardInterrupt)
        )
    with contextlib.suppress(KeyboardInterrupt):
        worker.join(WIND_DOWN_S)

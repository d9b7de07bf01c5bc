"""What the demo prints while it runs: each step as it starts and ends, and the Dagster runs' progress.

The demo's long steps (a first Spark job, a minute of ingest) would otherwise be silent; every demo
module prints through the one ``console`` here so the output interleaves in order.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from rich.console import Console

console = Console(highlight=False)


class RunProgress:
    """Prints what an in-process Dagster run is doing while it runs, from the run's events (``on_event``
    of ``run_ingest``/``run_daily``): the runs log at WARNING only, so without this a step of a minute
    (``ingest_job``: the silver dimension tables' first Spark jobs) printed nothing until it ended.

    Printed: the bronze assets' progress lines (records so far, records/s; ``IngestProgress``) and each
    other step that took ``min_step_s`` or more, with its time. On a terminal a transient status line
    names the step running now."""

    def __init__(self, job: str, out: Console | None = None, min_step_s: float = 1.0) -> None:
        self.job = job
        self.out = out or console
        self.min_step_s = min_step_s
        self._started: dict[str, float] = {}
        self._status: Any = None

    def __enter__(self) -> RunProgress:
        if self.out.is_terminal:
            self._status = self.out.status(f"{self.job}: starting", spinner="dots")
            self._status.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.stop()

    def __call__(self, event: Any) -> None:
        from assets.bronze.ingest import PROGRESS_PREFIX

        step = event.step_key
        if not event.is_dagster_event:
            message = event.user_message or ""
            if message.startswith(PROGRESS_PREFIX):
                self.out.print(f"    {message[len(PROGRESS_PREFIX) :]}")
            return
        kind = event.dagster_event.event_type_value
        if step is None:
            return
        if kind == "STEP_START":
            self._started[step] = event.timestamp
            if self._status is not None:
                self._status.update(f"{self.job}: {step}")
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE"):
            seconds = event.timestamp - self._started.pop(step, event.timestamp)
            failed = kind == "STEP_FAILURE"
            if failed or (seconds >= self.min_step_s and not step.startswith("bronze__")):
                self.out.print(f"    {step}: {seconds:.1f}s{' [red](failed)[/red]' if failed else ''}")


#: The titles of the steps running now (outermost first): what a Ctrl-C names as where it stopped.
_running: list[str] = []
#: Set on Ctrl-C (``orchestration.demo_interrupt``): no further step starts, whatever a run swallowed.
stop_requested = threading.Event()


_finished: list[str] = []


def current_step() -> tuple[str, bool] | None:
    """The step running now (title, True), else the last one that finished (title, False), else None
    (read from another thread by ``orchestration.demo_interrupt``)."""
    if _running:
        return _running[-1], True
    return (_finished[-1], False) if _finished else None


@contextlib.contextmanager
def step(title: str) -> Iterator[None]:
    """Say what is starting (the long steps are silent otherwise) and how long it took."""
    if stop_requested.is_set():
        raise KeyboardInterrupt
    console.print(f"[cyan]…[/cyan] {title}")
    started = time.perf_counter()
    _running.append(title)
    try:
        yield
    finally:
        _running.remove(title)
        _finished[:] = [title]
    console.print(f"  [dim]{title}: {time.perf_counter() - started:.1f}s[/dim]")

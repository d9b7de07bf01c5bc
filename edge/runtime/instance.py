"""Run one instance of an app in this process until it is asked to stop; its exit status.

Shared by ``streamhouse edge run`` and each worker process of a multi-worker instance, so both stop on
the same signals and report the same way: 0 after a requested shutdown, 1 when the app failed (the reason
as the last ``error:`` line), 3 when a newer instance fenced it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from edge.errors import StreamhouseError
from edge.runtime.app import StreamsApp
from edge.runtime.signals import install_shutdown_handlers
from edge.runtime.state import State

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_FENCED = 3


def run_instance(
    app_object: Any, values: Mapping[str, Any], *, announce: Callable[[StreamsApp], None] | None = None
) -> int:
    """Start the app, serve SIGTERM/SIGINT as a graceful shutdown, wait for the end; the exit status."""
    app = StreamsApp(app_object, dict(values))
    app.start()
    install_shutdown_handlers(app)
    if announce is not None:
        announce(app)
    while app.wait(0.5) not in (State.NOT_RUNNING, State.ERROR):
        pass
    app.close(30)
    if app.fenced:
        print("this instance was fenced by a newer instance with the same transactional.id", file=sys.stderr)
        return EXIT_FENCED
    if app.state is State.ERROR:
        if isinstance(app.error, StreamhouseError):
            # the reason in one line at the end (the log above has the details)
            print(f"error: {app.error}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK

"""Graceful shutdown on SIGTERM/SIGINT for a process that runs a StreamsApp.

The handler only *asks* the app to stop (a flag the stream thread checks between batches); the stream
thread then commits, closes its stores (releasing RocksDB locks) and leaves the consumer group. Signal
handlers can only be installed from the main thread.
"""

from __future__ import annotations

import faulthandler
import logging
import signal
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edge.runtime.app import StreamsApp

log = logging.getLogger(__name__)


def install_shutdown_handlers(
    app: StreamsApp, signals: Iterable[signal.Signals] = (signal.SIGTERM, signal.SIGINT)
) -> None:
    def _on_signal(signum: int, _frame: Any) -> None:
        log.info("received %s: shutting down gracefully", signal.Signals(signum).name)
        app.request_shutdown()

    for sig in signals:
        signal.signal(sig, _on_signal)
    # `kill -USR1 <pid>` dumps every thread's stack to stderr (for diagnosing a stuck instance)
    faulthandler.register(signal.SIGUSR1, all_threads=True)

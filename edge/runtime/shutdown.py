"""Failure and shutdown of the stream thread: what an uncaught exception leads to (the uncaught exception
handler's answer: shut this client down, the whole application, or replace the thread by resuming from the
last commit), and an orderly shutdown (final commit, close tasks, then release the clients and the state
directory lock). Signals (SIGTERM/SIGINT) only request a shutdown: see :mod:`edge.runtime.signals`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable

from confluent_kafka import KafkaException

from edge.errors import StreamhouseError
from edge.runtime.commit import Committer
from edge.runtime.config import REPLACE_THREAD, SHUTDOWN_APPLICATION, SHUTDOWN_CLIENT, StreamsConfig
from edge.runtime.connectivity import ConnectionLogLimiter
from edge.runtime.metadata import MetadataService
from edge.runtime.producer import is_fenced
from edge.runtime.state import Lifecycle, State
from edge.runtime.stats import RuntimeStats
from edge.runtime.task_manager import TaskManager

log = logging.getLogger(__name__)

UncaughtExceptionHandler = Callable[[BaseException], str]


class Shutdown:
    """How the stream thread ends, and what it leaves behind (``error``, ``fenced``: the app reports them).

    ``closing`` is set as the shutdown starts: from then on rebalance callbacks take no tasks, and an
    outage neither drops nor resumes any.
    """

    def __init__(
        self,
        *,
        config: StreamsConfig,
        tasks: TaskManager,
        committer: Committer,
        metadata: MetadataService,
        lifecycle: Lifecycle,
        stats: RuntimeStats,
        connection_log: ConnectionLogLimiter,
        closing: threading.Event,
        uncaught_handler: Callable[[], UncaughtExceptionHandler | None],
        release: Callable[[], None],
    ) -> None:
        self.config = config
        self.tasks = tasks
        self.committer = committer
        self.metadata = metadata
        self.lifecycle = lifecycle
        self.stats = stats
        self.connection_log = connection_log
        self.closing = closing
        #: the handler set by ``StreamsApp.set_uncaught_exception_handler`` (at any time: read when needed)
        self._uncaught_handler = uncaught_handler
        #: closes the clients and releases the state directory (the app's, which built them)
        self._release = release
        #: what ended the thread with an error (None: a clean shutdown)
        self.error: BaseException | None = None
        #: a newer instance with our transactional.id fenced this one (the CLI exits 3)
        self.fenced = False

    def decide(self, exc: BaseException) -> str:
        if not isinstance(exc, Exception):
            return SHUTDOWN_CLIENT  # KeyboardInterrupt / SystemExit: never swallowed
        handler = self._uncaught_handler()
        if handler is None:
            return self.config.uncaught_exception_response
        try:
            response = handler(exc) or SHUTDOWN_CLIENT
        except Exception:
            log.exception("the uncaught exception handler itself failed")
            return SHUTDOWN_CLIENT
        if response not in (SHUTDOWN_CLIENT, SHUTDOWN_APPLICATION, REPLACE_THREAD):
            log.error("uncaught exception handler answered %r; shutting the instance down", response)
            return SHUTDOWN_CLIENT
        return response

    def replace_thread(self, exc: BaseException) -> None:
        """Kafka's REPLACE_THREAD: drop everything since the last commit and resume from it.

        The open transaction (exactly-once) is aborted, and the tasks are closed without a commit and
        reopened from their checkpoints: their stores hold committed writes only, and the committed
        changelog records after the checkpoint are restored. Input resumes at the committed offsets.
        """
        self.stats.replaced_threads += 1
        log.error(
            "stream thread failed (%s: %s); replacing it: resuming from the last commit",
            type(exc).__name__,
            exc,
        )
        self.committer.abort()
        self.lifecycle.transition(State.REBALANCING, strict=False)
        self.tasks.reinitialize()
        self.lifecycle.transition(State.RUNNING, strict=False)

    def on_uncaught(self, exc: BaseException, response: str | None = None) -> None:
        self.error = exc
        if response is None:
            response = self.decide(exc)
        if isinstance(exc, KafkaException) and is_fenced(exc):
            self.fenced = True
        log.error(
            "stream thread failed (%s: %s); response: %s",
            type(exc).__name__,
            exc,
            response,
            exc_info=exc if not isinstance(exc, StreamhouseError) else None,
        )
        if response == SHUTDOWN_APPLICATION:
            self.metadata.update_local(shutdown=True)
            time.sleep(0.5)
        self.run(clean=False, final=State.ERROR)

    def run(self, *, clean: bool, final: State) -> None:
        """The shutdown sequence: final commit (``clean``) or abort, close the tasks, release the clients."""
        self.closing.set()
        pending = State.PENDING_SHUTDOWN if final is State.NOT_RUNNING else State.PENDING_ERROR
        self.lifecycle.transition(pending, strict=False)
        tasks = self.tasks
        registry = tasks.registry
        if registry.tasks:
            if clean:
                try:
                    tasks.commit(list(registry.tasks.values()), closing=True)
                except (KafkaException, StreamhouseError) as exc:
                    # the cluster refused or did not answer (an outage at shutdown): a reason, no traceback
                    log.error(
                        "final commit failed (%s); closing without it: the input since the last commit is "
                        "processed again after a restart",
                        exc,
                    )
                    clean = False
                except Exception:
                    log.exception("final commit failed; closing without it")
                    clean = False
            if not clean:
                with contextlib.suppress(Exception):
                    self.committer.abort()
            tasks.close_all(clean=clean)
        self._release()
        self.connection_log.report_pending()
        self.lifecycle.transition(final, strict=False)

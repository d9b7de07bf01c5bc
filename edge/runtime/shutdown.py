"""Failure and shutdown of the stream thread: what an uncaught exception leads to (the uncaught exception
handler's answer: shut this client down, the whole application, or replace the thread by resuming from the
last commit), and an orderly shutdown (final commit, close tasks, finish a pending rebalance, close the
clients, release the state directory lock). Signals (SIGTERM/SIGINT) only request a shutdown: see
:mod:`edge.runtime.signals`.
"""

from __future__ import annotations

import contextlib
import logging
import time

from confluent_kafka import KafkaException

from edge.errors import StreamhouseError
from edge.runtime.config import REPLACE_THREAD, SHUTDOWN_APPLICATION, SHUTDOWN_CLIENT
from edge.runtime.producer import is_fenced
from edge.runtime.state import State
from edge.runtime.statedir import unlock_state_dir

log = logging.getLogger(__name__)


class FailureAndShutdown:
    """The failure/shutdown part of :class:`~edge.runtime.app.StreamsApp` (a mixin)."""

    def _decide(self, exc: BaseException) -> str:
        if not isinstance(exc, Exception):
            return SHUTDOWN_CLIENT  # KeyboardInterrupt / SystemExit: never swallowed
        if self._uncaught_handler is None:
            return self.config.uncaught_exception_response
        try:
            response = self._uncaught_handler(exc) or SHUTDOWN_CLIENT
        except Exception:
            log.exception("the uncaught exception handler itself failed")
            return SHUTDOWN_CLIENT
        if response not in (SHUTDOWN_CLIENT, SHUTDOWN_APPLICATION, REPLACE_THREAD):
            log.error("uncaught exception handler answered %r; shutting the instance down", response)
            return SHUTDOWN_CLIENT
        return response

    def _replace_thread(self, exc: BaseException) -> None:
        """Kafka's REPLACE_THREAD: drop everything since the last commit and resume from it.

        Under exactly-once the open transaction is aborted and the active tasks' stores are wiped and
        rebuilt from their (committed) changelogs; under at-least-once the tasks are closed without a
        commit and reopened from their checkpoints. Input resumes at the committed offsets.
        """
        self.stats.replaced_threads += 1
        log.error(
            "stream thread failed (%s: %s); replacing it: resuming from the last commit",
            type(exc).__name__,
            exc,
        )
        self.committer.abort()
        self.lifecycle.transition(State.REBALANCING, strict=False)
        self._reinitialize_tasks()
        self.lifecycle.transition(State.RUNNING, strict=False)

    def _on_uncaught(self, exc: BaseException, response: str | None = None) -> None:
        self.error = exc
        if response is None:
            response = self._decide(exc)
        if isinstance(exc, KafkaException) and is_fenced(exc):
            self.fenced = True
        log.error(
            "stream thread failed (%s: %s); response: %s",
            type(exc).__name__,
            exc,
            response,
            exc_info=exc if not isinstance(exc, StreamhouseError) else None,
        )
        if response == SHUTDOWN_APPLICATION and self.metadata is not None:
            self.metadata.update_local(shutdown=True)
            time.sleep(0.5)
        self._shutdown(clean=False, final=State.ERROR)

    def _shutdown(self, *, clean: bool, final: State) -> None:
        self._closing = True
        pending = State.PENDING_SHUTDOWN if final is State.NOT_RUNNING else State.PENDING_ERROR
        self.lifecycle.transition(pending, strict=False)
        registry = self.registry
        if registry is not None and registry.tasks:
            if clean:
                try:
                    self._commit(list(registry.tasks.values()), closing=True)
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
            for key in list(registry.tasks):
                active = registry.remove(key)
                if active is not None:
                    try:
                        active.task.close(dirty=not clean)
                    except Exception:
                        log.exception("closing task %s failed", active.id)
        self._release_resources()
        self.connection_log.report_pending()
        self.lifecycle.transition(final, strict=False)

    def _finish_rebalance(self, timeout_s: float = 8.0) -> None:
        """Let a rebalance we are in the middle of complete before leaving the group.

        The embedded broker never completes a rebalance whose member leaves between its revocation and
        the next assignment (the remaining members loop on "rebalance in progress"), so a shutdown that
        starts inside a rebalance first rejoins (taking no tasks: ``_closing`` is set), then leaves.
        """
        consumer = self.consumer
        if consumer is None or not self._in_rebalance:
            return
        deadline = time.monotonic() + timeout_s
        with contextlib.suppress(Exception):
            while self._in_rebalance and time.monotonic() < deadline:
                consumer.consume(100, 0.1)

    def _release_resources(self) -> None:
        committer = self.committer
        consumer_held = committer is not None and committer.consumer_held
        if consumer_held:
            # closing would wait behind it for as long as the cluster stays away
            log.warning(
                "an offset commit abandoned during the outage still holds the stream consumer: it is "
                "not closed (the group drops this member after its session timeout)"
            )
        else:
            self._finish_rebalance()
        consumer = None if consumer_held else self.consumer
        for name, action in (
            ("standby", lambda: self.standby and self.standby.close()),
            ("global", lambda: self.global_state and self.global_state.close()),
            ("consumer", lambda: consumer is not None and consumer.close()),
            ("sink producer", lambda: self.sink_producer is not None and self.sink_producer.flush(5)),
            ("producer", lambda: self.producer is not None and self.producer.flush(5)),
            ("restore", lambda: self.reader is not None and self.reader.close()),
            ("metadata", lambda: self.metadata and self.metadata.stop()),
            ("http", lambda: self.http and self.http.stop()),
        ):
            try:
                action()
            except Exception:
                log.exception("closing the %s client failed", name)
        self.standby = None
        self.global_state = None
        # drop the client handles so librdkafka's threads end now, not whenever the app is collected
        self.producer = self.sink_producer = self.consumer = None
        if self.collector is not None:
            self.collector.release_clients()
        if committer is not None:
            committer.release_clients()
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                unlock_state_dir(self._lock_fd)
            self._lock_fd = None

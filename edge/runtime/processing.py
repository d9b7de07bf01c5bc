"""The stream thread's processing loop: consume, process, punctuate, commit, answer queries.

One loop iteration: take up to ``max.poll.records`` fetched records (:func:`edge.runtime.fetch.fetch_ready`:
at once when there are any, else blocking up to ``poll.ms`` for the first; rebalance callbacks run inside
it, see :mod:`edge.runtime.rebalance`), hand them to the tasks (:mod:`edge.runtime.record_order`: a task
with one input partition processes its records at once, a task with several in timestamp order), poll the
global, standby and producer clients, fire due wall-clock punctuators (on the timer, input or not) and advance
idle tasks' stream time (``idle.stream.time.advance.ms``), commit when the interval passed or a processor
asked (:mod:`edge.runtime.commit` for the order), run queued interactive queries, and once a second
refresh metrics and standbys.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from edge.runtime.commit import TransactionAbortedError
from edge.runtime.fetch import fetch_ready

log = logging.getLogger(__name__)

_EOF = KafkaError._PARTITION_EOF


class ProcessingLoop:
    """The processing part of :class:`~edge.runtime.app.StreamsApp` (a mixin: it uses the app's
    consumer, registry, committer and stats)."""

    def _loop(self) -> None:
        cfg = self.config
        consumer = self.consumer
        registry = self.registry
        assert registry is not None
        stats = self.stats
        committer = self.committer
        eos = cfg.exactly_once
        max_records = cfg.max_poll_records
        poll_s = cfg.poll_ms / 1000
        interval_s = cfg.effective_commit_interval_ms / 1000
        next_commit = time.monotonic() + interval_s
        next_housekeeping = 0.0
        uncommitted = 0
        perf = time.perf_counter
        router = self.router
        grouped = registry.grouped  # live view: tasks with several input partitions
        idle_advance = cfg.idle_stream_time_advance_ms >= 0
        fetch = fetch_ready  # what is fetched, at once; blocks up to poll.ms only when there is nothing
        # whether the consumer holds exactly one partition, re-read only after a rebalance callback ran
        assignment_version = -1
        one_partition = False
        while not self._stop.is_set():
            if committer.consumer_held:
                self._wait_out_abandoned_commit(poll_s)
                continue
            msgs = fetch(consumer, max_records, poll_s)
            if self._callback_error is not None:
                exc, self._callback_error = self._callback_error, None
                raise exc
            if msgs:
                if eos and not committer.txn_open:
                    committer.begin()
                t0 = perf()
                route = registry.route
                first = msgs[0]
                parts = route.get(first.topic())
                task = parts.get(first.partition()) if parts is not None else None
                if assignment_version != self._assignment_version:
                    assignment_version = self._assignment_version
                    one_partition = len(consumer.assignment()) == 1
                if task is not None and len(route) == 1 and len(parts) == 1 and one_partition:
                    # one task, one assigned partition: every message is this task's
                    n = task.process_batch(msgs, self._consumer_error)
                else:
                    n = router.dispatch(msgs)
                stats.records_processed += n
                stats.batches += 1
                stats.process_seconds += perf() - t0
                uncommitted += n
            if grouped and router.has_buffered():
                # tasks reading several partitions: lowest timestamp first, max.task.idle.ms
                if eos and not committer.txn_open:
                    committer.begin()
                t0 = perf()
                n = router.process_buffered(time.time_ns() // 1_000_000)
                stats.records_processed += n
                stats.process_seconds += perf() - t0
                uncommitted += n
            gs = self.global_state
            if gs is not None:
                gs.poll()
            if self.standby is not None:
                self.standby.poll()
            self.collector.poll()
            now = time.monotonic()
            if registry.tasks:
                now_ms = time.time_ns() // 1_000_000
                for active in registry.tasks.values():
                    t = active.task
                    if t.has_wall_clock_punctuations:
                        if eos:
                            committer.begin()
                        if t.punctuate_wall_clock(now_ms):
                            uncommitted += 1
                    if idle_advance and not active.group:
                        # idle.stream.time.advance.ms (not Kafka Streams): a quiet task's stream time
                        # follows the wall clock
                        target = t.idle_stream_time_target(now_ms)
                        if target >= 0:
                            if eos:
                                committer.begin()
                            t.advance_stream_time(target)
                            uncommitted += 1
            commit_requested = (
                any(a.task.commit_requested for a in registry.tasks.values()) if uncommitted else False
            )
            if now >= next_commit or commit_requested:
                if uncommitted or (gs is not None and gs.dirty):
                    self._commit(registry.tasks.values())
                    uncommitted = 0
                elif self.standby is not None:
                    self.standby.checkpoint_all()
                next_commit = now + interval_s
            self._run_queries()
            if now >= next_housekeeping:
                next_housekeeping = now + 1.0
                self._housekeeping()

    def _commit(self, tasks: Any, *, closing: bool = False) -> None:
        extra = []
        if self.global_state is not None and self.global_state.dirty:
            extra.append(self.global_state)
        try:
            self.committer.commit(tasks, closing=closing, extra=extra)
        except TransactionAbortedError as exc:
            log.warning("%s; rebuilding the active tasks' state from their changelogs", exc)
            self._reinitialize_tasks()
            return
        if self.standby is not None:
            self.standby.checkpoint_all()

    def _reinitialize_tasks(self) -> None:
        """After an aborted transaction: drop uncommitted local state and resume from the last commit."""
        registry = self.registry
        assert registry is not None
        keys = list(registry.tasks)
        for key in keys:
            active = registry.remove(key)
            if active is not None:
                with contextlib.suppress(Exception):
                    active.task.close(dirty=True)
        self.collector.changelog_offsets.clear()
        assignment = self.consumer.assignment()
        if assignment:
            committed = self.consumer.committed(assignment, timeout=30)
            for tp in committed:
                offset = tp.offset if tp.offset >= 0 else -2  # OFFSET_BEGINNING
                self.consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
        self._create_tasks(keys)

    def _consumer_error(self, err: KafkaError) -> None:
        if err.code() == _EOF:
            return  # end-of-partition events (enable.partition.eof, see record_order) are not errors
        if err.fatal():
            raise KafkaException(err)
        log.warning("consumer error: %s", err)

    def _housekeeping(self) -> None:
        stats = self.stats
        stats.tick_rate()
        assert self.stores is not None
        stats.store_sizes = self.stores.store_sizes()
        self.reader.serve_idle()
        if self.standby is not None:
            stats.standby_store_sizes = self.standby.store_sizes()
            self._reconcile_standbys()
        md = self.metadata
        if md is not None and md.shutdown_requested_by is not None:
            log.error("instance %s requested the whole application to shut down", md.shutdown_requested_by)
            self._stop.set()

    def _run_queries(self) -> None:
        q = self._queries
        while True:
            try:
                fn, fut = q.get_nowait()
            except queue.Empty:
                return
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn())
            except BaseException as exc:
                fut.set_exception(exc)

"""The stream thread (Kafka Streams' ``StreamThread``): subscribe, then consume, process, punctuate,
commit and answer queries until asked to stop; decide what a failure leads to.

One loop iteration: take up to ``max.poll.records`` fetched records (:func:`edge.runtime.fetch.fetch_ready`:
at once when there are any, else blocking up to ``poll.ms`` for the first; rebalance callbacks run inside
it, see :mod:`edge.runtime.rebalance`), hand them to the tasks (:mod:`edge.runtime.record_order`: a task
with one input partition processes its records at once, a task with several in timestamp order), poll the
global, standby and producer clients, fire due wall-clock punctuators (on the timer, input or not) and advance
idle tasks' stream time (``idle.stream.time.advance.ms``), commit when the interval passed or a processor
asked (:mod:`edge.runtime.commit` for the order), run queued interactive queries, and once a second
refresh metrics and standbys.

Which tasks exist and what a rebalance or a commit does to them is the
:class:`~edge.runtime.task_manager.TaskManager`'s job; an outage's recovery is the
:class:`~edge.runtime.outage.OutageWatchdog`'s (this thread carries out its :class:`OutageActions`);
failures and shutdown are :class:`~edge.runtime.shutdown.Shutdown`'s.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException

from edge.kafka import KafkaClientConfig
from edge.runtime.assignment import MAX_COMMIT_DEFERRAL_S
from edge.runtime.commit import Committer, ProducerFencedError
from edge.runtime.config import REPLACE_THREAD, SHUTDOWN_CLIENT, StreamsConfig
from edge.runtime.connectivity import ClusterUnavailableError
from edge.runtime.fetch import fetch_ready
from edge.runtime.metadata import MetadataService
from edge.runtime.outage import OutageWatchdog
from edge.runtime.producer import KafkaCollector
from edge.runtime.rebalance import RebalanceListener
from edge.runtime.record_order import RecordRouter
from edge.runtime.restore import ChangelogReader
from edge.runtime.shutdown import Shutdown
from edge.runtime.state import State
from edge.runtime.stats import RuntimeStats
from edge.runtime.stores import StoreProvider
from edge.runtime.task_manager import TaskManager
from edge.runtime.topics import InternalTopicPartitionsError, MissingTopicError, TopicPlan, validate_topics
from edge.runtime.warmup import WarmupGate

log = logging.getLogger(__name__)

_EOF = KafkaError._PARTITION_EOF

#: Errors that end the instance whatever the uncaught exception handler answers: replacing the stream
#: thread cannot fix a missing or mis-partitioned topic, nor bring the cluster back.
FATAL_ERRORS = (ClusterUnavailableError, MissingTopicError, InternalTopicPartitionsError)

Query = tuple[Callable[[], Any], Future]


class StreamThread:
    def __init__(
        self,
        *,
        config: StreamsConfig,
        client: KafkaClientConfig,
        plan: TopicPlan,
        consumer: Consumer,
        collector: KafkaCollector,
        committer: Committer,
        reader: ChangelogReader,
        metadata: MetadataService,
        outage: OutageWatchdog,
        tasks: TaskManager,
        stores: StoreProvider,
        shutdown: Shutdown,
        stats: RuntimeStats,
        stop: threading.Event,
        closing: threading.Event,
        queries: queue.SimpleQueue[Query],
        replace_producer: Callable[[], None],
        fetch_bytes_per_partition: int = 1_048_576,
    ) -> None:
        self.config = config
        self.client = client
        self.plan = plan
        self.consumer = consumer
        self.collector = collector
        self.committer = committer
        self.reader = reader
        self.metadata = metadata
        self.outage = outage
        self.tasks = tasks
        self.stores = stores
        self.shutdown = shutdown
        self.stats = stats
        self._stop = stop
        self._queries = queries
        self._replace_producer = replace_producer
        #: an exception raised inside a librdkafka callback (rebalance, statistics), re-raised by the loop
        #: after ``consume()`` returns
        self.callback_error: BaseException | None = None
        #: when the periodic commit was first put off for a join (None: it is not)
        self._commit_deferred_since: float | None = None
        self.listener = RebalanceListener(tasks, closing=closing.is_set, on_error=self.report_callback_error)
        self.router = RecordRouter(
            tasks.registry,
            self.consumer_error,
            lambda: self.consumer,
            buffered_per_partition=config.buffered_records_per_partition,
            buffered_bytes_per_partition=fetch_bytes_per_partition,
        )

    # -- the thread ---------------------------------------------------------------------------------------
    def run(self) -> None:
        """The thread's target: start the tasks, process until stopped, shut down (cleanly or not)."""
        try:
            self.tasks.open()
            topics = self.plan.source_topics()
            if topics:
                # KIP-441: take stateful tasks over only once warm copies of them caught up
                self.tasks.lifecycle.transition(State.REBALANCING, strict=False)
                WarmupGate(
                    config=self.config, tasks=self.tasks, metadata=self.metadata, stop=self._stop
                ).run()
                listener = self.listener
                self.consumer.subscribe(
                    topics,
                    on_assign=listener.on_assign,
                    on_revoke=listener.on_revoke,
                    on_lost=listener.on_lost,
                )
            else:
                self.tasks.lifecycle.transition(State.RUNNING)
            while True:
                try:
                    self._loop()
                    break
                except FATAL_ERRORS as exc:
                    self.shutdown.on_uncaught(exc, SHUTDOWN_CLIENT)
                    return
                except BaseException as exc:
                    if self.outage.tasks_migrated(exc):
                        self.drop_tasks(f"{type(exc).__name__}: {exc}", resume=True)
                        continue
                    if isinstance(exc, ProducerFencedError):
                        raise
                    response = self.shutdown.decide(exc)
                    if response != REPLACE_THREAD or self.committer.fatal:
                        self.shutdown.on_uncaught(exc, response)
                        return
                    self.shutdown.replace_thread(exc)
        except ProducerFencedError as exc:
            self.shutdown.fenced = True
            log.error("%s; shutting this instance down", exc)
            self.shutdown.run(clean=False, final=State.NOT_RUNNING)
            return
        except BaseException as exc:
            self.shutdown.on_uncaught(exc)
            return
        self.shutdown.run(clean=True, final=State.NOT_RUNNING)

    def _loop(self) -> None:
        cfg = self.config
        consumer = self.consumer
        tasks = self.tasks
        registry = tasks.registry
        stats = self.stats
        committer = self.committer
        listener = self.listener
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
        defer_in_join = tasks.protocol.cooperative and not eos
        fetch = fetch_ready  # what is fetched, at once; blocks up to poll.ms only when there is nothing
        # whether the consumer holds exactly one partition, re-read only after a rebalance callback ran
        assignment_version = -1
        one_partition = False
        while not self._stop.is_set():
            if committer.consumer_held:
                self._wait_out_abandoned_commit(poll_s)
                continue
            msgs = fetch(consumer, max_records, poll_s)
            if self.callback_error is not None:
                exc, self.callback_error = self.callback_error, None
                raise exc
            if msgs:
                if eos and not committer.txn_open:
                    committer.begin()
                t0 = perf()
                route = registry.route
                first = msgs[0]
                parts = route.get(first.topic())
                task = parts.get(first.partition()) if parts is not None else None
                if assignment_version != listener.version:
                    assignment_version = listener.version
                    one_partition = len(consumer.assignment()) == 1
                if task is not None and len(route) == 1 and len(parts) == 1 and one_partition:
                    # one task, one assigned partition: every message is this task's
                    n = task.process_batch(msgs, self.consumer_error)
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
            gs = tasks.global_state
            if gs is not None:
                gs.poll()
            standby = tasks.standby
            if standby is not None:
                standby.poll()
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
            if (now >= next_commit or commit_requested) and not (
                defer_in_join and self._commit_waits_for_join(now)
            ):
                if uncommitted or (gs is not None and gs.dirty):
                    tasks.commit(registry.tasks.values())
                    uncommitted = 0
                elif standby is not None:
                    standby.checkpoint_all()
                next_commit = now + interval_s
            self.run_queries()
            if now >= next_housekeeping:
                next_housekeeping = now + 1.0
                self._housekeeping()

    def _commit_waits_for_join(self, now: float) -> bool:
        """Would an offset commit now wait for the group's join to complete? (Cooperative protocol,
        at-least-once: see :class:`~edge.runtime.assignment.JoinStateWatcher`.) Never put off for longer
        than :data:`~edge.runtime.assignment.MAX_COMMIT_DEFERRAL_S`."""
        joining = self.listener.join_state is not None and self.listener.join_state.joining
        if not (self.listener.in_rebalance or joining):
            self._commit_deferred_since = None
            return False
        since = self._commit_deferred_since
        if since is None:
            self._commit_deferred_since = since = now
        return now - since < MAX_COMMIT_DEFERRAL_S

    def consumer_error(self, err: KafkaError) -> None:
        if err.code() == _EOF:
            return  # end-of-partition events (enable.partition.eof, see record_order) are not errors
        if err.fatal():
            raise KafkaException(err)
        log.warning("consumer error: %s", err)

    def report_callback_error(self, exc: BaseException) -> None:
        """An exception inside a librdkafka callback: the loop raises the first one after ``consume()``."""
        if self.callback_error is None:
            self.callback_error = exc

    def _housekeeping(self) -> None:
        stats = self.stats
        stats.tick_rate()
        stats.store_sizes = self.stores.store_sizes()
        self.reader.serve_idle()
        standby = self.tasks.standby
        if standby is not None:
            stats.standby_store_sizes = standby.store_sizes()
            self.tasks.reconcile_standbys()
        md = self.metadata
        if md.shutdown_requested_by is not None:
            log.error("instance %s requested the whole application to shut down", md.shutdown_requested_by)
            self._stop.set()

    def run_queries(self) -> None:
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

    def _wait_out_abandoned_commit(self, timeout_s: float) -> None:
        """The stream thread's turn while an abandoned offset commit holds the consumer (its tasks are
        already dropped): it serves the producer, whose statistics keep the watchdog informed, the
        interactive queries and the give-up deadline, and uses the consumer again once the commit has
        ended, which it does when the cluster answers."""
        self.committer.wait_for_abandoned(timeout_s)
        self.run_queries()
        self.outage.give_up_if_expired()

    # -- the stream consumer's statistics -------------------------------------------------------------
    def on_stats(self, raw: str) -> None:
        """librdkafka's statistics of the stream consumer: broker states for the watchdog, then the
        outage checks (on this thread, inside ``consume()``), then the consumer lag."""
        try:
            import orjson

            data = orjson.loads(raw)
        except Exception:
            return
        self.outage.cluster.observe_stats(data.get("brokers") or {})
        self.outage.partitions.observe("consumer", data)  # its partitions without a leader (/health)
        try:
            self.outage.check(self)
        except BaseException as exc:
            # raised by the loop after consume() returns, like a rebalance callback's error
            self.report_callback_error(exc)
        lag: dict[tuple[str, int], int] = {}
        for topic, t in (data.get("topics") or {}).items():
            for pid, p in (t.get("partitions") or {}).items():
                pnum = int(pid)
                if pnum < 0:
                    continue
                value = p.get("consumer_lag", -1)
                if value >= 0:
                    lag[(topic, pnum)] = value
        self.stats.consumer_lag = lag

    # -- OutageActions ------------------------------------------------------------------------------------
    def drop_tasks(self, reason: str, *, resume: bool) -> None:
        self.tasks.drop_all(reason, resume=resume)

    def check_topics(self) -> list[str]:
        return validate_topics(self.plan, self.client)

    def resume_tasks(self) -> None:
        """The cluster answers again: check the topics (a broker may have lost them), start over with a
        new producer under exactly-once, then resume the partitions the consumer still holds."""
        started = time.monotonic()
        created = self.check_topics()
        if created:
            log.warning("the cluster had lost internal topic(s) %s: created them again", created)
        checked = time.monotonic()
        self.replace_producer()
        replaced = time.monotonic()
        self.tasks.resume_held_partitions()
        # where a resume's time goes (docs/reliability.md, "What a stall is made of")
        log.info(
            "resumed: topics checked in %.1f s, producer %.1f s, tasks created and restored in %.1f s",
            checked - started,
            replaced - checked,
            time.monotonic() - replaced,
        )

    def replace_producer(self) -> None:
        self._replace_producer()

    # -- shutdown -----------------------------------------------------------------------------------------
    def release_clients(self) -> None:
        """Once the clients are closed (or, the consumer held by an abandoned commit, left to it): drop
        this thread's and its task manager's handle on the consumer, so that its librdkafka threads end
        with the last user rather than whenever the app is collected."""
        self.consumer = self.tasks.consumer = None  # type: ignore[assignment]

    def finish_rebalance(self, timeout_s: float = 8.0) -> None:
        """Let a rebalance we are in the middle of complete before leaving the group.

        The embedded broker never completes a rebalance whose member leaves between its revocation and
        the next assignment (the remaining members loop on "rebalance in progress"), so a shutdown that
        starts inside a rebalance first rejoins (taking no tasks: the instance is closing), then leaves.
        Under the cooperative protocol a member is also inside a rebalance from the moment it sends its
        JoinGroup (librdkafka's join state), with no revocation before it, and from a revocation of
        partitions until the rejoin that follows it (a zombie fenced right after handing tasks over).
        """

        def rebalancing() -> bool:
            joining = self.listener.join_state is not None and self.listener.join_state.in_group_rebalance
            return self.listener.in_rebalance or joining

        if not rebalancing():
            return
        deadline = time.monotonic() + timeout_s
        consumer = self.consumer
        with contextlib.suppress(Exception):
            while rebalancing() and time.monotonic() < deadline:
                consumer.consume(100, 0.1)

"""The task manager of the stream thread (Kafka Streams' ``TaskManager``): which active, standby and
global tasks this instance runs, and what a rebalance, a commit or a lost cluster does to them.

It owns the :class:`~edge.runtime.tasks.TaskRegistry` (the active tasks and the record routes), the
:class:`~edge.runtime.standby.StandbyManager` and the :class:`~edge.runtime.global_state.GlobalState`,
creates tasks (restoring their stores first, through the :class:`~edge.runtime.tasks.TaskFactory` and
the shared :class:`~edge.runtime.restore.ChangelogReader`), commits them (:mod:`edge.runtime.commit`
for the order), closes them clean or dirty, and publishes the assignment for interactive queries.

Everything here runs on the stream thread: rebalance callbacks inside ``consume()`` (see
:mod:`edge.runtime.rebalance`), commits and recoveries from the loop. Other threads only read
``restoring`` and, through :class:`~edge.runtime.stores.StoreProvider`, the stores (on the stream
thread as well, via ``run_on_stream_thread``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from edge.processor.config import StreamsConfig as TaskConfig
from edge.runtime.assignment import EAGER, RebalanceProtocol
from edge.runtime.commit import Committer, TransactionAbortedError
from edge.runtime.config import StreamsConfig
from edge.runtime.global_state import GlobalState
from edge.runtime.metadata import MetadataService
from edge.runtime.outage import OutageWatchdog
from edge.runtime.producer import KafkaCollector
from edge.runtime.restore import ChangelogReader, RestoreProgress
from edge.runtime.standby import StandbyManager, standby_wanted
from edge.runtime.state import Lifecycle, State
from edge.runtime.stats import RuntimeStats
from edge.runtime.tasks import ActiveTask, TaskFactory, TaskKey, TaskRegistry
from edge.runtime.topics import TopicPlan
from edge.runtime.warmup import warmups_enabled
from edge.state.checkpoint import checkpoint_path, delete_checkpoint

log = logging.getLogger(__name__)

#: an offset commit refused because the group is between generations (the member is not dropped)
REBALANCE_COMMIT_ERRORS = frozenset({KafkaError.ILLEGAL_GENERATION, KafkaError.REBALANCE_IN_PROGRESS})


class TaskManager:
    def __init__(
        self,
        *,
        config: StreamsConfig,
        topology: Any,
        task_config: TaskConfig,
        plan: TopicPlan,
        instance_id: str,
        registry: TaskRegistry,
        consumer: Consumer,
        collector: KafkaCollector,
        committer: Committer,
        reader: ChangelogReader,
        metadata: MetadataService,
        outage: OutageWatchdog,
        lifecycle: Lifecycle,
        stats: RuntimeStats,
        stop: threading.Event,
        aux_consumer_conf: Callable[[str], dict[str, Any]],
        check_topics: Callable[[], list[str]],
        replace_producer: Callable[[], None],
        protocol: RebalanceProtocol | None = None,
    ) -> None:
        self.config = config
        self.topology = topology
        self.task_config = task_config
        self.plan = plan
        self.instance_id = instance_id
        self.registry = registry
        self.consumer = consumer
        self.collector = collector
        self.committer = committer
        self.reader = reader
        self.metadata = metadata
        self.outage = outage
        self.lifecycle = lifecycle
        self.stats = stats
        self._stop = stop
        self._aux_consumer_conf = aux_consumer_conf
        self._check_topics = check_topics
        #: exactly-once after an outage: a new transactional producer (the clients' owner makes it)
        self._replace_producer = replace_producer
        #: cooperative: assignments and revocations carry only the partitions that move
        self.protocol = protocol or RebalanceProtocol(EAGER, "not given")
        #: loaded by :meth:`open` on the stream thread (None: the topology has no global stores)
        self.global_state: GlobalState | None = None
        #: standby tasks and a joining instance's warm-ups (None: neither is configured); made by :meth:`open`
        self.standby: StandbyManager | None = None
        #: builds active tasks; created by :meth:`open`, once the global stores it hands them are loaded
        self.factory: TaskFactory | None = None
        #: stores are being restored (queries answer 503 meanwhile); read from the HTTP thread
        self.restoring = False
        #: warm-ups of a joining instance (edge.runtime.warmup) -> until when (monotonic) they are kept for
        #: the hand-over when no standby placement wants them: the tasks arrive over a few rebalances
        self.warmups: dict[TaskKey, float] = {}
        #: sub-topologies that may have standby tasks (computed on first use)
        self._eligible_cache: set[int] | None = None

    # -- start (on the stream thread) ---------------------------------------------------------------
    def open(self) -> None:
        """Load the global stores, then set up standby tasks and the active tasks' factory."""
        cfg = self.config
        self._start_global()
        self.standby = (
            StandbyManager(
                topology=self.topology,
                task_config=self.task_config,
                application_id=cfg.application_id,
                state_dir=Path(cfg.state_dir),
                consumer_config=self._aux_consumer_conf("standby"),
                batch_records=cfg.max_poll_records,
                markers=not cfg.exactly_once,
            )
            if cfg.num_standby_replicas > 0 or warmups_enabled(cfg, self.protocol)
            else None
        )
        self.factory = TaskFactory(
            topology=self.topology,
            task_config=self.task_config,
            application_id=cfg.application_id,
            state_dir=Path(cfg.state_dir),
            collector=self.collector,
            changelog_sink=self.collector.changelog_sink(),
            global_stores=self.global_state.stores if self.global_state else {},
            reader=self.reader,
            exactly_once=cfg.exactly_once,
            on_restore=self._on_restored,
            committed_offsets=self._committed_offsets,
        )

    def _start_global(self) -> None:
        if not self.plan.global_topics:
            return
        gst = next(st for st in self.topology.subtopologies() if st.is_global)
        self.global_state = GlobalState(
            topology=self.topology,
            subtopology_id=gst.id,
            topic_partitions=self.plan.global_topics,
            task_config=self.task_config,
            collector=self.collector,
            application_id=self.config.application_id,
            state_dir=Path(self.config.state_dir),
            consumer_config=self._aux_consumer_conf("global"),
            batch_records=self.config.restore_batch_records,
            timeout_ms=self.config.restore_timeout_ms,
            silent_ahead_s=self.reader.silent_ahead_s,
        )
        self.restoring = True
        try:
            self.global_state.bootstrap()
        finally:
            self.restoring = False
            self.stats.restores.extend(self.global_state.progress)

    # -- rebalance (Kafka Streams' StreamsRebalanceListener -> TaskManager) ----------------------------
    def handle_assignment(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.stats.rebalances += 1
        self.lifecycle.transition(State.REBALANCING, strict=False)
        registry = self.registry
        # Kafka Streams' assignor checks the topics at every rebalance: a source topic may be gone and an
        # internal one re-created by someone else with another partition count (raises; fatal)
        # (cooperative: an assignment that adds nothing -- the second half of a hand-over, for the members
        # that keep their tasks -- checks nothing new, and the admin round trip would hold their tasks)
        created = [] if (self.protocol.cooperative and not partitions) else self._check_topics()
        if created:
            log.warning("internal topic(s) %s were missing: created them again", created)
        # back after an outage, and the group assigned partitions again: they start from the commit
        self.outage.assigned(self._replace_producer)
        keys = [
            k
            for k in registry.keys_for([(tp.topic, tp.partition) for tp in partitions])
            if k not in registry.tasks
        ]
        if self.protocol.cooperative:
            # only the partitions that move in: the tasks already running go on untouched
            log.info(
                "assigned %d more partitions -> new tasks %s (running on: %s)",
                len(partitions),
                sorted(keys),
                sorted(registry.tasks),
            )
            consumer.incremental_assign(partitions)
        else:
            log.info("assigned %d partitions -> tasks %s", len(partitions), sorted(keys))
            consumer.assign(partitions)
        self.create_tasks(keys)
        self.publish_assignment()
        self.reconcile_standbys()
        self.lifecycle.transition(State.RUNNING, strict=False)

    def handle_revocation(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        registry = self.registry
        self.lifecycle.transition(State.REBALANCING, strict=False)
        keys = [
            k
            for k in registry.keys_for([(tp.topic, tp.partition) for tp in partitions])
            if k in registry.tasks
        ]
        cooperative = self.protocol.cooperative
        if not keys:
            if cooperative:
                consumer.incremental_unassign(partitions)
            return
        log.info("revoking tasks %s: committing and closing them", sorted(keys))
        committed = False
        try:
            # every task: under exactly-once they share one transaction (a commit of some would commit
            # the others' records without their offsets)
            self.commit(list(registry.tasks.values()), closing=True)
            committed = True
        except BaseException:
            with contextlib.suppress(Exception):
                self.committer.abort()
            raise
        finally:
            for key in keys:
                active = registry.remove(key)
                if active is not None:
                    with contextlib.suppress(Exception):
                        active.task.close(dirty=not committed)
            if cooperative:
                consumer.incremental_unassign(partitions)
                if self.config.exactly_once:
                    # the closing commit checkpointed every task; a running one under exactly-once whose
                    # stores write as they process must have none (a crash would trust stores holding
                    # uncommitted writes)
                    for active in registry.tasks.values():
                        if not active.checkpoint_while_running:
                            delete_checkpoint(checkpoint_path(active.dir))
            self.publish_assignment()

    def handle_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """The group dropped this member (session expired): no tasks until it rejoins (REBALANCING).

        With the cluster unreachable, aborting an open transaction would only block for its timeout:
        exactly-once starts over with a new transactional producer once the cluster answers again
        (``replace_producer``, from the outage's resume or the next assignment)."""
        log.warning(
            "lost partitions %s (session expired): closing their tasks without committing", partitions
        )
        if self.outage.reachable:
            with contextlib.suppress(Exception):
                self.committer.abort()
            self.drop_all("partitions lost", resume=False)
            # the broker may have restarted without its topics: check them before waiting to rejoin
            self.outage.resume_pending = True
        else:
            self.drop_all("partitions lost while the cluster is unreachable", resume=True)

    # -- active tasks -------------------------------------------------------------------------------------
    def create_tasks(self, keys: list[TaskKey]) -> None:
        factory = self.factory
        assert factory is not None, "open() first"
        if self.standby is not None:
            # a standby of the task holds its store directory: the active task takes it over
            for key in keys:
                self.standby.release(key)
                self.warmups.pop(key, None)
        self.restoring = True
        try:
            created = factory.create(keys, should_stop=self._stop.is_set)
        finally:
            self.restoring = False
        for active in created:
            self.registry.add(active)

    def _committed_offsets(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """The group's committed offsets (next offset to read) of ``partitions``; absent = none yet.

        A restore under at-least-once trusts only the changelog records these offsets cover
        (:mod:`edge.runtime.markers`), so a failure to read them fails the assignment rather than guess.
        """
        tps = [TopicPartition(topic, p) for topic, p in partitions]
        committed = self.consumer.committed(tps, timeout=30)
        out: dict[tuple[str, int], int] = {}
        for tp in committed:
            if tp.error is not None:
                raise KafkaException(tp.error)
            if tp.offset >= 0:
                out[(tp.topic, tp.partition)] = tp.offset
        return out

    def _on_restored(self, progress: RestoreProgress) -> None:
        stats = self.stats
        stats.restores = [
            p for p in stats.restores if not (p.task_id == progress.task_id and p.store == progress.store)
        ]
        stats.restores.append(progress)
        stats.restored_records += progress.restored
        # wall-clock time of the restore passes (partitions restored together overlap in time)
        stats.restore_seconds = self.reader.total_seconds

    def commit(self, tasks: Iterable[ActiveTask], *, closing: bool = False) -> None:
        extra = []
        if self.global_state is not None and self.global_state.dirty:
            extra.append(self.global_state)
        try:
            self.committer.commit(tasks, closing=closing, extra=extra)
        except KafkaException as exc:
            if closing or not self._commit_overlapped_rebalance(exc):
                raise
            # the group moved to a new generation while this member keeps its partitions (a cooperative
            # rebalance revokes only what moves, through handle_revocation): the work stays flushed and
            # the next commit covers it, as Kafka Streams retries a commit failed by a rebalance
            log.info("offset commit overlapped a rebalance (%s); committing again after it", exc)
            return
        except TransactionAbortedError as exc:
            log.warning("%s; resuming the active tasks from the last commit", exc)
            self.reinitialize()
            return
        if self.standby is not None:
            self.standby.checkpoint_all()

    def _commit_overlapped_rebalance(self, exc: KafkaException) -> bool:
        """At-least-once under the cooperative protocol: did an offset commit fail only because a
        rebalance bumped the group's generation? (Exactly-once aborts the transaction instead.)"""
        if not self.protocol.cooperative or self.config.exactly_once:
            return False
        err = exc.args[0] if exc.args else None
        return isinstance(err, KafkaError) and err.code() in REBALANCE_COMMIT_ERRORS

    def reinitialize(self) -> None:
        """After an aborted transaction or a replaced thread: drop uncommitted local state and resume
        from the last commit."""
        registry = self.registry
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
        self.create_tasks(keys)

    def drop_all(self, reason: str, *, resume: bool) -> None:
        """Kafka Streams' handleLostAll: close every active task without committing (its stores fall
        back to the last commit), discard what the producer still holds of the uncommitted work, and
        report REBALANCING until tasks are assigned again."""
        registry = self.registry
        keys = sorted(registry.tasks)
        self.outage.tasks_dropping(reason, keys, resume=resume)
        collector = self.collector
        if not self.config.exactly_once and collector.producer is not None:
            # records of uncommitted work are produced again when it is redone; delivered now they would
            # only be orphans after the changelogs' last commit marker (in-flight ones may still land:
            # the restore's markers handle those, as after a crash)
            for producer in collector.producers:
                with contextlib.suppress(Exception):
                    producer.purge(in_queue=True, in_flight=False, blocking=False)
                    producer.poll(0)
            collector.first_error = None
            collector.changelog_offsets.clear()
            collector.marker_due.clear()
        for key in keys:
            active = registry.remove(key)
            if active is not None:
                with contextlib.suppress(Exception):
                    active.task.close(dirty=True)
        self.publish_assignment()
        self.lifecycle.transition(State.REBALANCING, strict=False)

    def resume_held_partitions(self) -> None:
        """After an outage: resume the partitions the consumer still holds from their committed offsets.
        When the group dropped this member meanwhile, the consumer rejoins by itself and
        :meth:`handle_assignment` creates the tasks."""
        assignment = self.consumer.assignment()
        log.info(
            "the Kafka cluster at %s answers again; %s",
            self.config.bootstrap_servers,
            f"resuming {len(assignment)} partitions from the last commit" if assignment else "rejoining",
        )
        registry = self.registry
        idle = [
            tp
            for tp in assignment
            if not any(k in registry.tasks for k in registry.keys_for([(tp.topic, tp.partition)]))
        ]
        if not idle:
            return
        for tp in self.consumer.committed(idle, timeout=30):
            if tp.error is not None:
                raise KafkaException(tp.error)
            offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
            self.consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
        keys = registry.keys_for([(tp.topic, tp.partition) for tp in idle])
        self.create_tasks(keys)
        self.publish_assignment()
        self.reconcile_standbys()
        self.lifecycle.transition(State.RUNNING, strict=False)

    def close_all(self, *, clean: bool) -> None:
        """At shutdown: close every active task (``clean``: after the final commit)."""
        registry = self.registry
        for key in list(registry.tasks):
            active = registry.remove(key)
            if active is not None:
                try:
                    active.task.close(dirty=not clean)
                except Exception:
                    log.exception("closing task %s failed", active.id)

    # -- assignment, standbys -------------------------------------------------------------------------
    def publish_assignment(self) -> None:
        active: dict[int, list[int]] = {}
        for st, p in sorted(self.registry.tasks):
            active.setdefault(st, []).append(p)
        standby: dict[int, list[int]] = {}
        if self.standby is not None:
            for st, p in sorted(self.standby.tasks):
                standby.setdefault(st, []).append(p)
        self.metadata.update_local(active=active, standby=standby)

    def reconcile_standbys(self) -> None:
        sm = self.standby
        if sm is None:
            return
        metadata = self.metadata
        live = metadata.live_instances()
        wanted: set[TaskKey] = set()
        for st_plan in self.plan.subtopologies.values():
            if st_plan.id not in self._standby_eligible(sm):
                continue
            for p in range(st_plan.partitions):
                key = (st_plan.id, p)
                if key in self.registry.tasks:
                    continue
                owner = metadata.owner_of(st_plan.id, p)
                if standby_wanted(
                    self.instance_id,
                    owner,
                    live,
                    st_plan.partitions,
                    p,
                    self.config.num_standby_replicas,
                    cooperative=self.protocol.cooperative,
                ):
                    wanted.add(key)
        if self.warmups:
            now = time.monotonic()
            self.warmups = {k: until for k, until in self.warmups.items() if until > now}
            wanted.update(k for k in self.warmups if k not in self.registry.tasks)
        before = set(sm.tasks)
        sm.reconcile(wanted)
        if set(sm.tasks) != before:
            self.publish_assignment()

    def _standby_eligible(self, sm: StandbyManager) -> set[int]:
        cached = self._eligible_cache
        if cached is None:
            cached = self._eligible_cache = {st for st in self.plan.subtopologies if sm.eligible(st)}
        return cached

    # -- shutdown -------------------------------------------------------------------------------------------
    def close_clients(self) -> list[tuple[str, Callable[[], Any]]]:
        """The standby and global clients' close actions, for the shutdown sequence (which logs failures);
        the manager forgets them: nothing may use them any more."""
        standby, global_state = self.standby, self.global_state
        self.standby = self.global_state = None
        return [
            ("standby", lambda: standby is not None and standby.close()),
            ("global", lambda: global_state is not None and global_state.close()),
        ]

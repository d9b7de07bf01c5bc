"""Rebalance callbacks of the stream thread's consumer: create tasks for assigned partitions (restoring
their stores first), commit and close tasks of revoked ones, drop lost ones without committing, and keep
the published assignment and the standby tasks in line.

They run on the stream thread inside ``consume()``; :meth:`RebalanceCallbacks._guarded` keeps an exception
from escaping into librdkafka and has the processing loop re-raise it after ``consume()`` returns.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaException, TopicPartition

from edge.runtime.restore import RestoreProgress
from edge.runtime.standby import standby_wanted
from edge.runtime.state import State
from edge.runtime.tasks import TaskKey
from edge.runtime.topics import validate_topics

log = logging.getLogger(__name__)


class RebalanceCallbacks:
    """The rebalance part of :class:`~edge.runtime.app.StreamsApp` (a mixin)."""

    def _guarded(self, callback: Callable[[Consumer, list[TopicPartition]], None]) -> Callable[..., None]:
        """Never let an exception escape a rebalance callback (librdkafka would leave the rebalance
        half done and ``close()`` would hang); the loop re-raises it after ``consume()`` returns."""

        def run(consumer: Consumer, partitions: list[TopicPartition]) -> None:
            self._assignment_version += 1
            self._in_rebalance = callback == self._on_revoke
            if self._closing and callback != self._on_revoke:
                return
            try:
                callback(consumer, partitions)
            except BaseException as exc:
                log.debug("rebalance callback failed: %s", exc)
                if self._callback_error is None:
                    self._callback_error = exc

        return run

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.stats.rebalances += 1
        self.lifecycle.transition(State.REBALANCING, strict=False)
        registry = self.registry
        assert registry is not None and self.plan is not None
        # Kafka Streams' assignor checks the topics at every rebalance: a source topic may be gone and an
        # internal one re-created by someone else with another partition count (raises; fatal)
        created = validate_topics(self.plan, self.client)
        if created:
            log.warning("internal topic(s) %s were missing: created them again", created)
        if self.outage is not None:
            # back after an outage, and the group assigned partitions again: they start from the commit
            self.outage.assigned()
        keys = [
            k
            for k in registry.keys_for([(tp.topic, tp.partition) for tp in partitions])
            if k not in registry.tasks
        ]
        log.info("assigned %d partitions -> tasks %s", len(partitions), sorted(keys))
        consumer.assign(partitions)
        self._create_tasks(keys)
        self._publish_assignment()
        self._reconcile_standbys()
        self.lifecycle.transition(State.RUNNING, strict=False)

    def _create_tasks(self, keys: list[TaskKey]) -> None:
        registry = self.registry
        assert registry is not None
        if self.standby is not None:
            for key in keys:
                self.standby.release(key)
        self.restoring = True
        try:
            created = self.factory.create(keys, should_stop=self._stop.is_set)
        finally:
            self.restoring = False
        for active in created:
            registry.add(active)

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

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        registry = self.registry
        assert registry is not None
        self.lifecycle.transition(State.REBALANCING, strict=False)
        keys = [
            k
            for k in registry.keys_for([(tp.topic, tp.partition) for tp in partitions])
            if k in registry.tasks
        ]
        if not keys:
            return
        log.info("revoking tasks %s: committing and closing them", sorted(keys))
        committed = False
        try:
            self._commit(list(registry.tasks.values()), closing=True)
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
            self._publish_assignment()

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """The group dropped this member (session expired): no tasks until it rejoins (REBALANCING).

        With the cluster unreachable, aborting an open transaction would only block for its timeout:
        exactly-once starts over with a new transactional producer once the cluster answers again
        (``replace_producer``, from ``resume_tasks`` or the next ``_on_assign``)."""
        log.warning(
            "lost partitions %s (session expired): closing their tasks without committing", partitions
        )
        outage = self.outage
        assert outage is not None
        if outage.reachable:
            with contextlib.suppress(Exception):
                self.committer.abort()
            self.drop_tasks("partitions lost", resume=False)
            # the broker may have restarted without its topics: check them before waiting to rejoin
            outage.resume_pending = True
        else:
            self.drop_tasks("partitions lost while the cluster is unreachable", resume=True)

    def _publish_assignment(self) -> None:
        registry = self.registry
        if self.metadata is None or registry is None:
            return
        active: dict[int, list[int]] = {}
        for st, p in sorted(registry.tasks):
            active.setdefault(st, []).append(p)
        standby: dict[int, list[int]] = {}
        if self.standby is not None:
            for st, p in sorted(self.standby.tasks):
                standby.setdefault(st, []).append(p)
        self.metadata.update_local(active=active, standby=standby)

    def _reconcile_standbys(self) -> None:
        sm = self.standby
        if sm is None or self.plan is None or self.registry is None:
            return
        live = self.metadata.live_instances() if self.metadata else []
        wanted: set[TaskKey] = set()
        for st_plan in self.plan.subtopologies.values():
            if st_plan.id not in self._standby_eligible():
                continue
            for p in range(st_plan.partitions):
                key = (st_plan.id, p)
                if key in self.registry.tasks:
                    continue
                owner = self.metadata.owner_of(st_plan.id, p) if self.metadata else None
                if standby_wanted(
                    self.instance_id, owner, live, st_plan.partitions, p, self.config.num_standby_replicas
                ):
                    wanted.add(key)
        before = set(sm.tasks)
        sm.reconcile(wanted)
        if set(sm.tasks) != before:
            self._publish_assignment()

    def _standby_eligible(self) -> set[int]:
        cached = self._eligible_cache
        if cached is None:
            assert self.plan is not None and self.standby is not None
            cached = {st for st in self.plan.subtopologies if self.standby.eligible(st)}
            self._eligible_cache = cached
        return cached

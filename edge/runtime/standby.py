"""Standby replicas: warm copies of other instances' persistent stores, kept by tailing changelogs.

Placement follows the published assignment (:mod:`edge.runtime.metadata`) and is re-derived whenever it
changes. Under the cooperative protocol (:mod:`edge.runtime.assignment`, the default) a task's standbys
go to the live instances other than its owner in :func:`~edge.runtime.assignment.standby_order` (sorted
ids rotated by the partition: spread evenly, the same on every instance). Under the eager protocol the
group uses Kafka's range assignor, whose outcome is predictable -- partitions of each topic are split in
contiguous ranges over the members sorted by member id (client.id + uuid; our client ids start with the
instance id) -- so for a task owned by instance O the first standby goes to the instance the range
assignor would give the partition to if O failed (a single failure needs no restore); further standbys
follow in member order.

A standby task opens the same store directories an active task would (``state_dir/<app>/<task>``) and
applies changelog records with ``restore_batch`` from a separate assign-only consumer. Its checkpoint
is written on commit and close, so when this instance takes the task over, the active task restores
only the tail of the changelog. Only persistent, logged stores get standbys (an in-memory copy would
not survive the hand-over to the active task anyway).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from edge.runtime.assignment import standby_order
from edge.runtime.markers import is_marker
from edge.runtime.restore import RestoreProgress
from edge.runtime.tasks import STANDBY_MARK, TaskKey, load_checkpoint, task_name, wipe_task_state
from edge.state import StoreContext, task_dir
from edge.state.checkpoint import checkpoint_path, write_checkpoint

log = logging.getLogger(__name__)


@dataclass(eq=False)
class StandbyTask:
    key: TaskKey
    dir: Path
    stores: dict[str, Any]
    #: (changelog topic, partition) -> store
    by_tp: dict[tuple[str, int], Any]
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    progress: dict[tuple[str, int], RestoreProgress] = field(default_factory=dict)
    dirty: bool = False
    #: at-least-once: offsets the checkpoint records -- the last commit marker applied, never a
    #: record after it (those may be orphans; see :mod:`edge.runtime.markers`), so a promotion re-reads
    #: them and detects orphans. A standby cannot tell whether that marker's input offsets were ever
    #: committed (its writer may have died in between), so the promotion's restore reads the marker
    #: itself first and rebuilds the store unless it is committed (``RestoreTarget.verify_offset``).
    #: None: checkpoint the last applied record (exactly-once: no markers)
    marked: dict[tuple[str, int], int] | None = None

    @property
    def id(self) -> str:
        return task_name(self.key)

    def checkpoint(self) -> None:
        if self.dirty:
            for store in self.stores.values():
                store.flush()
            self.dirty = False
        write_checkpoint(checkpoint_path(self.dir), self.offsets if self.marked is None else self.marked)

    def close(self) -> None:
        try:
            self.checkpoint()
        finally:
            for store in self.stores.values():
                try:
                    store.close()
                except Exception:
                    log.exception("closing standby store %s of task %s failed", store.name, self.id)


class StandbyManager:
    def __init__(
        self,
        *,
        topology: Any,
        task_config: Any,
        application_id: str,
        state_dir: Path,
        consumer_config: dict[str, Any],
        batch_records: int,
        markers: bool = False,
    ) -> None:
        self.topology = topology
        #: at-least-once changelogs carry commit markers (:mod:`edge.runtime.markers`)
        self.markers = markers
        self.task_config = task_config
        self.application_id = application_id
        self.state_dir = state_dir
        conf = dict(consumer_config)
        conf.update(
            {"enable.auto.commit": False, "enable.auto.offset.store": False, "auto.offset.reset": "earliest"}
        )
        self._conf = conf
        self._consumer: Consumer | None = None
        self.batch_records = batch_records
        self.tasks: dict[TaskKey, StandbyTask] = {}
        self._route: dict[tuple[str, int], tuple[StandbyTask, Any]] = {}
        self.records_applied = 0
        self._last_checkpoint = 0.0

    def eligible(self, subtopology: int) -> bool:
        pt = self.topology.build_processor_topology(subtopology, self.task_config)
        return any(b.persistent and pt.changelog_topics.get(n) for n, b in pt.stores.items())

    # -- membership -----------------------------------------------------------------------------------
    def reconcile(self, wanted: set[TaskKey]) -> None:
        """Close standbys no longer wanted, open new ones, and reassign the changelog consumer."""
        changed = False
        for key in list(self.tasks):
            if key not in wanted:
                self.release(key)
                changed = True
        for key in sorted(wanted):
            if key not in self.tasks:
                task = self._open(key)
                if task is not None:
                    self.tasks[key] = task
                    changed = True
        if changed:
            self._reassign()

    def release(self, key: TaskKey) -> None:
        """Close a standby (writing its checkpoint) so an active task can take its directories over."""
        task = self.tasks.pop(key, None)
        if task is None:
            return
        task.close()
        self._reassign()
        log.info("closed standby task %s (changelog offsets %s)", task.id, task.offsets)

    def _open(self, key: TaskKey) -> StandbyTask | None:
        st, p = key
        pt = self.topology.build_processor_topology(st, self.task_config)
        tdir = task_dir(self.state_dir, self.application_id, task_name(key))
        checkpoint = load_checkpoint(tdir)
        if checkpoint is None:
            wipe_task_state(tdir)
            checkpoint = {}
        stores: dict[str, Any] = {}
        by_tp: dict[tuple[str, int], Any] = {}
        offsets: dict[tuple[str, int], int] = {}
        for name, builder in pt.stores.items():
            topic = pt.changelog_topics.get(name)
            if not topic or not builder.persistent:
                continue
            store = builder.with_caching_disabled().with_logging_disabled().build()
            store.init(
                StoreContext(
                    application_id=self.application_id,
                    task_id=task_name(key),
                    partition=p,
                    state_dir=self.state_dir,
                    changelog_topic=None,
                    changelog_sink=None,
                    cache_max_bytes=0,
                )
            )
            stores[name] = store
            by_tp[(topic, p)] = store
            if (topic, p) in checkpoint:
                offsets[(topic, p)] = checkpoint[(topic, p)]
        if not stores:
            return None
        task = StandbyTask(key, tdir, stores, by_tp, offsets, marked=dict(offsets) if self.markers else None)
        # what a standby applies may include records of uncommitted input: an active task taking this
        # directory over checks for them (STANDBY_MARK) before trusting it
        (tdir / STANDBY_MARK).touch()
        for (topic, part), store in by_tp.items():
            task.progress[(topic, part)] = RestoreProgress(
                store.name, task.id, topic, part, offsets.get((topic, part), -1) + 1, standby=True
            )
        log.info("opened standby task %s (stores %s)", task.id, sorted(stores))
        return task

    def _reassign(self) -> None:
        self._route = {}
        assignment = []
        for task in self.tasks.values():
            for tp, store in task.by_tp.items():
                self._route[tp] = (task, store)
                assignment.append(TopicPartition(tp[0], tp[1], task.offsets.get(tp, -1) + 1))
        if self._consumer is None:
            if not assignment:
                return
            self._consumer = Consumer(self._conf)
        if assignment:
            self._consumer.assign(assignment)
        else:
            self._consumer.unassign()

    def watermarks(self, tp: TopicPartition) -> tuple[int, int]:
        """The (low, high) watermarks of a changelog partition this manager tails, asked of the broker."""
        if self._consumer is None:
            raise RuntimeError(f"no standby task tails {tp.topic}-{tp.partition}")
        return self._consumer.get_watermark_offsets(tp, timeout=10, cached=False)

    # -- hot path -------------------------------------------------------------------------------------
    def poll(self) -> int:
        """Apply whatever changelog records are available (non-blocking); returns records applied."""
        consumer = self._consumer
        if consumer is None or not self._route:
            return 0
        msgs = consumer.consume(self.batch_records, 0)
        if not msgs:
            return 0
        batches: dict[tuple[str, int], list[tuple[bytes, bytes | None]]] = {}
        last: dict[tuple[str, int], int] = {}
        markers: dict[tuple[str, int], int] = {}
        for msg in msgs:
            err = msg.error()
            if err is not None:
                if err.code() != KafkaError._PARTITION_EOF:
                    log.warning("standby consumer error: %s", err)
                continue
            tp = (msg.topic(), msg.partition())
            batch = batches.get(tp)
            if batch is None:
                batch = batches[tp] = []
            key = msg.key()
            if is_marker(key):
                markers[tp] = msg.offset()
            else:
                batch.append((key, msg.value()))
            last[tp] = msg.offset()
        applied = 0
        for tp, batch in batches.items():
            entry = self._route.get(tp)
            if entry is None:
                continue
            task, store = entry
            if batch:
                store.restore_batch(batch)
            task.offsets[tp] = last[tp]
            if task.marked is not None and tp in markers:
                task.marked[tp] = markers[tp]
            task.dirty = True
            pr = task.progress.get(tp)
            if pr is not None:
                pr.restored += len(batch)
                pr.last_offset = last[tp]
            applied += len(batch)
        self.records_applied += applied
        return applied

    def checkpoint_all(self, min_interval_s: float = 10.0) -> None:
        """Flush and checkpoint dirty standbys, at most every ``min_interval_s`` (a hand-over closes the
        standby, which always writes its latest offsets; this only bounds re-reading after a crash)."""
        now = time.monotonic()
        if now - self._last_checkpoint < min_interval_s:
            return
        self._last_checkpoint = now
        for task in self.tasks.values():
            if task.dirty:
                task.checkpoint()

    def close(self) -> None:
        for key in list(self.tasks):
            task = self.tasks.pop(key)
            try:
                task.close()
            except Exception:
                log.exception("closing standby task %s failed", task.id)
        self._route = {}
        if self._consumer is not None:
            try:
                self._consumer.close()
            finally:
                self._consumer = None

    def store_sizes(self) -> dict[tuple[str, str], int]:
        out = {}
        for task in self.tasks.values():
            for name, store in task.stores.items():
                try:
                    out[(name, task.id)] = store.approximate_num_entries()
                except Exception:
                    pass
        return out


def range_owner(members: list[str], partitions: int, partition: int) -> str:
    """Kafka's range assignment of ``partition`` over ``members`` (already sorted)."""
    per, extra = divmod(partitions, len(members))
    start = 0
    for i, member in enumerate(members):
        count = per + (1 if i < extra else 0)
        if start <= partition < start + count:
            return member
        start += count
    return members[-1]


def standby_wanted(
    me: str,
    owner: Any,
    live: list[Any],
    partitions: int,
    partition: int,
    replicas: int,
    *,
    cooperative: bool = False,
) -> bool:
    """Should instance ``me`` keep a standby of (sub-topology, ``partition``) owned by ``owner``?"""
    if replicas <= 0:
        return False  # the manager exists for warm-ups only (edge.runtime.warmup)
    if owner is None or owner.instance_id == me:
        return owner is None  # unknown owner: keep a copy until the metadata arrives
    others = [i for i in live if i.instance_id != owner.instance_id]
    if len(others) <= replicas:
        return any(i.instance_id == me for i in others)
    if cooperative:
        order = standby_order(owner.instance_id, [i.instance_id for i in live], partition)
        return me in order[:replicas]
    if any(not i.client_id for i in others):
        ordered = sorted(i.instance_id for i in others)
    else:
        by_member = sorted(others, key=lambda i: i.client_id)
        first = range_owner([i.instance_id for i in by_member], partitions, partition)
        rest = [i.instance_id for i in by_member]
        k = rest.index(first)
        ordered = rest[k:] + rest[:k]
    return me in ordered[:replicas]

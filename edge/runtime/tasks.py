"""Active tasks of one instance: create (open stores, restore from changelogs), route records, close.

A task is one sub-topology for one partition; its stores live in ``state_dir/<app>/<st>_<p>/``. The
checkpoint file there holds, per changelog partition, the offset of the last changelog record the
local state reflects; restoring starts at that offset + 1. A missing checkpoint means the local state
cannot be trusted (first start, crash under exactly-once, deleted state dir): the store directories are
wiped and rebuilt from the changelog from offset 0. A corrupt checkpoint or store is treated the same.
Under exactly-once the stores write to disk only after a commit (deferred writes), so a task keeps its
checkpoint while it runs, rewritten every 10,000 changelog records (Kafka Streams instead deletes it and
restores in full after any close without a commit; KIP-892's transactional stores aim at what deferral
does here): a task migrated by a fencing or an aborted transaction resumes from it.

At-least-once (see :mod:`edge.runtime.markers`): a restore reads the group's committed offsets of the
task's input partitions first, applies only the changelog records up to the last commit marker those
offsets cover, and sends a compensation for every orphan key after it. A directory last written by a
standby (``STANDBY_MARK``) may hold orphans: it is rebuilt from scratch when the changelog has any, or
when the marker the standby checkpointed at is not committed.
Restored stores then defer their writes to the post-commit step (local state never runs ahead of the
committed offsets).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edge.errors import StateStoreError
from edge.paths import remove_tree_inside
from edge.processor.partition_group import PartitionGroup
from edge.processor.task import StreamTask
from edge.runtime.markers import MARKER_KEYS, encode_marker
from edge.runtime.restore import ChangelogReader, RestoreProgress, RestoreTarget
from edge.state import task_dir
from edge.state.checkpoint import checkpoint_path, delete_checkpoint, read_checkpoint, write_checkpoint

log = logging.getLogger(__name__)

TaskKey = tuple[int, int]  # (subtopology id, partition)

#: file in a task directory whose stores a standby wrote (they may hold uncommitted changelog records)
STANDBY_MARK = ".standby"

CommittedOffsets = Callable[[list[tuple[str, int]]], dict[tuple[str, int], int]]


def task_name(key: TaskKey) -> str:
    return f"{key[0]}_{key[1]}"


def wipe_task_state(tdir: Path) -> None:
    """Remove a task's local stores and checkpoint (they are rebuilt from the changelogs)."""
    for sub in ("rocksdb",):
        remove_tree_inside(tdir / sub, tdir, what="a task's stores", ignore_errors=True)
    delete_checkpoint(checkpoint_path(tdir))


def load_checkpoint(tdir: Path) -> dict[tuple[str, int], int] | None:
    """The task's checkpoint, or None when there is none / it is corrupt (caller wipes and restores)."""
    path = checkpoint_path(tdir)
    if not path.exists():
        return None
    try:
        return read_checkpoint(path)
    except StateStoreError as exc:
        log.warning("%s; rebuilding the task's state from its changelogs", exc)
        return None


@dataclass(eq=False)
class ActiveTask:
    key: TaskKey
    task: StreamTask
    dir: Path
    #: store name -> changelog topic (logged stores only)
    changelogs: dict[str, str]
    #: (changelog topic, partition) -> last offset the local state reflects
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    progress: list[RestoreProgress] = field(default_factory=list)
    #: the task's input partitions in timestamp order (tasks reading several partitions only; see
    #: :mod:`edge.runtime.record_order`)
    group: PartitionGroup | None = None
    #: the group's committed offsets of the task's input partitions (at-least-once; updated on commit)
    committed: dict[tuple[str, int], int] = field(default_factory=dict)
    #: (changelog topic, partition) -> index in MARKER_KEYS of the next commit marker's key
    marker_index: dict[tuple[str, int], int] = field(default_factory=dict)
    #: exactly-once: the stores write to disk only after a commit (``defer_writes``), so the task keeps a
    #: checkpoint while it runs; False for a custom persistent store that writes as it processes
    checkpoint_while_running: bool = True
    #: the offsets in the checkpoint file last written (None: none written since the task was opened)
    checkpointed: dict[tuple[str, int], int] | None = None

    @property
    def id(self) -> str:
        return self.task.id

    @property
    def changelog_partitions(self) -> list[tuple[str, int]]:
        return [(topic, self.key[1]) for topic in self.changelogs.values()]

    @property
    def source_changelogs(self) -> list[tuple[str, int]]:
        """Changelog partitions that are input partitions too (``topology.optimization``)."""
        sources = self.task.source_topics
        return [(topic, self.key[1]) for topic in self.changelogs.values() if topic in sources]

    def positions(self, prepared: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """Next offsets of every input partition of the task: the commit's, else the committed ones."""
        p = self.key[1]
        out = dict(self.committed)
        for topic in self.task.source_topics:
            off = prepared.get((topic, p))
            if off is not None:
                out[(topic, p)] = off
        return out

    def send_markers(
        self, collector: Any, prepared: dict[tuple[str, int], int]
    ) -> dict[tuple[str, int], int]:
        """End every changelog partition written since the last commit with a commit marker; returns
        the input positions the commit must commit for the markers to become valid ({} if none sent)."""
        due = [tp for tp in self.changelog_partitions if tp in collector.marker_due]
        if not due:
            return {}
        positions = self.positions(prepared)
        value = encode_marker(positions)
        for tp in due:
            i = self.marker_index.get(tp, 0)
            collector.send_marker(tp[0], tp[1], MARKER_KEYS[i], value)
            self.marker_index[tp] = 1 - i
        return positions

    def update_offsets(self, written: dict[tuple[str, int], int]) -> None:
        p = self.key[1]
        for topic in self.changelogs.values():
            off = written.pop((topic, p), None)
            if off is not None:
                self.offsets[(topic, p)] = off

    def write_checkpoint(self) -> None:
        write_checkpoint(checkpoint_path(self.dir), self.offsets)
        self.checkpointed = dict(self.offsets)

    def write_checkpoint_if_due(self, min_records: int) -> bool:
        """Write the checkpoint when it lacks a changelog partition the stores reflect, or when the
        changelogs moved more than ``min_records`` past it (Kafka's ``StateManagerUtil.checkpointNeeded``):
        an exactly-once commit every 100 ms need not cost a file write and two fsyncs per task, and a
        restore after a close without a commit reads at most that many records more."""
        last = self.checkpointed
        if (
            last is not None
            and self.offsets.keys() <= last.keys()
            and sum(off - last[tp] for tp, off in self.offsets.items()) <= min_records
        ):
            return False
        self.write_checkpoint()
        return True


class TaskFactory:
    """Builds and restores active tasks; shared by the task manager and the exactly-once re-init path."""

    def __init__(
        self,
        *,
        topology: Any,
        task_config: Any,
        application_id: str,
        state_dir: Path,
        collector: Any,
        changelog_sink: Any,
        global_stores: dict[str, Any],
        reader: ChangelogReader,
        exactly_once: bool,
        on_restore: Callable[[RestoreProgress], None] | None = None,
        committed_offsets: CommittedOffsets | None = None,
    ) -> None:
        self.topology = topology
        self.task_config = task_config
        self.application_id = application_id
        self.state_dir = state_dir
        self.collector = collector
        self.changelog_sink = changelog_sink
        self.global_stores = global_stores
        self.reader = reader
        self.exactly_once = exactly_once
        self.on_restore = on_restore
        #: at-least-once: reads the group's committed offsets (None: restore every changelog record)
        self.committed_offsets = None if exactly_once else committed_offsets
        #: reads them for restores from a source topic (``topology.optimization``), which end at them
        self.source_committed_offsets = committed_offsets

    def task_dir(self, key: TaskKey) -> Path:
        return task_dir(self.state_dir, self.application_id, task_name(key))

    def _build(self, key: TaskKey) -> ActiveTask:
        st, p = key
        pt = self.topology.build_processor_topology(st, self.task_config)
        task = StreamTask(
            task_name(key),
            pt,
            self.task_config,
            self.collector,
            self.changelog_sink,
            partition=p,
            global_stores=self.global_stores,
        )
        changelogs = {name: topic for name, topic in pt.changelog_topics.items() if topic}
        return ActiveTask(key, task, self.task_dir(key), changelogs)

    def create(
        self, keys: list[TaskKey], should_stop: Callable[[], bool] = lambda: False
    ) -> list[ActiveTask]:
        """Open and restore the tasks (all restores of one rebalance share one consumer pass)."""
        tasks: list[ActiveTask] = []
        for key in keys:
            tasks.append(self._open(key))
        try:
            if self.committed_offsets is not None:
                wanted = [(topic, t.key[1]) for t in tasks for topic in t.task.source_topics]
                committed = self.committed_offsets(wanted) if wanted else {}
                for t in tasks:
                    p = t.key[1]
                    t.committed = {
                        (topic, p): committed[(topic, p)]
                        for topic in t.task.source_topics
                        if (topic, p) in committed
                    }
            elif self.source_committed_offsets is not None:
                wanted = [(topic, t.key[1]) for t in tasks for topic in t.source_changelogs]
                committed = self.source_committed_offsets(wanted) if wanted else {}
                for t in tasks:
                    t.committed = {tp: committed[tp] for tp in t.source_changelogs if tp in committed}
            self._restore(tasks, should_stop)
            # processors start only on restored stores (Kafka: restore, then init the topology)
            for t in tasks:
                t.task.initialize_processors()
                t.task.defer_store_writes()
                t.checkpoint_while_running = t.task.stores_hold_committed_state_only()
                (t.dir / STANDBY_MARK).unlink(missing_ok=True)
        except BaseException:
            for t in tasks:
                try:
                    t.task.close()
                except Exception:
                    pass
            raise
        if self.exactly_once:
            # A store that writes as it processes may run ahead of the committed data under exactly-once:
            # without a checkpoint a crash forces a full restore (written back on clean close). Stores
            # that defer their writes to the commit hold committed state only and keep theirs.
            for t in tasks:
                if not t.checkpoint_while_running:
                    delete_checkpoint(checkpoint_path(t.dir))
        return tasks

    def _open(self, key: TaskKey) -> ActiveTask:
        tdir = self.task_dir(key)
        checkpoint = load_checkpoint(tdir)
        if checkpoint is None:
            wipe_task_state(tdir)
            checkpoint = {}
        tdir.mkdir(parents=True, exist_ok=True)
        active = self._build(key)
        try:
            active.task.initialize_stores()
        except StateStoreError as exc:
            if not exc.corrupt:
                raise
            log.warning("%s; wiping task %s and restoring it from its changelogs", exc, active.id)
            try:
                active.task.close()
            except Exception:
                pass
            wipe_task_state(tdir)
            checkpoint = {}
            active = self._build(key)
            active.task.initialize_stores()
        p = key[1]
        for name, topic in active.changelogs.items():
            store = active.task.stores[name]
            if store.persistent and (topic, p) in checkpoint:
                active.offsets[(topic, p)] = checkpoint[(topic, p)]
        return active

    def _restore(self, tasks: list[ActiveTask], should_stop: Callable[[], bool]) -> None:
        """Restore ``tasks`` (replaced in place when a store had to be rebuilt from scratch)."""
        pending = list(tasks)
        marking = self.committed_offsets is not None
        for _attempt in range(2):
            targets: list[tuple[ActiveTask, RestoreTarget]] = []
            for t in pending:
                p = t.key[1]
                t.progress = []
                from_standby = (t.dir / STANDBY_MARK).exists()
                for name, topic in t.changelogs.items():
                    store = t.task.stores[name]
                    start = t.offsets.get((topic, p), -1) + 1
                    progress = RestoreProgress(name, t.id, topic, p, start)
                    t.progress.append(progress)
                    target = RestoreTarget(store.restore_batch, progress)
                    # a source topic reused as changelog (topology.optimization) carries no commit markers
                    target.source_topic = topic in t.task.source_topics
                    if target.source_topic:
                        # Kafka restores a source-topic store up to the committed offset only; the
                        # task then processes the rest (no committed offset yet: all of it)
                        target.stop_offset = t.committed.get((topic, p), 0)
                    if marking and not target.source_topic:
                        target.committed = t.committed
                        # a standby may have applied records after the last committed marker, and
                        # it checkpoints at markers it cannot tell are committed: both are checked
                        target.may_hold_orphans = from_standby
                        target.verify_offset = start - 1 if from_standby and start > 0 else None
                    targets.append((t, target))
            self.reader.restore([tg for _, tg in targets], should_stop)
            rebuild: dict[TaskKey, str] = {}
            for t, tg in targets:
                pr = tg.progress
                if pr.last_offset >= 0:
                    t.offsets[(pr.topic, pr.partition)] = pr.last_offset
                if self.on_restore is not None:
                    self.on_restore(pr)
                if tg.ahead_of_changelog:
                    rebuild.setdefault(t.key, tg.rebuild_reason)
            # tasks kept as restored compensate now, even when others are rebuilt: a task left with
            # uncompensated orphans would later commit a marker after them and so validate them
            for t, tg in targets:
                if t.key in rebuild:
                    continue
                if tg.marker_index is not None:
                    t.marker_index[(tg.progress.topic, tg.progress.partition)] = 1 - tg.marker_index
                if tg.orphans:
                    self._compensate(t, tg)
            if not rebuild:
                return
            fresh_list = []
            for t in pending:
                if t.key not in rebuild:
                    continue
                log.warning(
                    "local state of task %s cannot be restored on: %s; rebuilding it from the changelog",
                    t.id,
                    rebuild[t.key] or "it is ahead of its changelog (was the topic recreated?)",
                )
                t.task.close()
                wipe_task_state(t.dir)
                (t.dir / STANDBY_MARK).unlink(missing_ok=True)
                fresh = self._build(t.key)
                fresh.committed = t.committed
                fresh.task.initialize_stores()
                tasks[tasks.index(t)] = fresh
                fresh_list.append(fresh)
            pending = fresh_list
        raise StateStoreError("state could not be rebuilt from the changelog after wiping it")

    def _compensate(self, t: ActiveTask, target: RestoreTarget) -> None:
        """Undo orphan changelog records for later readers: send each orphan key's restored (committed)
        value, or a tombstone, to the changelog; the task's next commit ends them with a marker."""
        topic, p = target.progress.topic, target.progress.partition
        layer = t.task.innermost_stores()[target.progress.store]
        value_of = getattr(layer, "changelog_value", None) or layer.get
        now = time.time_ns() // 1_000_000
        values = {key: value_of(key) for key in sorted(target.orphans)}
        if any(v is not None and not isinstance(v, bytes) for v in values.values()):
            # a store whose reads are not its changelog values must implement changelog_value(key)
            log.error(
                "store %s (%s) of task %s cannot re-send committed values (no changelog_value); %d "
                "orphan key(s) in %s-%d stay in the changelog and a later restore may apply them",
                target.progress.store,
                type(layer).__name__,
                t.id,
                len(values),
                topic,
                p,
            )
            target.orphans = set()
            return
        for key, value in values.items():
            self.changelog_sink.send(topic, p, key, value, now)
        log.warning(
            "changelog %s-%d of task %s holds records of %d key(s) written after the last committed "
            "input offsets (a crash between sending them and committing): not restored, and "
            "compensated in the changelog",
            topic,
            p,
            t.id,
            len(target.orphans),
        )
        target.orphans = set()


class TaskRegistry:
    """The active tasks and the per-topic routing table used on the hot path.

    A task reading more than one partition gets a :class:`PartitionGroup` (its records are processed in
    timestamp order across its partitions); ``groups`` maps each of its (topic, partition) to it. Tasks
    reading one partition have none and process their records as they come."""

    def __init__(self, topic_to_subtopology: dict[str, int], max_task_idle_ms: int = 0) -> None:
        self.topic_to_subtopology = topic_to_subtopology
        self.max_task_idle_ms = max_task_idle_ms
        self.tasks: dict[TaskKey, ActiveTask] = {}
        #: topic -> {partition: StreamTask}
        self.route: dict[str, dict[int, StreamTask]] = {}
        #: (topic, partition) -> partition group of the task reading it (multi-partition tasks only)
        self.groups: dict[tuple[str, int], PartitionGroup] = {}
        #: the tasks that have a partition group
        self.grouped: dict[TaskKey, ActiveTask] = {}

    def add(self, active: ActiveTask) -> None:
        self.tasks[active.key] = active
        task = active.task
        p = active.key[1]
        topics = task.source_topics
        for topic in topics:
            self.route.setdefault(topic, {})[p] = task
        if len(topics) > 1:
            group = active.group = PartitionGroup(self.max_task_idle_ms)
            self.grouped[active.key] = active
            for topic in topics:
                group.add_partition(topic, p, task, task.stamp)
                self.groups[(topic, p)] = group

    def remove(self, key: TaskKey) -> ActiveTask | None:
        active = self.tasks.pop(key, None)
        if active is not None:
            for topic in active.task.source_topics:
                self.route.get(topic, {}).pop(key[1], None)
                self.groups.pop((topic, key[1]), None)
            if active.group is not None:
                active.group.clear()
                self.grouped.pop(key, None)
        return active

    @property
    def has_groups(self) -> bool:
        return bool(self.groups)

    def keys_for(self, partitions: list[tuple[str, int]]) -> list[TaskKey]:
        keys: dict[TaskKey, None] = {}
        for topic, p in partitions:
            st = self.topic_to_subtopology.get(topic)
            if st is not None:
                keys[(st, p)] = None
        return list(keys)

    def __len__(self) -> int:
        return len(self.tasks)

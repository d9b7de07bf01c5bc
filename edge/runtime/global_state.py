"""GlobalKTables / global stores: every instance loads all partitions of the global topics.

The global sub-topology runs as one task fed by an assign-only consumer over every partition of its
topics. :meth:`GlobalState.bootstrap` reads each partition to its end before any stream task starts,
so joins never see a half-loaded table; afterwards :meth:`poll` keeps it updated from the main loop.
Its checkpoint (``state_dir/<app>/global/.checkpoint``) holds the source topic offsets the persistent
global stores reflect; in-memory global stores are reloaded from the beginning.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from edge.processor.task import StreamTask
from edge.runtime.restore import RestoreError, RestoreProgress
from edge.runtime.tasks import load_checkpoint, wipe_task_state
from edge.state import task_dir
from edge.state.checkpoint import checkpoint_path, write_checkpoint

log = logging.getLogger(__name__)

GLOBAL_TASK_ID = "global"


class GlobalState:
    def __init__(
        self,
        *,
        topology: Any,
        subtopology_id: int,
        topic_partitions: dict[str, int],
        task_config: Any,
        collector: Any,
        application_id: str,
        state_dir: Path,
        consumer_config: dict[str, Any],
        batch_records: int,
        timeout_ms: int,
        silent_ahead_s: float | None = None,
    ) -> None:
        self.dir = task_dir(state_dir, application_id, GLOBAL_TASK_ID)
        self.topic_partitions = topic_partitions
        self._new_task = lambda: StreamTask(
            GLOBAL_TASK_ID,
            topology.build_processor_topology(subtopology_id, task_config),
            task_config,
            collector,
            None,
            partition=0,
        )
        self.task = self._new_task()
        self.silent_ahead_s = silent_ahead_s
        conf = dict(consumer_config)
        conf.update(
            {
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
                # the initial load reads whole partitions: keep prefetching past librdkafka's 100k default
                "queued.min.messages": 1_000_000,
            }
        )
        self._consumer = Consumer(conf)
        self.batch_records = batch_records
        self.timeout_s = timeout_ms / 1000
        self.offsets: dict[tuple[str, int], int] = {}
        self.progress: list[RestoreProgress] = []
        self.dirty = False

    @property
    def stores(self) -> dict[str, Any]:
        return self.task.stores

    def bootstrap(self) -> None:
        checkpoint = load_checkpoint(self.dir)
        if checkpoint is None:
            wipe_task_state(self.dir)
            checkpoint = {}
        if not self._load(checkpoint):
            log.warning(
                "global topics hold less than the global stores' checkpoint (recreated topics / restarted "
                "in-memory broker); rebuilding the global stores from the beginning"
            )
            self.task.close()
            wipe_task_state(self.dir)
            self.task = self._new_task()
            self.offsets = {}
            self.progress.clear()
            if not self._load({}):
                raise RestoreError("global stores could not be loaded from the beginning of their topics")
        self.checkpoint()
        total = sum(pr.restored for pr in self.progress)
        log.info("global stores %s loaded: %d records", sorted(self.task.stores), total)

    def _load(self, checkpoint: dict[tuple[str, int], int]) -> bool:
        """Read every partition to its end; False if a checkpointed position lies beyond the end."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.task.initialize()
        persistent = all(s.persistent for s in self.task.stores.values())
        assignment = []
        for topic, n in self.topic_partitions.items():
            for p in range(n):
                start = checkpoint.get((topic, p), -1) + 1 if persistent else 0
                if start > 0:
                    self.offsets[(topic, p)] = start - 1
                assignment.append(TopicPartition(topic, p, start))
                self.progress.append(RestoreProgress("global", GLOBAL_TASK_ID, topic, p, start))
        self._consumer.assign(assignment)
        by_tp = {(pr.topic, pr.partition): pr for pr in self.progress}
        pending = set(by_tp)
        heard: set[tuple[str, int]] = set()
        started = last = time.monotonic()
        while pending:
            msgs = self._consumer.consume(self.batch_records, 0.2)
            silent = self.silent_ahead_s is not None and time.monotonic() - started > self.silent_ahead_s
            if silent and any(by_tp[tp].start_offset > 0 for tp in pending - heard):
                return False  # the embedded broker answers nothing beyond a partition's end
            if not msgs:
                if time.monotonic() - last > self.timeout_s:
                    raise RestoreError(
                        f"loading global topics made no progress for {self.timeout_s:.0f}s: {pending}"
                    )
                continue
            last = time.monotonic()
            for msg in msgs:
                tp = (msg.topic(), msg.partition())
                heard.add(tp)
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        if msg.offset() < by_tp[tp].start_offset:
                            return False
                        if tp in pending:
                            pending.discard(tp)
                            by_tp[tp].end_offset = msg.offset()
                            by_tp[tp].finished_at = time.monotonic()
                        continue
                    raise RestoreError(f"global consumer error on {tp[0]}-{tp[1]}: {err}")
                if by_tp[tp].restored == 0 and msg.offset() < by_tp[tp].start_offset:
                    return False  # the broker reset us below the checkpoint: the topic lost data
                self._apply(msg)
                pr = by_tp[tp]
                pr.restored += 1
                pr.last_offset = msg.offset()
        return True

    def _apply(self, msg: Any) -> None:
        ts = msg.timestamp()[1]
        self.task.process(
            msg.topic(), msg.partition(), msg.offset(), ts, msg.key(), msg.value(), msg.headers()
        )
        self.offsets[(msg.topic(), msg.partition())] = msg.offset()
        self.dirty = True

    def poll(self) -> int:
        msgs = self._consumer.consume(self.batch_records, 0)
        n = 0
        for msg in msgs:
            if msg.error() is not None:
                continue
            self._apply(msg)
            n += 1
        return n

    def checkpoint(self) -> None:
        self.task.commit_prepare()
        write_checkpoint(checkpoint_path(self.dir), self.offsets)
        self.dirty = False

    def close(self) -> None:
        try:
            self.checkpoint()
        except Exception:
            log.exception("writing the global checkpoint failed")
        try:
            self.task.close()
        finally:
            self._consumer.close()

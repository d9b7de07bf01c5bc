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
    ) -> None:
        self.dir = task_dir(state_dir, application_id, GLOBAL_TASK_ID)
        self.topic_partitions = topic_partitions
        pt = topology.build_processor_topology(subtopology_id, task_config)
        self.task = StreamTask(GLOBAL_TASK_ID, pt, task_config, collector, None, partition=0)
        conf = dict(consumer_config)
        conf.update(
            {"enable.auto.commit": False, "enable.partition.eof": True, "auto.offset.reset": "earliest"}
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
        last = time.monotonic()
        while pending:
            msgs = self._consumer.consume(self.batch_records, 0.2)
            if not msgs:
                if time.monotonic() - last > self.timeout_s:
                    raise RestoreError(
                        f"loading global topics made no progress for {self.timeout_s:.0f}s: {pending}"
                    )
                continue
            last = time.monotonic()
            for msg in msgs:
                tp = (msg.topic(), msg.partition())
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        if tp in pending:
                            pending.discard(tp)
                            by_tp[tp].end_offset = msg.offset()
                            by_tp[tp].finished_at = time.monotonic()
                        continue
                    raise RestoreError(f"global consumer error on {tp[0]}-{tp[1]}: {err}")
                self._apply(msg)
                pr = by_tp[tp]
                pr.restored += 1
                pr.last_offset = msg.offset()
        self.checkpoint()
        total = sum(pr.restored for pr in self.progress)
        log.info("global stores %s loaded: %d records", sorted(self.task.stores), total)

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

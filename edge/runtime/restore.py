"""Restoring state stores from their changelog topics (Kafka Streams' StoreChangelogReader).

A restore reads each changelog partition from the store's checkpointed offset to the partition's end
and applies the records with ``store.restore_batch`` in batches. The end is found by consuming to
partition EOF (``enable.partition.eof``) rather than from watermarks, which some brokers (the embedded
one) do not report reliably. Progress is kept in :class:`RestoreProgress` objects that the metrics
endpoint exposes and the query server uses to answer 503 while restoring.

Speed (a restore keeps up with 1M records/s; docs/benchmarks.md has the figures): the restoring thread only
consumes and slices runs of records (:meth:`ChangelogReader._apply_runs`); the stores' writes run on
apply threads (:class:`_Applier`; RocksDB's write releases the GIL), and Python's cyclic collector is
paused for the pass (:func:`gc_paused`). RocksDB restore writes already skip the WAL and are flushed
before the checkpoint is written (as Kafka's restore does).
"""

from __future__ import annotations

import gc
import logging
import struct
import threading
import time
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import compress, groupby
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from edge.errors import StreamhouseError
from edge.runtime.fetch import fetch_ready
from edge.runtime.markers import MARKER_KEYS, is_marker, marker_is_committed

#: the 8-byte big-endian timestamp prefix of a timestamped store value (ValueAndTimestampSerde)
_TIMESTAMP = struct.Struct(">q")

log = logging.getLogger(__name__)


class RestoreError(StreamhouseError):
    pass


@dataclass(eq=False)
class RestoreProgress:
    store: str
    task_id: str
    topic: str
    partition: int
    start_offset: int
    standby: bool = False
    #: offset of the last record applied (-1: none yet)
    last_offset: int = -1
    restored: int = 0
    end_offset: int | None = None
    started_at: float = field(default_factory=time.monotonic)
    finished_at: float | None = None

    @property
    def done(self) -> bool:
        return self.finished_at is not None

    @property
    def elapsed_s(self) -> float:
        return (self.finished_at or time.monotonic()) - self.started_at

    def as_dict(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "task": self.task_id,
            "topic": self.topic,
            "partition": self.partition,
            "start_offset": self.start_offset,
            "last_offset": self.last_offset,
            "end_offset": self.end_offset,
            "restored": self.restored,
            "done": self.done,
            "elapsed_s": round(self.elapsed_s, 3),
        }


@dataclass(eq=False)
class RestoreTarget:
    """One store partition to bring up to date: ``apply(records)`` receives ``[(key, value|None), ...]``."""

    apply: Callable[[list[tuple[bytes, bytes | None]]], None]
    progress: RestoreProgress
    #: set by the reader when the changelog is behind the checkpoint (the store must be rebuilt)
    ahead_of_changelog: bool = False
    #: at-least-once: the group's committed input offsets of the task (None: apply every record)
    committed: dict[tuple[str, int], int] | None = None
    #: the local state may hold records after the last valid marker (a former standby's directory):
    #: if there are orphans, the store must be rebuilt from scratch
    may_hold_orphans: bool = False
    #: offset of the commit marker a former standby checkpointed at (``start_offset - 1``): the standby
    #: applied every record before it without knowing whether that marker was ever committed, so the
    #: reader starts at it and the store is rebuilt unless it is there and committed (None: no check)
    verify_offset: int | None = None
    #: why the store must be rebuilt from scratch instead of restored on top of its local state ("": it
    #: need not); set with ``ahead_of_changelog``
    rebuild_reason: str = ""
    #: keys of records after the last committed marker (not applied; the task compensates them)
    orphans: set[bytes] = field(default_factory=set)
    #: index in MARKER_KEYS of the last committed marker seen (None: none seen)
    marker_index: int | None = None
    #: records read since the last committed marker, applied when the next one proves them committed
    held: list[tuple[bytes, bytes | None]] = field(default_factory=list)
    #: the changelog is a table's source topic (``topology.optimization``): its values are plain, the
    #: store's are timestamped, so each value gets the record's timestamp prefixed (Kafka's
    #: ``RecordConverters.rawValueToTimestampedValue``)
    source_topic: bool = False
    #: the restore ends before this offset (a source topic: the group's committed offset, as Kafka's
    #: StoreChangelogReader ends a source-topic restore; the task processes the rest). None: at the end
    stop_offset: int | None = None
    #: set by :meth:`ChangelogReader.restore` while it runs: hands ``apply`` calls to its apply thread
    _submit: Callable[[Callable[[list], None], list], None] | None = field(
        default=None, init=False, repr=False
    )


class ChangelogReader:
    """Owns one assign-only consumer, reused for every restore of the instance."""

    def __init__(
        self,
        consumer_config: dict[str, Any],
        *,
        batch_records: int = 5000,
        timeout_ms: int = 60_000,
        on_progress: Callable[[RestoreProgress], None] | None = None,
        silent_ahead_s: float | None = None,
    ) -> None:
        conf = dict(consumer_config)
        conf.update(
            {
                "enable.partition.eof": True,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                # librdkafka stops prefetching a partition once ~100k messages are queued locally
                # (queued.min.messages); a restore reads whole partitions, so let it keep fetching
                # (memory stays bounded by queued.max.messages.kbytes).
                "queued.min.messages": 1_000_000,
            }
        )
        self._conf = conf
        self._consumer: Consumer | None = None
        self.batch_records = batch_records
        self.timeout_s = timeout_ms / 1000
        self.on_progress = on_progress
        #: Brokers that neither reset nor report EOF for a fetch beyond the end (the embedded one): a
        #: checkpointed partition silent for this long is treated as shorter than the local state.
        self.silent_ahead_s = silent_ahead_s
        self.total_restored = 0
        self.total_seconds = 0.0
        #: CPU seconds of the whole process (every thread: librdkafka's, the apply thread) over the
        #: restore passes, for the CPU-per-record figure of the restore benchmark
        self.total_cpu_seconds = 0.0

    def _get_consumer(self) -> Consumer:
        if self._consumer is None:
            self._consumer = Consumer(self._conf)
        return self._consumer

    def restore(
        self, targets: Iterable[RestoreTarget], should_stop: Callable[[], bool] = lambda: False
    ) -> None:
        """Block until every target reached its partition's end (or ``should_stop()``)."""
        targets = [t for t in targets]
        if not targets:
            return
        by_tp: dict[tuple[str, int], RestoreTarget] = {}
        for t in targets:
            key = (t.progress.topic, t.progress.partition)
            if key in by_tp:
                raise RestoreError(f"changelog partition {key} restored twice in one batch")
            by_tp[key] = t
        consumer = self._get_consumer()
        consumer.assign(
            [
                TopicPartition(
                    t,
                    p,
                    tg.verify_offset if tg.verify_offset is not None else max(0, tg.progress.start_offset),
                )
                for (t, p), tg in by_tp.items()
            ]
        )
        pending = set(by_tp)
        heard: set[tuple[str, int]] = set()
        started = time.monotonic()
        cpu_before = time.process_time()
        restored_before = sum(t.progress.restored for t in targets)
        applier = _Appliers(min(len(targets), APPLY_THREADS))
        for i, t in enumerate(targets):
            t._submit = applier.lane(i)
        try:
            with gc_paused():
                self._loop(consumer, by_tp, pending, heard, applier, should_stop, started)
            applier.drain()
        finally:
            applier.close()
            for t in targets:
                t._submit = None
            elapsed = time.monotonic() - started
            self.total_seconds += elapsed
            self.total_cpu_seconds += time.process_time() - cpu_before
            self.total_restored += sum(t.progress.restored for t in targets) - restored_before
            try:
                consumer.unassign()
            except Exception:
                pass

    def _loop(
        self,
        consumer: Consumer,
        by_tp: dict[tuple[str, int], RestoreTarget],
        pending: set[tuple[str, int]],
        heard: set[tuple[str, int]],
        applier: _Appliers,
        should_stop: Callable[[], bool],
        started: float,
    ) -> None:
        """Consume and apply until every partition of ``by_tp`` is done (see :meth:`restore`)."""
        last_activity = last_log = started
        while pending:
            if should_stop():
                return
            msgs = fetch_ready(consumer, self.batch_records, 0.2)
            now = time.monotonic()
            if self.silent_ahead_s is not None and now - started > self.silent_ahead_s:
                for tp in sorted(pending - heard):
                    target = by_tp[tp]
                    if target.progress.start_offset > 0:
                        # nothing at all from a checkpointed position: it lies beyond the end
                        log.warning(
                            "changelog %s-%d answers nothing at checkpointed offset %d: assuming the "
                            "changelog is shorter than the local state (recreated topic / restarted "
                            "in-memory broker); the store will be rebuilt",
                            tp[0],
                            tp[1],
                            target.progress.start_offset,
                        )
                        target.ahead_of_changelog = True
                        target.progress.finished_at = now
                        pending.discard(tp)
                if not pending:
                    break
            if not msgs:
                if now - last_activity > self.timeout_s:
                    stuck = ", ".join(f"{t}-{p}" for t, p in sorted(pending))
                    raise RestoreError(
                        f"restoring from changelog partition(s) {stuck} made no progress for "
                        f"{self.timeout_s:.0f}s; is the broker reachable and the topic present?"
                    )
                continue
            last_activity = now
            msgs = self._apply_runs(msgs, by_tp, pending, heard)
            batches: dict[tuple[str, int], list[tuple[bytes, bytes | None]]] = {}
            finished: list[tuple[str, int]] = []
            for msg in msgs:
                err = msg.error()
                tp = (msg.topic(), msg.partition())
                heard.add(tp)
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        finished.append(tp)
                        target = by_tp.get(tp)
                        if target is not None:
                            target.progress.end_offset = msg.offset()
                            if msg.offset() < target.progress.start_offset:
                                target.ahead_of_changelog = True
                        continue
                    raise RestoreError(f"restore consumer error on {tp[0]}-{tp[1]}: {err}")
                target = by_tp.get(tp)
                if target is None or tp not in pending:
                    continue
                offset = msg.offset()
                if target.stop_offset is not None and offset >= target.stop_offset:
                    finished.append(tp)  # reached the restore end (see RestoreTarget.stop_offset)
                    continue
                key = msg.key()
                if target.verify_offset is not None:
                    if not self._verified(target, offset, key, msg.value()):
                        pending.discard(tp)
                        target.progress.finished_at = now
                    continue
                if target.progress.restored == 0 and offset < target.progress.start_offset:
                    # the broker reset us below the checkpoint: the changelog lost data we have
                    target.ahead_of_changelog = True
                batch = batches.get(tp)
                if batch is None:
                    batch = batches[tp] = []
                if target.committed is not None:
                    if is_marker(key):
                        if marker_is_committed(msg.value(), target.committed):
                            batch.extend(target.held)
                            target.held = []
                            target.marker_index = MARKER_KEYS.index(key)
                            target.progress.last_offset = offset
                    else:
                        target.held.append((key, msg.value()))
                    continue
                if target.source_topic:
                    raw = msg.value()
                    batch.append((key, None if raw is None else _TIMESTAMP.pack(msg.timestamp()[1]) + raw))
                elif not is_marker(key):
                    batch.append((key, msg.value()))
                target.progress.last_offset = offset
            for tp, batch in batches.items():
                if batch:
                    target = by_tp[tp]
                    _deliver(target, batch)
                    target.progress.restored += len(batch)
            if any(tp in pending for tp in finished):
                applier.drain()  # a target is done only once everything read for it is applied
            for tp in finished:
                if tp in pending:
                    pending.discard(tp)
                    target = by_tp[tp]
                    if target.verify_offset is not None:
                        # the partition ends before the standby's checkpointed marker
                        self._verified(target, -1, None, None)
                    if target.held:
                        # after the last committed marker: input never committed
                        target.orphans.update(k for k, _ in target.held)
                        target.held = []
                        if target.may_hold_orphans:
                            target.ahead_of_changelog = True
                            target.rebuild_reason = (
                                f"a standby wrote it and may have applied the changelog's "
                                f"{len(target.orphans)} orphan key(s) (records after the last "
                                f"committed marker)"
                            )
                    target.progress.finished_at = time.monotonic()
                    self._log_done(target.progress)
            if self.on_progress is not None:
                for tp in batches:
                    self.on_progress(by_tp[tp].progress)
            if now - last_log > 2.0:
                last_log = now
                for tp in sorted(pending):
                    p = by_tp[tp].progress
                    log.info(
                        "restoring %s (task %s) from %s-%d: %d records so far, at offset %d",
                        p.store,
                        p.task_id,
                        p.topic,
                        p.partition,
                        p.restored,
                        p.last_offset,
                    )

    @staticmethod
    def _verified(target: RestoreTarget, offset: int, key: bytes | None, value: bytes | None) -> bool:
        """Check the first record read for a target with ``verify_offset``: it must be the commit marker
        the standby checkpointed at, and committed. Otherwise the standby's state ends on records of
        input that was never committed (it cannot tell which), so the store is rebuilt from scratch."""
        expected = target.verify_offset
        target.verify_offset = None
        if offset == expected and is_marker(key) and target.committed is not None:
            if marker_is_committed(value, target.committed):
                target.marker_index = MARKER_KEYS.index(key)  # type: ignore[arg-type]
                return True
            what = "a commit marker whose input offsets were never committed"
        elif offset == expected:
            what = "no commit marker"
        elif offset < 0:
            what = "missing (the partition ends before it)"
        else:
            what = f"missing (the next record is at offset {offset}: compacted away?)"
        target.ahead_of_changelog = True
        target.rebuild_reason = (
            f"a standby wrote it up to changelog offset {expected}, and that record is {what}: the "
            f"state may hold records of uncommitted input"
        )
        return False

    @staticmethod
    def _log_done(p: RestoreProgress) -> None:
        rate = p.restored / p.elapsed_s if p.elapsed_s > 0 else 0.0
        log.info(
            "%s %s of task %s from %s-%d: %d records (offsets %d..%s) in %.2fs (%.0f records/s)",
            "caught up standby" if p.standby else "restored",
            p.store,
            p.task_id,
            p.topic,
            p.partition,
            p.restored,
            p.start_offset,
            p.end_offset,
            p.elapsed_s,
            rate,
        )

    def serve_idle(self) -> None:
        """Serve the idle consumer's queued callbacks (the stream thread's housekeeping, every second).

        Between restores nothing polls this consumer, so its librdkafka log lines and errors wait in its
        queue: after a broker outage, the next restore delivered hundreds of stale "Connection refused"
        at once, and the instance logged the cluster unreachable while it answered."""
        if self._consumer is not None:
            self._consumer.poll(0)

    def close(self) -> None:
        if self._consumer is not None:
            try:
                self._consumer.close()
            finally:
                self._consumer = None

    # -- the batch path -------------------------------------------------------------------------------
    def _apply_runs(
        self,
        msgs: list[Any],
        by_tp: dict[tuple[str, int], RestoreTarget],
        pending: set[tuple[str, int]],
        heard: set[tuple[str, int]],
    ) -> list[Any]:
        """Apply the plain runs of ``msgs`` a run at a time; return the messages left for the per-record
        loop of :meth:`restore`, in their order.

        A restore is bounded by Python's per-record work, so the common case -- consecutive records of one
        partition being restored, without errors -- is taken column-wise: keys, values and offsets come
        out of the messages through ``map`` (no bytecode per record), commit markers are found with
        ``list.index``, and each run is applied with one ``apply`` call (one RocksDB WriteBatch). The
        per-record loop keeps every case that needs a look at single records: errors and end-of-partition
        events, the first records of a target (checkpoint checks, ``verify_offset``), and everything of a
        partition after its first such record, so each partition's records are applied in offset order.
        """
        n = len(msgs)
        if n < _MIN_RUN:
            return msgs
        # positions of messages carrying an error (end-of-partition events), by truthiness: comparing a
        # KafkaError with None (``list.count(None)``) leaves a stray exception set in confluent-kafka
        bad = list(compress(range(n), map(_error, msgs)))
        topics = list(map(_topic, msgs))
        parts = list(map(_partition, msgs))
        runs: Iterable[tuple[tuple[str, int], int]]
        if topics.count(topics[0]) == n:
            # one topic (the usual case): runs by partition number, without a (topic, partition) per record
            topic = topics[0]
            runs = (((topic, p), len(list(g))) for p, g in groupby(parts))
        else:
            runs = ((tp, len(list(g))) for tp, g in groupby(zip(topics, parts, strict=True)))
        left: list[Any] = []
        slow: set[tuple[str, int]] = set()
        applied: list[RestoreTarget] = []
        i = 0
        for tp, size in runs:
            j = i + size
            target = by_tp.get(tp)
            if (
                tp in slow
                or target is None
                or tp not in pending
                or target.verify_offset is not None
                or (bad and _any_in(bad, i, j))
                or (target.progress.restored == 0 and msgs[i].offset() < target.progress.start_offset)
                or (target.stop_offset is not None and msgs[j - 1].offset() >= target.stop_offset)
            ):
                slow.add(tp)
                left.extend(msgs[i:j])
                i = j
                continue
            heard.add(tp)
            self._apply_run(target, msgs[i:j])
            applied.append(target)
            i = j
        if self.on_progress is not None:
            for target in applied:
                self.on_progress(target.progress)
        return left

    @staticmethod
    def _apply_run(target: RestoreTarget, run: list[Any]) -> None:
        """Apply consecutive error-free records of one partition (see :meth:`_apply_runs`)."""
        keys = list(map(_key, run))
        values = list(map(_value, run))
        progress = target.progress
        if target.source_topic:
            pack = _TIMESTAMP.pack
            stamps = [t[1] for t in map(_timestamp, run)]
            values = [None if v is None else pack(ts) + v for ts, v in zip(stamps, values, strict=True)]
        # a source topic's records are all data, as in the per-record loop
        markers = [] if target.source_topic else _marker_positions(keys)
        if target.committed is None:
            # every record but the markers, in order
            batch: list[tuple[bytes, bytes | None]] = []
            start = 0
            for m in markers:
                batch.extend(zip(keys[start:m], values[start:m], strict=True))
                start = m + 1
            batch.extend(zip(keys[start:], values[start:], strict=True))
            progress.last_offset = run[-1].offset()
        else:
            # records are held until a committed marker proves their input committed (see restore())
            held = target.held
            batch = []
            start = 0
            for m in markers:
                held.extend(zip(keys[start:m], values[start:m], strict=True))
                start = m + 1
                if marker_is_committed(values[m], target.committed):
                    batch.extend(held)
                    held.clear()
                    target.marker_index = MARKER_KEYS.index(keys[m])
                    progress.last_offset = run[m].offset()
            held.extend(zip(keys[start:], values[start:], strict=True))
        if batch:
            _deliver(target, batch)
            progress.restored += len(batch)


def _deliver(target: RestoreTarget, batch: list[tuple[bytes, bytes | None]]) -> None:
    """Apply ``batch`` to ``target``: on the restore's apply thread while a restore runs."""
    submit = target._submit
    if submit is None:
        target.apply(batch)
    else:
        submit(target.apply, batch)


class _Applier:
    """Runs a restore's ``apply`` calls on one thread, in the order they were submitted.

    Why: a restore is bound by the restoring thread's CPU (consume creates one Python object per
    record), and a store's write -- RocksDB's ``Rdict.write`` of a WriteBatch, ~0.2 us per record with
    ordered keys and ~0.8 with random ones, a fifth to half of the whole per-record cost -- releases
    the GIL. On its own thread the write of one batch overlaps consuming the next. Each store's
    batches go to one thread, through a FIFO, so they stay in changelog order; the queue is bounded.
    Every submitted batch is applied before :meth:`ChangelogReader.restore` returns or raises (so the
    caller's checkpoint never claims records the store lacks, and no write reaches a store after the
    restore), unless an apply failed: then the rest is dropped and the failure is raised on the
    restoring thread.
    """

    def __init__(self, max_queued: int = 4) -> None:
        self._cond = threading.Condition()
        self._queue: deque[tuple[Callable[[list], None], list]] = deque()
        self._max_queued = max_queued
        self._busy = False
        self._closed = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def submit(self, apply: Callable[[list], None], batch: list) -> None:
        with self._cond:
            while len(self._queue) >= self._max_queued and self._error is None:
                self._cond.wait()
            self._raise()
            self._queue.append((apply, batch))
            self._cond.notify_all()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="restore-apply", daemon=True)
            self._thread.start()

    def drain(self) -> None:
        """Wait until every submitted batch is applied; raise an apply's failure."""
        with self._cond:
            while (self._queue or self._busy) and self._error is None:
                self._cond.wait()
            self._raise()

    def close(self) -> None:
        """Apply what is queued (unless an apply failed), then stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        cond = self._cond
        while True:
            with cond:
                while not self._queue and not self._closed:
                    cond.wait()
                if not self._queue or self._error is not None:
                    return
                apply, batch = self._queue.popleft()
                self._busy = True
                cond.notify_all()
            try:
                apply(batch)
            except BaseException as exc:  # handed to the restoring thread
                with cond:
                    self._error = exc
                    self._queue.clear()
                    self._busy = False
                    cond.notify_all()
                return
            with cond:
                self._busy = False
                cond.notify_all()


#: apply threads of one restore: each target's batches go to one of them (its changelog order kept);
#: two let two stores write at once (RocksDB writes release the GIL), which matters when commit markers
#: release many held records of several partitions together
APPLY_THREADS = 2


class _Appliers:
    """A restore's apply threads (:class:`_Applier` each); drained and closed together."""

    def __init__(self, lanes: int) -> None:
        self._lanes = [_Applier() for _ in range(max(1, lanes))]

    def lane(self, i: int) -> Callable[[Callable[[list], None], list], None]:
        return self._lanes[i % len(self._lanes)].submit

    def drain(self) -> None:
        for lane in self._lanes:
            lane.drain()

    def close(self) -> None:
        for lane in self._lanes:
            lane.close()


_gc_lock = threading.Lock()
_gc_pauses = 0
_gc_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a restore runs (re-entrant, across threads).

    Why: consume creates one GC-tracked ``Message`` per record, and the tuples of each batch follow;
    the collector's generation-0 threshold (700 allocations) then runs collections every few hundred
    records, and the survivors of each batch trigger full collections of the whole heap. Measured on
    1M changelog records: 0.95 -> 0.65 us of the restoring thread's CPU per record. A restore creates no
    reference cycles (messages and batches are freed by reference counting), so nothing accumulates
    while the collector is off; it is switched back on when the last concurrent restore ends (only if
    it was on before).
    """
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


#: fewer messages than this go through the per-record loop only (column-wise setup costs more)
_MIN_RUN = 32
_error = Message.error
_topic = Message.topic
_partition = Message.partition
_key = Message.key
_value = Message.value
_timestamp = Message.timestamp


def _any_in(positions: list[int], start: int, stop: int) -> bool:
    """Whether the sorted ``positions`` hold one in ``[start, stop)``."""
    k = bisect_left(positions, start)
    return k < len(positions) and positions[k] < stop


def _marker_positions(keys: list[bytes | None]) -> list[int]:
    """Indexes of commit markers in ``keys``, ascending (``list.index`` scans in C; markers are rare)."""
    found: list[int] = []
    for marker in MARKER_KEYS:
        at = -1
        while True:
            try:
                at = keys.index(marker, at + 1)
            except ValueError:
                break
            found.append(at)
    found.sort()
    return found

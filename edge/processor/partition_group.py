"""Record order across the input partitions of a task (Kafka Streams' ``PartitionGroup``/``RecordQueue``).

A task reading several partitions (a join or merge of co-partitioned topics, a sub-topology with several
sources) buffers each partition's records in a :class:`RecordQueue` and processes, one at a time, the
buffered record with the **lowest timestamp** among the queues' heads (per partition the order stays the
offset order). A queue's head is deserialized and timestamped (the timestamp extractor runs) when it
becomes the head, so order follows extracted timestamps; a head that is skipped (handler said continue,
negative timestamp) is replaced by the next record at once.

Before each record the owner asks :meth:`PartitionGroup.ready` (Kafka's ``readyToProcess``) whether it may
go on while some partitions have nothing buffered, following ``max.task.idle.ms``:

* ``-1``: always (order is best effort among what happens to be buffered);
* otherwise an empty partition whose lag is unknown or positive (data is on its way) blocks processing;
  one known to be caught up (lag 0) blocks it for ``max.task.idle.ms`` of wall-clock time, then processing
  goes on without it ("enforced processing", counted in ``enforced_processing``). With the default 0 the
  task waits only for data it knows about.

The owner reports lags with :meth:`set_lag` (the runtime: -1 when records arrive, 0 at partition EOF; the
TopologyTestDriver: always 0, like Kafka's driver). Single-partition tasks do not need a group: the
runtime processes their batches directly.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

UNKNOWN = -1

TopicPartition = tuple[str, int]


class RecordQueue:
    """One input partition's buffered records (raw, FIFO) and its stamped head."""

    __slots__ = ("fifo", "head", "owner", "partition", "stamp", "topic")

    def __init__(self, topic: str, partition: int, owner: Any, stamp: Callable[[Any], Any]) -> None:
        self.topic = topic
        self.partition = partition
        #: what processes this queue's records (a StreamTask); opaque here
        self.owner = owner
        #: ``stamp(raw) -> record with .timestamp, or None to skip``; ``StreamTask.stamp``
        self.stamp = stamp
        self.fifo: deque[Any] = deque()
        self.head: Any = None

    def update_head(self) -> None:
        fifo = self.fifo
        stamp = self.stamp
        while self.head is None and fifo:
            self.head = stamp(fifo.popleft())

    @property
    def head_timestamp(self) -> int:
        return UNKNOWN if self.head is None else self.head.timestamp

    def is_empty(self) -> bool:
        return self.head is None and not self.fifo

    def __len__(self) -> int:
        return len(self.fifo) + (self.head is not None)

    def __repr__(self) -> str:
        return f"RecordQueue({self.topic}-{self.partition}, buffered={len(self)})"


class PartitionGroup:
    def __init__(self, max_task_idle_ms: int = 0) -> None:
        self.max_task_idle_ms = max_task_idle_ms
        self.queues: dict[TopicPartition, RecordQueue] = {}
        self._lags: dict[TopicPartition, int] = {}
        self._deadlines: dict[TopicPartition, int] = {}
        #: (head timestamp, arrival sequence, queue) of queues with a stamped head
        self._heap: list[tuple[int, int, RecordQueue]] = []
        self._seq = 0
        #: the queue whose head was just taken: its next head is stamped lazily, after that record ran
        self._taken: RecordQueue | None = None
        #: times processing went on although a caught-up partition was empty (Kafka's sensor)
        self.enforced_processing = 0
        #: whether the last ``ready`` was True only by enforced processing
        self._enforced = False

    # -- partitions ---------------------------------------------------------------------------------
    def add_partition(
        self, topic: str, partition: int, owner: Any, stamp: Callable[[Any], Any], lag: int = UNKNOWN
    ) -> RecordQueue:
        queue = RecordQueue(topic, partition, owner, stamp)
        self.queues[(topic, partition)] = queue
        self._lags[(topic, partition)] = lag
        return queue

    def set_lag(self, topic: str, partition: int, lag: int) -> None:
        """``lag``: records on the broker not fetched yet (0: caught up), or -1 (unknown)."""
        tp = (topic, partition)
        if tp in self._lags:
            self._lags[tp] = lag

    def lag(self, topic: str, partition: int) -> int:
        return self._lags.get((topic, partition), UNKNOWN)

    # -- records ------------------------------------------------------------------------------------
    def add_records(self, topic: str, partition: int, records: Iterable[Any]) -> int:
        """Buffer raw records of one partition (in offset order); returns that queue's size."""
        queue = self.queues.get((topic, partition))
        if queue is None:
            raise KeyError(f"partition {topic}-{partition} is not in this partition group")
        was_empty = queue.is_empty()
        queue.fifo.extend(records)
        if was_empty and queue is not self._taken:
            self._push(queue)
        return len(queue)

    def _push(self, queue: RecordQueue) -> None:
        queue.update_head()
        if queue.head is not None:
            self._seq += 1
            heapq.heappush(self._heap, (queue.head.timestamp, self._seq, queue))

    def next_record(self) -> tuple[Any, Any] | None:
        """``(owner, record)`` with the lowest head timestamp, or None when nothing is buffered."""
        taken = self._taken
        if taken is not None:
            self._taken = None
            self._push(taken)
        if not self._heap:
            return None
        _, _, queue = heapq.heappop(self._heap)
        record = queue.head
        queue.head = None
        self._taken = queue
        return queue.owner, record

    def drain_while_all_buffered(self, process: Callable[[Any, Any], Any]) -> int:
        """Hand ``process(owner, record)`` the lowest-timestamp record for as long as every partition
        holds one (what :meth:`ready` then says anyway); returns how many went. Call it only when
        :meth:`all_buffered` said True.

        The order is exactly :meth:`next_record`'s, without its per-record bookkeeping: ``ready`` cannot
        change while no queue is empty (only the queue just taken from can become so), and the taken
        queue's next head goes back into the heap only when another queue's head comes first -- the
        heap's entries are ``(timestamp, arrival, queue)``, so on a tie the queue already waiting wins,
        as a push and pop would decide. A join of two interleaved topics spent a sixth of its stream
        thread on that bookkeeping. Heads are still stamped lazily, after the record before ran."""
        heap = self._heap
        taken = self._taken
        heappop, heapreplace = heapq.heappop, heapq.heapreplace
        n = 0
        while True:
            if taken is None:
                if not heap:
                    break
                queue = heappop(heap)[2]
            else:
                head = taken.head
                if head is None:
                    fifo, stamp = taken.fifo, taken.stamp
                    while head is None and fifo:
                        head = stamp(fifo.popleft())
                    if head is None:  # that partition ran dry: ready() decides whether to go on
                        self._taken = None
                        break
                    taken.head = head
                if heap and head.timestamp >= heap[0][0]:
                    self._seq += 1
                    queue = heapreplace(heap, (head.timestamp, self._seq, taken))[2]
                else:
                    queue = taken
            record = queue.head
            queue.head = None
            self._taken = taken = queue
            process(queue.owner, record)
            n += 1
        return n

    def all_buffered(self) -> bool:
        """Whether every partition holds a record (then nothing blocks: see :meth:`ready`)."""
        return all(queue.head is not None or queue.fifo for queue in self.queues.values())

    def take_sole(self) -> tuple[Any, Any, list[Any]] | None:
        """When exactly one partition holds records: ``(owner, its stamped head or None, the raw records
        after it)``, every record it holds, leaving the group empty; otherwise None. Call it only when
        :meth:`ready` said True.

        ``next_record`` would hand out those records one by one in offset order anyway: nothing else is
        buffered, nothing is added while the owner processes, and ``ready`` stays True (same wall
        clock). Taken at once, the owner processes them as one batch, without a heap operation and a
        stamp per record -- what a stream-table join costs once its table partition is caught up."""
        sole = None
        for queue in self.queues.values():
            if queue.head is not None or queue.fifo:
                if sole is not None:
                    return None
                sole = queue
        if sole is None:
            return None
        head = sole.head
        raws = list(sole.fifo)
        sole.fifo.clear()
        sole.head = None
        self._heap.clear()  # held at most this queue's head: every other queue is empty
        self._taken = None
        if self._enforced:  # Kafka counts each record processed by enforcement
            self.enforced_processing += len(raws) + (head is not None) - 1
        return sole.owner, head, raws

    def num_buffered(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def buffered(self, topic: str, partition: int) -> int:
        return len(self.queues[(topic, partition)])

    def __bool__(self) -> bool:
        return any(not q.is_empty() for q in self.queues.values())

    # -- may the owner process now? -----------------------------------------------------------------
    def ready(self, wall_clock_ms: int) -> bool:
        """Kafka's ``readyToProcess``: whether the next record may be processed now (see the module doc).
        True also when nothing is buffered, if nothing blocks (``next_record`` then returns None)."""
        idle = self.max_task_idle_ms
        self._enforced = False
        if idle < 0:
            return True
        queued = False
        enforced = False
        deadlines = self._deadlines
        for tp, queue in self.queues.items():
            if queue.head is not None or queue.fifo:
                deadlines.pop(tp, None)
                queued = True
                continue
            if self._lags.get(tp, UNKNOWN) != 0:
                deadlines.pop(tp, None)
                return False  # data is on the broker (or we do not know yet): wait for it
            deadline = deadlines.get(tp)
            if deadline is None:
                deadline = deadlines[tp] = wall_clock_ms + idle
            if wall_clock_ms < deadline:
                return False
            enforced = True
        if not enforced:
            return True
        if not queued:
            return False
        self.enforced_processing += 1
        self._enforced = True
        return True

    def clear(self) -> None:
        for queue in self.queues.values():
            queue.fifo.clear()
            queue.head = None
        self._heap.clear()
        self._taken = None
        self._deadlines.clear()


__all__ = ["UNKNOWN", "PartitionGroup", "RecordQueue"]

"""Steady input for every task while instances join, and each task's longest processing pause.

Shared by the cooperative-rebalance tests and ``benchmarks/edge_rebalance_pause.py``. Input keys name
their input partition (``p3-k1``), so an output (the count app forwards every count, keyed alike) tells
which task produced it whatever partition the output landed on; the count ``n`` of key ``k`` is the
output of the ``n``-th input of ``k``. A task's pause is the longest time from an input's append to
the input topic to its output's append to the output topic (both topics stamp
``message.timestamp.type=LogAppendTime``, see :data:`APPEND_TIME`): a stall of the measuring process
(its producer or its readers) does not show as one. A broker that does not stamp append times gets the
production and read times instead.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import OFFSET_BEGINNING, TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer, TopicPartition

from edge.kafka import KafkaClientConfig
from tests.edge.runtime.harness import OutputReader

T = TypeVar("T")

KEYS_PER_PARTITION = 4
#: the input and output topics' config: the broker stamps each record with its append time
APPEND_TIME = {"message.timestamp.type": "LogAppendTime"}
#: a request the broker leaves unanswered for 15 s is sent again on a new connection, and sending it again
#: cannot write a record twice (the counts the tests compare are exact)
_RESILIENT = {"enable.idempotence": True, "socket.timeout.ms": 15_000}


class JoinLoad:
    """Produces one record to every partition every ``interval_s`` on one thread and reads the outputs
    on another (so an output's arrival time is not delayed by whatever the test waits for)."""

    def __init__(
        self,
        client: KafkaClientConfig,
        in_topic: str,
        out_topic: str,
        group: str,
        partitions: int,
        *,
        interval_s: float = 0.02,
    ) -> None:
        self.partitions = partitions
        self.interval_s = interval_s
        self.in_topic = in_topic
        self.sent: dict[str, int] = {}
        #: (key, count) -> wall-clock time its input was produced
        self.produced_at: dict[tuple[str, int], float] = {}
        #: (key, count) -> its input's append time (read back from the input topic)
        self.input_at: dict[tuple[str, int], float] = {}
        self._input_seen: dict[str, int] = {}
        self._input_reader = Consumer(client.consumer(f"{group}-in", **{"enable.auto.commit": False}))
        self._input_reader.assign([TopicPartition(in_topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        #: (key, count) -> wall-clock time its first output was appended (or read, on a broker that
        #: does not stamp LogAppendTime)
        self.output_at: dict[tuple[str, int], float] = {}
        #: outputs the broker stamped with their append time (the rest are timed as read)
        self.append_stamped = 0
        self.reader = OutputReader(client, out_topic, group, committed=False)
        self._client = client
        self._producer = Producer(client.producer(**{"linger.ms": 0, **_RESILIENT}))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, name="join-load", daemon=True)
        self._reading = threading.Event()
        self._reader_thread = threading.Thread(target=self._read, name="join-read", daemon=True)

    def __enter__(self) -> JoinLoad:
        self._thread.start()
        self._reading.set()
        self._reader_thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(10)
        self._reading.clear()
        self._reader_thread.join(10)
        self.reader.close()
        self._input_reader.close()

    def _read(self) -> None:
        consumer = self.reader.consumer
        while self._reading.is_set():
            for m in self._input_reader.consume(1000, 0):
                if m.error() is not None or m.key() is None:
                    continue
                key = m.key().decode()
                n = self._input_seen[key] = self._input_seen.get(key, 0) + 1
                kind, ts = m.timestamp()
                if kind == TIMESTAMP_LOG_APPEND_TIME:
                    self.input_at[(key, n)] = ts / 1000
            for m in consumer.consume(1000, 0.2):
                if m.error() is not None or m.key() is None:
                    continue
                key = m.key().decode()
                value = int.from_bytes(m.value(), "big", signed=True)
                self.reader.records.append((key, value, time.monotonic(), m.partition()))
                kind, ts = m.timestamp()
                stamped = kind == TIMESTAMP_LOG_APPEND_TIME
                self.append_stamped += stamped
                at = ts / 1000 if stamped else time.time()
                self.output_at.setdefault((key, value), at)

    def preload(self, per_partition: int, keys: int) -> None:
        """Produce a history first (``keys`` keys per partition): state for a joining instance to take
        over. Counted in :meth:`expected` like the steady input.

        Batched on a producer of its own: the steady producer sends every record at once (``linger.ms=0``),
        and tens of thousands of those pipelined on one connection once stalled the embedded broker's
        replies for over a minute."""
        history = Producer(self._client.producer(**{"linger.ms": 20, **_RESILIENT}))
        for i in range(per_partition):
            for p in range(self.partitions):
                key = f"p{p}-h{i % keys}"
                history.produce(self.in_topic, b"1", key.encode(), partition=p)
                self.sent[key] = self.sent.get(key, 0) + 1
            if i % 500 == 0:
                history.poll(0)
        assert history.flush(120) == 0, "the history was not delivered within 120 s"

    def _produce(self) -> None:
        i = 0
        next_at = time.monotonic()
        while not self._stop.is_set():
            for p in range(self.partitions):
                key = f"p{p}-k{i % KEYS_PER_PARTITION}"
                n = self.sent[key] = self.sent.get(key, 0) + 1
                self.produced_at[(key, n)] = time.time()
                self._producer.produce(self.in_topic, b"1", key.encode(), partition=p)
            self._producer.poll(0)
            i += 1
            next_at += self.interval_s
            self._stop.wait(max(0.0, next_at - time.monotonic()))
        self._producer.flush(30)

    @staticmethod
    def now() -> float:
        return time.monotonic()

    @staticmethod
    def run_for(seconds: float) -> None:
        time.sleep(seconds)

    def run_until(self, check: Callable[[], T], timeout: float) -> T:
        """Keep reading while ``check`` raises AssertionError; its first result."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return check()
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.2)

    def stop_and_drain(self, timeout: float = 60) -> None:
        """Stop producing and read until every key's latest count is what was sent."""
        self._stop.set()
        self._thread.join(30)
        want = self.expected()
        deadline = time.monotonic() + timeout
        while self.reader.latest() != want:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"counts not reached after {timeout}s; {len(self.reader.records)} outputs"
                )
            time.sleep(0.2)

    def expected(self) -> dict[str, int]:
        return dict(self.sent)

    @staticmethod
    def wall() -> float:
        return time.time()

    def pauses(self, since: float) -> dict[int, float]:
        """Input partition -> the longest time (s) an input produced after ``since`` (wall clock) waited
        for its output: a task that stops for P seconds holds the input arriving meanwhile ~P."""
        out: dict[int, float] = {p: 0.0 for p in range(self.partitions)}
        for (key, n), produced in list(self.produced_at.items()):
            if produced < since:
                continue
            p = int(key.split("-", 1)[0][1:])
            done = self.output_at.get((key, n))
            start = self.input_at.get((key, n), produced)
            out[p] = max(out[p], (done if done is not None else time.time()) - start)
        return out


def split_pauses(
    pauses: dict[int, float], before: dict[str, list[int]], after: dict[str, list[int]]
) -> tuple[dict[int, float], dict[int, float]]:
    """(pauses of tasks whose owner did not change, pauses of tasks that moved)."""
    owner_before = {p: s for s, ps in before.items() for p in ps}
    owner_after = {p: s for s, ps in after.items() for p in ps}
    stayed = {p: t for p, t in pauses.items() if owner_before.get(p) == owner_after.get(p)}
    moved = {p: t for p, t in pauses.items() if p not in stayed}
    return stayed, moved

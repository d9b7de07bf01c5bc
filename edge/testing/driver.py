"""TopologyTestDriver: run a topology in-process with no broker, on the same StreamTask, processors and
stores the Kafka runtime uses; only Kafka I/O is replaced by in-memory queues.

It runs one task per sub-topology (partition 0), commits after every input record by default (so
record caches flush per record; pass ``auto_commit=False`` and call :meth:`TopologyTestDriver.commit` to
observe cache collapsing), and feeds records written to topics the topology reads (repartition topics, or
a user topic it also consumes) back in as input.

Record order is Kafka's driver's: every input topic (user and repartition topics of every sub-topology)
is a queue of one :class:`~edge.processor.partition_group.PartitionGroup`; after a piped record is
enqueued, the buffered record with the lowest timestamp is processed next, its output records are
enqueued, and so on until nothing is left -- so when one record causes several (a flat-map before a
repartition, a punctuator's output), they run in timestamp order, ties in the order they were produced.
``max_task_idle_ms`` (config) > 0 makes the driver hold records while some input topic is empty, until
that topic gets a record or ``advance_wall_clock_time`` passes the idle deadline (every topic counts as
caught up, like Kafka's driver). Unlike Kafka's driver, which runs the whole topology as one task with one
stream time, stream time is kept per sub-topology task, as the Kafka runtime does. Records of global
topics are processed as soon as they are piped.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from edge.errors import StreamhouseError, TopologyError
from edge.processor.config import TaskConfig
from edge.processor.partition_group import PartitionGroup
from edge.processor.record import Headers
from edge.processor.task import StreamTask, task_id
from edge.serde import Serde, ValueAndTimestamp
from edge.state.window import MeteredSessionStore, MeteredWindowStore
from edge.testing.window_facades import SessionStoreFacade, WindowStoreFacade
from edge.topology import Topology


class NoRecordError(StreamhouseError, LookupError):
    """An output topic was read past its last record."""


@dataclass(slots=True)
class TestRecord:
    key: Any
    value: Any
    timestamp: int | None = None
    headers: Headers = field(default_factory=list)

    __test__ = False  # not a pytest class


@dataclass(slots=True)
class _Raw:
    topic: str
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers | None
    partition: int | None


class _Collector:
    """RecordCollector + ChangelogSink of the driver: every produced record lands in an output queue."""

    def __init__(self, driver: TopologyTestDriver) -> None:
        self._driver = driver

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers | None,
        partition: int | None = None,
    ) -> None:
        self._driver._produced(_Raw(topic, key, value, timestamp, headers, partition))

    def partitions_for(self, topic: str) -> int:
        return 1


class _ChangelogSink:
    def __init__(self, driver: TopologyTestDriver) -> None:
        self._driver = driver

    def send(self, topic: str, partition: int, key: bytes, value: bytes | None, timestamp: int) -> None:
        self._driver._outputs[topic].append(_Raw(topic, key, value, timestamp, None, partition))


class TopologyTestDriver:
    __test__ = False

    def __init__(
        self,
        topology: Topology,
        config: TaskConfig | None = None,
        *,
        initial_wall_clock_ms: int = 0,
        auto_commit: bool = True,
    ) -> None:
        config = config or TaskConfig(application_id="topology-test-driver")
        self._tmp: Path | None = None
        if config.state_dir is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="streamhouse-ttd-"))
            config = replace(config, state_dir=self._tmp)
        if getattr(config, "emit_interval_ms_kstreams_outer_join_spurious_results_fix", 0) is None:
            # Kafka's TopologyTestDriver checks every record: non-joined results as soon as stream time allows
            config = replace(config, emit_interval_ms_kstreams_outer_join_spurious_results_fix=0)
        if getattr(config, "emit_interval_ms_kstreams_windowed_aggregation", 0) is None:
            # likewise for emit-on-window-close aggregations: closed windows are emitted on every record
            config = replace(config, emit_interval_ms_kstreams_windowed_aggregation=0)
        self.config = config
        self.topology = topology
        self.auto_commit = auto_commit
        self._clock = initial_wall_clock_ms
        self._outputs: dict[str, deque[_Raw]] = defaultdict(deque)
        #: records produced to a topic the topology reads, not yet enqueued (Kafka's driver enqueues
        #: them after the record that produced them was processed)
        self._queue: deque[_Raw] = deque()
        self._global_queue: deque[tuple] = deque()
        self._group = PartitionGroup(getattr(config, "max_task_idle_ms", 0))
        self._offsets: dict[str, int] = defaultdict(int)
        self._draining = False
        self._processed = 0
        self._closed = False
        collector, sink = _Collector(self), _ChangelogSink(self)
        app = config.application_id

        def clock() -> int:
            return self._clock

        self._global_task: StreamTask | None = None
        self._tasks: list[StreamTask] = []
        self._task_by_topic: dict[str, StreamTask] = {}
        try:
            for st in topology.subtopologies():
                if st.is_global:
                    pt = topology.build_processor_topology(st.id, config)
                    self._global_task = StreamTask("global", pt, config, collector, sink, clock=clock)
                    self._global_task.initialize()  # before the stream tasks: they read its stores
            global_stores = self._global_task.stores if self._global_task else {}
            for st in topology.subtopologies():
                if st.is_global:
                    continue
                pt = topology.build_processor_topology(st.id, config)
                task = StreamTask(
                    task_id(st.id, 0), pt, config, collector, sink, global_stores=global_stores, clock=clock
                )
                task.initialize()
                self._tasks.append(task)
                for topic in task.source_topics:
                    self._task_by_topic[topic] = task
                    # every input counts as caught up (lag 0), as in Kafka's driver
                    self._group.add_partition(topic, 0, task, task.stamp, lag=0)
            self._global_topics = {topology.resolve_topic(t, app) for t in topology.global_topics()}
            for topic in self._global_topics:
                self._task_by_topic[topic] = self._global_task  # type: ignore[assignment]
        except BaseException:
            self.close()
            raise

    # -- input ------------------------------------------------------------------------------------------
    def create_input_topic(
        self,
        topic: str,
        key_serde: Serde | None = None,
        value_serde: Serde | None = None,
        *,
        start_timestamp: int | None = None,
        auto_advance_ms: int = 0,
    ) -> TestInputTopic:
        resolved = self.topology.resolve_topic(topic, self.config.application_id)
        if resolved not in self._task_by_topic:
            raise TopologyError(
                f"topic {topic!r} is not an input of this topology; it reads {sorted(self._known())}"
            )
        return TestInputTopic(
            self,
            resolved,
            key_serde or self.config.default_key_serde,
            value_serde or self.config.default_value_serde,
            self._clock if start_timestamp is None else start_timestamp,
            auto_advance_ms,
        )

    def _known(self) -> set[str]:
        return set(self._task_by_topic)

    def pipe_raw(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers | None = None,
    ) -> None:
        """Pipe one serialized record, then process everything it causes (repartition hops, commits)."""
        if self._closed:
            raise StreamhouseError("the TopologyTestDriver is closed")
        if topic not in self._task_by_topic:
            raise TopologyError(f"topic {topic!r} is not an input of this topology")
        self._queue.append(_Raw(topic, key, value, timestamp, headers, 0))
        self._drain()

    def _produced(self, raw: _Raw) -> None:
        self._outputs[raw.topic].append(raw)
        if raw.topic in self._task_by_topic:
            self._queue.append(raw)

    def _enqueue_produced(self) -> None:
        """Move records produced to input topics into their queues (offsets are given here)."""
        queue = self._queue
        offsets = self._offsets
        group = self._group
        while queue:
            raw = queue.popleft()
            topic = raw.topic
            offset = offsets[topic]
            offsets[topic] = offset + 1
            record = (topic, 0, offset, raw.timestamp, raw.key, raw.value, raw.headers)
            if topic in self._global_topics:
                self._global_queue.append(record)
            else:
                group.add_records(topic, 0, (record,))

    def _drain(self) -> None:
        """Process every record that may be processed now, lowest timestamp first (Kafka's driver's
        ``completeAllProcessableWork``)."""
        if self._draining:
            return
        self._draining = True
        commit_all = False
        group = self._group
        try:
            while True:
                self._enqueue_produced()
                if self._global_queue:
                    task = self._global_task
                    assert task is not None
                    task.process(*self._global_queue.popleft())
                    self._processed += 1
                    if self.auto_commit:
                        task.commit_prepare()
                    continue
                if not group.ready(self._clock):
                    break
                nxt = group.next_record()
                if nxt is None:
                    if self._queue:
                        continue  # a skipped head's dead letter went to an input topic
                    break
                task, record = nxt
                task.process_stamped(record)  # fires due stream-time punctuators too
                self._processed += 1
                if self.auto_commit:
                    task.commit_prepare()
                elif task.commit_requested:
                    commit_all = True  # like Kafka Streams: a requested commit commits every task
        finally:
            self._draining = False
        if commit_all:
            self.commit()

    # -- time and commits -------------------------------------------------------------------------------
    def advance_wall_clock_time(self, ms: int) -> None:
        """Move the mock wall clock; fires due wall-clock punctuations (and commits when auto-committing)."""
        if ms < 0:
            raise StreamhouseError(f"wall-clock time can only move forward, got {ms} ms")
        for task in self._tasks:
            task.maybe_advance_idle_stream_time(self._clock)  # notes records piped since the last call
        self._clock += ms
        for task in self._all_tasks():
            task.punctuate_wall_clock(self._clock)
            if task is not self._global_task:
                # idle.stream.time.advance.ms (an extension, off by default): quiet tasks' stream time
                # follows the wall clock
                task.maybe_advance_idle_stream_time(self._clock)
            if self.auto_commit:
                task.commit_prepare()
            self._drain()

    @property
    def wall_clock_ms(self) -> int:
        return self._clock

    def commit(self) -> None:
        """Commit every task: flush stores so caches forward their (collapsed) updates downstream.

        A flush may send records to a repartition topic, whose processing dirties another task's
        cache, so commit again until a round processes nothing new.
        """
        while True:
            before = self._processed
            for task in self._all_tasks():
                task.commit_prepare()
                self._drain()
            if self._processed == before:
                return

    def _all_tasks(self) -> list[StreamTask]:
        return ([self._global_task] if self._global_task else []) + self._tasks

    # -- output -----------------------------------------------------------------------------------------
    def create_output_topic(
        self, topic: str, key_serde: Serde | None = None, value_serde: Serde | None = None
    ) -> TestOutputTopic:
        return TestOutputTopic(
            self,
            topic,
            key_serde or self.config.default_key_serde,
            value_serde or self.config.default_value_serde,
        )

    def produced_topics(self) -> set[str]:
        return {t for t, q in self._outputs.items() if q}

    # -- stores -----------------------------------------------------------------------------------------
    def get_state_store(self, name: str) -> Any:
        """The store itself (timestamped stores return ``ValueAndTimestamp`` values)."""
        for task in self._all_tasks():
            if name in task.stores:
                return task.stores[name]
        raise TopologyError(f"no state store named {name!r}; stores: {sorted(self.topology.store_names())}")

    def get_key_value_store(self, name: str) -> ReadOnlyStoreFacade:
        """A read view of a store that unwraps ``ValueAndTimestamp`` values (like Kafka's facade)."""
        return ReadOnlyStoreFacade(self.get_state_store(name))

    def get_window_store(self, name: str) -> WindowStoreFacade:
        """A window store whose values are plain (``ValueAndTimestamp`` unwrapped, as Kafka's facade)."""
        return WindowStoreFacade(self._typed_store(name, MeteredWindowStore, "window"), timestamped=False)

    def get_timestamped_window_store(self, name: str) -> WindowStoreFacade:
        return WindowStoreFacade(self._typed_store(name, MeteredWindowStore, "window"), timestamped=True)

    def get_session_store(self, name: str) -> SessionStoreFacade:
        return SessionStoreFacade(self._typed_store(name, MeteredSessionStore, "session"))

    def _typed_store(self, name: str, kind: type, what: str) -> Any:
        store = self.get_state_store(name)
        if not isinstance(store, kind):
            raise TopologyError(f"state store {name!r} is not a {what} store ({type(store).__name__})")
        return store

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        errors: list[BaseException] = []
        for task in self._all_tasks():
            try:
                task.close()
            except Exception as exc:
                errors.append(exc)
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
        if errors:
            raise errors[0]

    def __enter__(self) -> TopologyTestDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _unwrap(value: Any) -> Any:
    return value.value if isinstance(value, ValueAndTimestamp) else value


class ReadOnlyStoreFacade:
    def __init__(self, store: Any) -> None:
        self.store = store

    def get(self, key: Any) -> Any:
        return _unwrap(self.store.get(key))

    def all(self) -> list[tuple[Any, Any]]:
        with self.store.all() as it:
            return [(k, _unwrap(v)) for k, v in it]

    def range(self, from_key: Any, to_key: Any) -> list[tuple[Any, Any]]:
        with self.store.range(from_key, to_key) as it:
            return [(k, _unwrap(v)) for k, v in it]

    def approximate_num_entries(self) -> int:
        return self.store.approximate_num_entries()

    def to_dict(self) -> dict[Any, Any]:
        return dict(self.all())


class TestInputTopic:
    __test__ = False

    def __init__(
        self,
        driver: TopologyTestDriver,
        topic: str,
        key_serde: Serde,
        value_serde: Serde,
        start_timestamp: int,
        auto_advance_ms: int,
    ) -> None:
        self._driver = driver
        self.topic = topic
        self._key_ser = key_serde.serialize
        self._value_ser = value_serde.serialize
        self._time = start_timestamp
        self._advance = auto_advance_ms

    def _next_time(self, timestamp: int | None) -> int:
        if timestamp is not None:
            return timestamp
        ts = self._time
        self._time += self._advance
        return ts

    def advance_time(self, ms: int) -> None:
        self._time += ms

    def pipe_input(
        self, key: Any = None, value: Any = None, timestamp: int | None = None, headers: Headers | None = None
    ) -> None:
        topic = self.topic
        self._driver.pipe_raw(
            topic,
            self._key_ser(topic, key),
            self._value_ser(topic, value),
            self._next_time(timestamp),
            headers,
        )

    def pipe_value(self, value: Any, timestamp: int | None = None) -> None:
        self.pipe_input(None, value, timestamp)

    def pipe_record(self, record: TestRecord) -> None:
        self.pipe_input(record.key, record.value, record.timestamp, record.headers or None)

    def pipe_key_value_list(self, pairs: Iterable[tuple[Any, Any]]) -> None:
        for key, value in pairs:
            self.pipe_input(key, value)

    def pipe_value_list(self, values: Iterable[Any]) -> None:
        for value in values:
            self.pipe_input(None, value)

    def pipe_records(self, records: Iterable[TestRecord]) -> None:
        for record in records:
            self.pipe_record(record)


class TestOutputTopic:
    __test__ = False

    def __init__(self, driver: TopologyTestDriver, topic: str, key_serde: Serde, value_serde: Serde) -> None:
        self._driver = driver
        self.topic = topic
        self._key_de = key_serde.deserialize
        self._value_de = value_serde.deserialize

    def _pop(self) -> _Raw:
        queue = self._driver._outputs.get(self.topic)
        if not queue:
            raise NoRecordError(f"output topic {self.topic!r} has no more records")
        return queue.popleft()

    def read_record(self) -> TestRecord:
        raw = self._pop()
        topic = self.topic
        return TestRecord(
            self._key_de(topic, raw.key),
            self._value_de(topic, raw.value),
            raw.timestamp,
            list(raw.headers or []),
        )

    def read_value(self) -> Any:
        return self.read_record().value

    def read_key_value(self) -> tuple[Any, Any]:
        r = self.read_record()
        return r.key, r.value

    def read_records_to_list(self) -> list[TestRecord]:
        out = []
        while not self.is_empty():
            out.append(self.read_record())
        return out

    def read_values_to_list(self) -> list[Any]:
        return [r.value for r in self.read_records_to_list()]

    def read_key_values_to_list(self) -> list[tuple[Any, Any]]:
        return [(r.key, r.value) for r in self.read_records_to_list()]

    def read_key_values_to_map(self) -> dict[Any, Any]:
        """Latest value per key, as Kafka's ``TestOutputTopic.readKeyValuesToMap``: a key whose last
        value is a tombstone stays, with ``None``. A record with a null key is an error (a map cannot
        hold it; read it with ``read_key_values_to_list``)."""
        out: dict[Any, Any] = {}
        for key, value in self.read_key_values_to_list():
            if key is None:
                raise ValueError(
                    f"topic {self.topic!r} holds a record with a null key: read_key_values_to_map "
                    "does not allow null keys (use read_key_values_to_list)"
                )
            out[key] = value
        return out

    def get_queue_size(self) -> int:
        return len(self._driver._outputs.get(self.topic, ()))

    def is_empty(self) -> bool:
        return self.get_queue_size() == 0


__all__ = [
    "NoRecordError",
    "ReadOnlyStoreFacade",
    "TestInputTopic",
    "TestOutputTopic",
    "TestRecord",
    "TopologyTestDriver",
]

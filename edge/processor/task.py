"""StreamTask: one sub-topology running for one partition. The Kafka runtime and the test driver both
drive tasks through the same few methods; only where records come from and go to differs.

Driving a task::

    task = StreamTask(task_id("0", p), topology.build_processor_topology(0, config), config, collector,
                      changelog_sink, partition=p, global_stores=global_task.stores)
    task.initialize()                       # opens stores, inits processors (the runtime:
                                            # initialize_stores(), restore, initialize_processors())
    task.process(topic, partition, offset, timestamp, key_bytes, value_bytes, headers)   # per record
    task.punctuate_stream_time()            # after each record (cheap when nothing is scheduled)
    task.punctuate_wall_clock(now_ms)       # from the poll loop
    task.maybe_advance_idle_stream_time(now_ms)   # from the poll loop (idle.stream.time.advance.ms)
    offsets = task.commit_prepare()         # flush stores (cache -> forward + changelog); then commit offsets
    task.close()
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edge.errors import SerdeError, TopologyError
from edge.processor.api import PunctuationType, Punctuator, StreamTimeListener
from edge.processor.collector import CollectorUnusableError
from edge.processor.context import NodeContext
from edge.processor.handlers import ErrorAction, ErrorContext, ErrorKind, ProcessingFailed
from edge.processor.punctuation import PunctuationQueue, PunctuationSchedule
from edge.processor.record import Headers, Record, RecordMetadata
from edge.processor.record_warnings import RECORD_WARNINGS, warn_record
from edge.processor.timestamps import ConsumedRecord, FailOnInvalidTimestamp, is_record_timestamp
from edge.state import StoreContext, StoreMetrics

if TYPE_CHECKING:
    from edge.processor.collector import RecordCollector
    from edge.processor.config import StreamsConfig
    from edge.state import ChangelogSink
    from edge.topology import ProcessorTopology

log = logging.getLogger(__name__)

#: raised past the processing exception handler: a handler's own FAIL, and a collector that can take
#: no more records (its producer's transaction failed: task migration, not the record's fault)
_NOT_THE_RECORDS_FAULT = (ProcessingFailed, CollectorUnusableError)

_new = object.__new__


def task_id(subtopology: int | str, partition: int) -> str:
    return f"{subtopology}_{partition}"


class _Listener:
    """A registered stream-time listener; ``cancel()`` unregisters it."""

    __slots__ = ("callback", "cancelled", "node")

    def __init__(self, node: NodeContext, callback: StreamTimeListener) -> None:
        self.node = node
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


_DEFAULT_EXTRACTOR = FailOnInvalidTimestamp()


class _Source:
    __slots__ = ("children", "custom_extractor", "extractor", "forward", "key_de", "name", "value_de")

    def __init__(self, name: str, key_de: Any, value_de: Any, children: tuple, extractor: Any = None) -> None:
        self.name = name
        self.key_de = key_de
        self.value_de = value_de
        self.children = children
        #: False for the default extractor: the task then calls it only for a negative record timestamp
        self.custom_extractor = not is_record_timestamp(extractor)
        self.extractor = _DEFAULT_EXTRACTOR if extractor is None else extractor
        #: the only child's ``process`` itself when there is one (one call less per record)
        self.forward: Callable[[Record], None] = children[0] if len(children) == 1 else self._forward_all

    def _forward_all(self, record: Record) -> None:
        for child in self.children:
            child(record)


class StampedRecord:
    """A source record deserialized and timestamped, waiting in a partition queue to be processed."""

    __slots__ = (
        "headers",
        "key",
        "key_bytes",
        "offset",
        "partition",
        "source",
        "timestamp",
        "topic",
        "value",
        "value_bytes",
    )

    def __init__(
        self,
        source: Any,
        topic: str,
        partition: int,
        offset: int,
        timestamp: int,
        key: Any,
        value: Any,
        headers: Headers | None,
        key_bytes: bytes | None,
        value_bytes: bytes | None,
    ) -> None:
        self.source = source
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers
        self.key_bytes = key_bytes
        self.value_bytes = value_bytes

    def __repr__(self) -> str:
        where = f"{self.topic}-{self.partition}@{self.offset}"
        return f"StampedRecord({where}, timestamp={self.timestamp}, key={self.key!r})"


class StreamTask:
    def __init__(
        self,
        id: str,
        topology: ProcessorTopology,
        config: StreamsConfig,
        collector: RecordCollector,
        changelog_sink: ChangelogSink | None = None,
        *,
        partition: int = 0,
        global_stores: dict[str, Any] | None = None,
        clock: Callable[[], int] = _wall_clock_ms,
    ) -> None:
        self.id = id
        self.topology = topology
        self.config = config
        self.application_id = config.application_id
        self.collector = collector
        self.changelog_sink = changelog_sink
        self.partition = partition
        self.global_stores: dict[str, Any] = global_stores if global_stores is not None else {}
        self.stores: dict[str, Any] = {}
        self.meta = RecordMetadata()
        self.meta.partition = partition
        self.stream_time = -1
        self._clock = clock
        self.wall_clock_time = clock()
        self.commit_requested = False
        self._offsets: dict[str, int] = {}  # last processed offset per source topic (one partition each)
        self._sources: dict[str, _Source] = {}
        self._stream_punctuations = PunctuationQueue()
        self._wall_punctuations = PunctuationQueue()
        self._stream_time_listeners: list[_Listener] = []
        #: per source topic: the largest timestamp a custom extractor returned (its ``partition_time``)
        self._partition_time: dict[str, int] = {}
        #: records dropped for a negative extracted timestamp (Kafka's dropped-records metric)
        self.dropped_records = 0
        self._idle_advance_ms: int = getattr(config, "idle_stream_time_advance_ms", -1)
        #: (offsets seen, wall clock then, stream time then) at the last record, for the idle advance
        self._idle_mark: tuple[dict[str, int], int, int] | None = None
        self._deser_handler = config.deserialization_exception_handler.handle
        self._proc_handler = config.processing_exception_handler.handle
        self._node_names: dict[int, str] = {}
        self._initialized = False
        self._stores_open = False
        self._closed = False

    @property
    def has_wall_clock_punctuations(self) -> bool:
        """Whether ``punctuate_wall_clock`` has anything to do (the poll loop can skip it otherwise)."""
        return bool(self._wall_punctuations)

    @property
    def source_topics(self) -> list[str]:
        return [t for s in self.topology.sources for t in s.topics]

    # -- lifecycle ------------------------------------------------------------------------------------
    def initialize(self) -> None:
        """Open the stores, then init processors (the test driver; the runtime restores in between)."""
        self.initialize_stores()
        self.initialize_processors()

    def initialize_stores(self) -> None:
        """Open every store; on failure the stores opened so far are closed.

        The runtime restores the stores from their changelogs after this and only then calls
        :meth:`initialize_processors`, as Kafka Streams does: a processor may read its stores in ``init``
        (emit-final aggregations read what they emitted last) and must see the restored state.
        """
        if self._stores_open:
            return
        try:
            self._open_stores()
        except BaseException:
            self._close_stores_after_failure()
            raise
        self._stores_open = True

    def initialize_processors(self) -> None:
        if self._initialized:
            return
        if not self._stores_open:
            self.initialize_stores()
        try:
            self._init_processors()
        except BaseException:
            self._close_stores_after_failure()
            raise
        self._initialized = True

    def _close_stores_after_failure(self) -> None:
        for store in self.stores.values():
            try:
                store.close()
            except Exception:
                log.exception("closing store %s of task %s after a failed init", store.name, self.id)
        self.stores.clear()
        self._closed = True

    def _open_stores(self) -> None:
        pt = self.topology
        state_dir = self.config.state_dir
        if state_dir is None and any(b.persistent for b in pt.stores.values()):
            state_dir = Path(tempfile.mkdtemp(prefix="streamhouse-state-"))
            log.warning(
                "no state_dir configured; persistent stores of task %s live in %s", self.id, state_dir
            )
        cached = sum(1 for b in pt.stores.values() if b.caching_enabled) or 1
        meta = self.meta
        timed = self.config.store_metrics
        for name, builder in pt.stores.items():
            store = builder.build()
            store.init(
                StoreContext(
                    application_id=self.application_id,
                    task_id=self.id,
                    partition=self.partition,
                    state_dir=Path(state_dir or "."),
                    changelog_topic=pt.changelog_topics.get(name),
                    changelog_sink=self.changelog_sink,
                    cache_max_bytes=self.config.cache_max_bytes // cached,
                    join_index_max_bytes=self.config.join_index_max_bytes,
                    metrics=StoreMetrics() if timed else None,
                    changelog_collapse=self.config.changelog_collapse,
                    record_timestamp=lambda: meta.timestamp,
                    request_commit=self._request_commit,
                )
            )
            self.stores[name] = store

    def _init_processors(self) -> None:
        pt = self.topology
        processes = {spec.name: spec.processor.process for spec in pt.processors}
        self._node_names = {id(spec.processor): spec.name for spec in pt.processors}
        contexts = [
            NodeContext(self, spec.name, {c: processes[c] for c in spec.children}, spec.stores)
            for spec in pt.processors
        ]
        for src in pt.sources:
            source = _Source(
                src.name,
                src.key_serde.deserialize,
                src.value_serde.deserialize,
                tuple(processes[c] for c in src.children),
                getattr(src, "timestamp_extractor", None),
            )
            for topic in src.topics:
                self._sources[topic] = source
        # children before parents, so a parent's init may rely on its children being ready
        for spec, ctx in reversed(list(zip(pt.processors, contexts, strict=True))):
            spec.processor.init(ctx)

    def close(self, dirty: bool = False) -> None:
        """Close processors, then stores. ``dirty=True`` (after an aborted transaction or a failed
        commit) first drops what the stores have not flushed yet -- record-cache entries and collapsed
        changelog records -- instead of forwarding/sending it: that work is redone from the committed
        offsets."""
        if self._closed:
            return
        self._closed = True
        RECORD_WARNINGS.report_pending()  # the skipped records counted but not yet in the log
        errors: list[BaseException] = []
        if dirty:
            for store in self.stores.values():
                layer = store
                while layer is not None:
                    discard = getattr(layer, "discard_unflushed", None)
                    if discard is not None:
                        try:
                            discard()
                        except Exception as exc:
                            errors.append(exc)
                    layer = getattr(layer, "wrapped", None)
        for spec in self.topology.processors if self._initialized else ():
            try:
                spec.processor.close()
            except Exception as exc:
                errors.append(exc)
        for store in self.stores.values():
            try:
                store.close()
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    # -- per record -----------------------------------------------------------------------------------
    def process(
        self,
        topic: str,
        partition: int,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers | None = None,
    ) -> None:
        """Deserialize at the source, run the sub-topology; errors go to the configured handlers."""
        source = self._sources.get(topic)
        if source is None:
            raise TopologyError(
                f"task {self.id} does not consume topic {topic!r} (it reads {self.source_topics})"
            )
        self._process_one(source, topic, partition, offset, timestamp, key, value, headers)

    def _process_one(
        self,
        source: Any,
        topic: str,
        partition: int,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers | None,
    ) -> None:
        """The per-record path of ``process``; ``process_batch`` runs the same body inlined (one Python call
        less per record) -- change both together (tests/edge/processor/test_batched_path.py compares them)."""
        meta = self.meta
        meta.topic = topic
        meta.partition = partition
        meta.offset = offset
        meta.timestamp = timestamp
        meta.key_bytes = key
        meta.value_bytes = value
        meta.headers = headers
        self._offsets[topic] = offset
        try:
            k = source.key_de(topic, key)
            v = source.value_de(topic, value)
        except Exception as exc:
            if isinstance(exc, SerdeError):
                exc = exc.with_position(topic=topic, partition=partition, offset=offset)
            self._handle(ErrorKind.DESERIALIZATION, exc, source.name)
            return
        if timestamp < 0 or source.custom_extractor:
            timestamp = self._extract(source, topic, partition, offset, timestamp, k, v, headers)
            if timestamp < 0:
                return
            meta.timestamp = timestamp
        if timestamp > self.stream_time:
            self.stream_time = timestamp
        record = _new(Record)  # Record(k, v, timestamp, headers) without the __init__ frame
        record.key = k
        record.value = v
        record.timestamp = timestamp
        record.headers = headers
        try:
            source.forward(record)
        except _NOT_THE_RECORDS_FAULT:
            raise
        except Exception as exc:
            self._handle(ErrorKind.PROCESSING, exc, self._failing_node(exc))

    def process_batch(
        self,
        messages: Iterable[Any],
        on_error: Callable[[Any], None] | None = None,
    ) -> int:
        """Process many records in order; same semantics as ``process`` + ``punctuate_stream_time`` per
        record, with the per-record lookups hoisted out of the loop and ``_process_one`` inlined.

        ``messages`` holds confluent_kafka ``Message`` objects (as ``Consumer.consume`` returns them) or
        tuples ``(topic, partition, offset, timestamp, key, value, headers)``, all of this task's
        partitions. A ``Message`` carrying an error is passed to ``on_error`` (the runtime's consumer
        error handling) and skipped; without ``on_error`` it raises ``KafkaException``. Returns the
        number of records processed.
        """
        sources = self._sources
        process = self.process
        stream_queue = self._stream_punctuations
        meta = self.meta
        offsets = self._offsets
        handle = self._handle
        n = 0
        last_topic = None
        source = None
        for msg in messages:
            if msg.__class__ is tuple:
                topic, partition, offset, timestamp, key, value, headers = msg
            else:
                err = msg.error()
                if err is not None:
                    if on_error is None:
                        from confluent_kafka import KafkaException

                        raise KafkaException(err)
                    on_error(err)
                    continue
                topic = msg.topic()
                partition = msg.partition()
                offset = msg.offset()
                timestamp = msg.timestamp()[1]
                key = msg.key()
                value = msg.value()
                headers = msg.headers()
            # compared by value: every Message carries its own topic string; reusing the first one keeps
            # its hash cached for the offsets dict below
            if topic != last_topic:
                source = sources.get(topic)
                last_topic = topic
            else:
                topic = last_topic
            n += 1
            if source is None:
                process(topic, partition, offset, timestamp, key, value, headers)  # raises TopologyError
                continue
            # -- the body of _process_one, inlined (one Python call less per record); keep them equal --
            meta.topic = topic
            meta.partition = partition
            meta.offset = offset
            meta.timestamp = timestamp
            meta.key_bytes = key
            meta.value_bytes = value
            meta.headers = headers
            offsets[topic] = offset
            try:
                k = source.key_de(topic, key)
                v = source.value_de(topic, value)
            except Exception as exc:
                if isinstance(exc, SerdeError):
                    exc = exc.with_position(topic=topic, partition=partition, offset=offset)
                handle(ErrorKind.DESERIALIZATION, exc, source.name)
                if stream_queue._schedules:
                    self.punctuate_stream_time()
                continue
            if timestamp < 0 or source.custom_extractor:
                timestamp = self._extract(source, topic, partition, offset, timestamp, k, v, headers)
                if timestamp < 0:
                    if stream_queue._schedules:
                        self.punctuate_stream_time()
                    continue
                meta.timestamp = timestamp
            if timestamp > self.stream_time:
                self.stream_time = timestamp
            record = _new(Record)
            record.key = k
            record.value = v
            record.timestamp = timestamp
            record.headers = headers
            try:
                source.forward(record)
            except _NOT_THE_RECORDS_FAULT:
                raise
            except Exception as exc:
                handle(ErrorKind.PROCESSING, exc, self._failing_node(exc))
            if stream_queue._schedules:
                self.punctuate_stream_time()
        return n

    def _extract(
        self,
        source: _Source,
        topic: str,
        partition: int,
        offset: int,
        timestamp: int,
        key: Any,
        value: Any,
        headers: Headers | None,
    ) -> int:
        """Run the source's timestamp extractor; -1 when the record is to be dropped.

        A negative result drops the record with a warning (counted in ``dropped_records``), as Kafka's
        RecordQueue does; an exception goes to the deserialization handler (fail: ``ProcessingFailed``)."""
        partition_time = self._partition_time.get(topic, -1)
        try:
            ts = source.extractor.extract(
                ConsumedRecord(topic, partition, offset, timestamp, key, value, headers), partition_time
            )
            if ts.__class__ is not int:
                from edge.processor.timestamps import to_epoch_ms

                ts = to_epoch_ms(ts)
        except _NOT_THE_RECORDS_FAULT:
            raise
        except Exception as exc:
            self._handle(ErrorKind.DESERIALIZATION, exc, source.name)  # counts the dropped record
            return -1
        if ts < 0:
            warn_record(
                log,
                "skipping records due to negative extracted timestamps",
                "skipping record due to negative extracted timestamp: topic=%s partition=%d offset=%d "
                "extracted timestamp=%d extractor=%s (task %s)",
                topic,
                partition,
                offset,
                ts,
                type(source.extractor).__name__,
                self.id,
            )
            self.dropped_records += 1
            return -1
        if ts > partition_time:
            self._partition_time[topic] = ts
        return ts

    # -- records through a partition group (tasks with several input partitions) ----------------------
    def stamp(self, msg: Any) -> StampedRecord | None:
        """Deserialize one source record and extract its timestamp, for a partition queue's head (Kafka's
        ``RecordQueue.updateHead``). ``msg``: a confluent_kafka ``Message`` or a tuple as in
        :meth:`process_batch`. None when the record is skipped (error handler said continue, or a negative
        extracted timestamp); its offset then counts as processed."""
        if msg.__class__ is tuple:
            topic, partition, offset, timestamp, key, value, headers = msg
        else:
            topic = msg.topic()
            partition = msg.partition()
            offset = msg.offset()
            timestamp = msg.timestamp()[1]
            key = msg.key()
            value = msg.value()
            headers = msg.headers()
        source = self._sources.get(topic)
        if source is None:
            raise TopologyError(
                f"task {self.id} does not consume topic {topic!r} (it reads {self.source_topics})"
            )
        meta = self.meta
        meta.topic = topic
        meta.partition = partition
        meta.offset = offset
        meta.timestamp = timestamp
        meta.key_bytes = key
        meta.value_bytes = value
        meta.headers = headers
        try:
            k = source.key_de(topic, key)
            v = source.value_de(topic, value)
        except Exception as exc:
            if isinstance(exc, SerdeError):
                exc = exc.with_position(topic=topic, partition=partition, offset=offset)
            self._offsets[topic] = offset
            self._handle(ErrorKind.DESERIALIZATION, exc, source.name)
            return None
        if timestamp < 0 or source.custom_extractor:
            timestamp = self._extract(source, topic, partition, offset, timestamp, k, v, headers)
            if timestamp < 0:
                self._offsets[topic] = offset
                return None
        rec = _new(StampedRecord)  # StampedRecord(...) without the __init__ frame: once per record
        rec.source = source
        rec.topic = topic
        rec.partition = partition
        rec.offset = offset
        rec.timestamp = timestamp
        rec.key = k
        rec.value = v
        rec.headers = headers
        rec.key_bytes = key
        rec.value_bytes = value
        return rec

    def process_stamped(self, rec: StampedRecord) -> None:
        """Process a record :meth:`stamp` prepared (then fire due stream-time punctuators)."""
        meta = self.meta
        topic = rec.topic
        timestamp = rec.timestamp
        meta.topic = topic
        meta.partition = rec.partition
        meta.offset = rec.offset
        meta.timestamp = timestamp
        meta.key_bytes = rec.key_bytes
        meta.value_bytes = rec.value_bytes
        meta.headers = rec.headers
        self._offsets[topic] = rec.offset
        if timestamp > self.stream_time:
            self.stream_time = timestamp
        record = _new(Record)
        record.key = rec.key
        record.value = rec.value
        record.timestamp = timestamp
        record.headers = rec.headers
        try:
            rec.source.forward(record)
        except _NOT_THE_RECORDS_FAULT:
            raise
        except Exception as exc:
            self._handle(ErrorKind.PROCESSING, exc, self._failing_node(exc))
        if self._stream_punctuations._schedules:
            self.punctuate_stream_time()

    def _failing_node(self, exc: BaseException) -> str | None:
        """The innermost processor on the traceback: found after the fact, so the per-record path
        carries no bookkeeping of the current node."""
        names = self._node_names
        node = None
        tb = exc.__traceback__
        while tb is not None:
            owner = tb.tb_frame.f_locals.get("self")
            if owner is not None:
                node = names.get(id(owner), node)
            tb = tb.tb_next
        return node

    def _handle(self, kind: ErrorKind, exc: BaseException, node: str | None) -> None:
        meta = self.meta
        error = ErrorContext(
            kind,
            exc,
            meta.topic,
            meta.partition,
            meta.offset,
            meta.timestamp,
            meta.key_bytes,
            meta.value_bytes,
            meta.headers,
            self.id,
            node,
        )
        handler = self._deser_handler if kind is ErrorKind.DESERIALIZATION else self._proc_handler
        response = handler(error)
        for letter in response.dead_letters:
            self.collector.send(
                letter.topic, letter.key, letter.value, letter.timestamp, letter.headers, None
            )
        if response.action is ErrorAction.FAIL:
            raise ProcessingFailed(error) from exc
        if kind is ErrorKind.DESERIALIZATION:
            # Kafka's RecordDeserializer: a record skipped after a deserialization error (log-and-continue,
            # dead-letter queue) is a dropped record; the handler's log is summarised, the metric exact
            self.dropped_records += 1

    # -- punctuation ----------------------------------------------------------------------------------
    def schedule(
        self, node: NodeContext, interval_ms: int, kind: PunctuationType, punctuator: Punctuator
    ) -> PunctuationSchedule:
        if kind is PunctuationType.STREAM_TIME:
            return self._stream_punctuations.add(PunctuationSchedule(node, interval_ms, punctuator, 0))
        start = self.wall_clock_time + interval_ms
        return self._wall_punctuations.add(PunctuationSchedule(node, interval_ms, punctuator, start))

    # -- stream time without records ------------------------------------------------------------------
    def register_stream_time_listener(self, node: NodeContext, callback: StreamTimeListener) -> _Listener:
        listener = _Listener(node, callback)
        self._stream_time_listeners.append(listener)
        return listener

    def advance_stream_time(self, new_time: int) -> bool:
        """Move stream time forward without a record: call the stream-time listeners, then fire due
        stream-time punctuators. False (nothing done) unless ``new_time`` is past the stream time."""
        if new_time <= self.stream_time:
            return False
        self.stream_time = new_time
        listeners = self._stream_time_listeners
        if listeners:
            meta = self.meta
            for listener in list(listeners):
                if listener.cancelled:
                    listeners.remove(listener)
                    continue
                meta.topic, meta.offset, meta.timestamp, meta.headers = None, -1, new_time, None
                meta.key_bytes = meta.value_bytes = None
                try:
                    listener.callback(new_time)
                except _NOT_THE_RECORDS_FAULT:
                    raise
                except Exception as exc:
                    self._handle(ErrorKind.PROCESSING, exc, listener.node.node_name)
        self.punctuate_stream_time()
        return True

    def maybe_advance_idle_stream_time(self, now_ms: int) -> bool:
        """The ``idle.stream.time.advance.ms`` extension (not Kafka Streams): once the task has processed
        no record for that long of wall-clock time, stream time = stream time at the last record +
        wall-clock time elapsed since. Call it regularly (the poll loop does); it notes the wall-clock
        time of the last record itself. Nothing happens before the first record (no stream time yet)."""
        target = self.idle_stream_time_target(now_ms)
        return target >= 0 and self.advance_stream_time(target)

    def idle_stream_time_target(self, now_ms: int) -> int:
        """The stream time :meth:`maybe_advance_idle_stream_time` would move to now, or -1 (not due);
        lets the runtime open a transaction first."""
        idle = self._idle_advance_ms
        if idle < 0 or self.stream_time < 0:
            return -1
        mark = self._idle_mark
        offsets = self._offsets
        if mark is None or mark[0] != offsets:
            self._idle_mark = (dict(offsets), now_ms, self.stream_time)
            return -1
        elapsed = now_ms - mark[1]
        if elapsed < idle or mark[2] + elapsed <= self.stream_time:
            return -1
        return mark[2] + elapsed

    @property
    def idle_stream_time_advance(self) -> bool:
        return self._idle_advance_ms >= 0

    def punctuate_stream_time(self) -> bool:
        if not self._stream_punctuations._schedules or self.stream_time < 0:
            return False
        return self._punctuate(self._stream_punctuations, self.stream_time)

    def punctuate_wall_clock(self, now_ms: int | None = None) -> bool:
        self.wall_clock_time = self._clock() if now_ms is None else now_ms
        if not self._wall_punctuations:
            return False
        return self._punctuate(self._wall_punctuations, self.wall_clock_time)

    def _punctuate(self, queue: PunctuationQueue, now: int) -> bool:
        fired = queue.due(now)
        meta = self.meta
        for schedule in fired:
            meta.topic, meta.offset, meta.timestamp, meta.headers = None, -1, now, None
            meta.key_bytes = meta.value_bytes = None
            try:
                schedule.punctuator(now)
            except _NOT_THE_RECORDS_FAULT:
                raise
            except Exception as exc:
                self._handle(ErrorKind.PROCESSING, exc, schedule.node.node_name)
        return bool(fired)

    # -- commit ---------------------------------------------------------------------------------------
    def _request_commit(self) -> None:
        self.commit_requested = True

    def innermost_stores(self) -> dict[str, Any]:
        """Each store's bottom layer (the one holding the bytes: RocksDB, segments, in-memory)."""
        out = {}
        for name, store in self.stores.items():
            layer = store
            while getattr(layer, "wrapped", None) is not None:
                layer = layer.wrapped
            out[name] = layer
        return out

    def defer_store_writes(self) -> None:
        """From now on the persistent stores write to disk only in :meth:`persist_stores` (the runtime
        calls it after the commit), so local state is never ahead of the committed input offsets."""
        for layer in self.innermost_stores().values():
            if hasattr(layer, "defer_writes"):
                layer.defer_writes = True

    def stores_hold_committed_state_only(self) -> bool:
        """Whether every persistent store defers its writes to :meth:`persist_stores` (after the commit).

        Then the files on disk never hold uncommitted writes, so exactly-once may keep a checkpoint while
        it processes, and a task closed without a commit resumes from it instead of being wiped and
        restored in full. A custom persistent store that writes as it processes makes this False."""
        for layer in self.innermost_stores().values():
            if getattr(layer, "persistent", False) and not getattr(layer, "defer_writes", False):
                return False
        return True

    def persist_stores(self) -> None:
        """Write the stores' buffered (now committed) writes to disk; see :meth:`defer_store_writes`."""
        for layer in self.innermost_stores().values():
            persist = getattr(layer, "persist", None)
            if persist is not None:
                persist()

    def commit_prepare(self) -> dict[tuple[str, int], int]:
        """Flush every store (cache -> downstream + changelog -> store); return offsets to commit.

        The returned offsets are the *next* offsets to read (last processed + 1), per (topic, partition).
        Cache flushes may forward records downstream and into the collector, so flush the producer after.
        """
        for store in self.stores.values():
            store.flush()
        self.commit_requested = False
        # the per-record warnings counted since their last summary line, once their interval is over (a
        # flood that stopped is reported now, not with the next skipped record, whenever that comes)
        RECORD_WARNINGS.report_due()
        return {(topic, self.partition): off + 1 for topic, off in self._offsets.items()}

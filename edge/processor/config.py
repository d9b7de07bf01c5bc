"""Settings a task needs, shared by the Kafka runtime and the TopologyTestDriver."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edge.processor.handlers import ExceptionHandler, LogAndFailHandler
from edge.serde import Serde, Serdes


@dataclass(slots=True)
class TaskConfig:
    """What a task needs to run: the runtime builds one from its ``edge.runtime.StreamsConfig``, the
    ``TopologyTestDriver`` takes one directly (under Kafka's name, ``StreamsConfig``, below).

    ``application_id`` prefixes internal topics (repartition, changelog) and the state directory.

    Default serdes are used wherever the topology did not name one (Kafka's ``default.key.serde``).
    ``cache_max_bytes`` is the record-cache budget of one task, split evenly over its cached stores.
    """

    application_id: str
    default_key_serde: Serde = field(default_factory=Serdes.bytes)
    default_value_serde: Serde = field(default_factory=Serdes.bytes)
    deserialization_exception_handler: ExceptionHandler = field(default_factory=LogAndFailHandler)
    processing_exception_handler: ExceptionHandler = field(default_factory=LogAndFailHandler)
    cache_max_bytes: int = 10 * 1024 * 1024
    #: NOT Kafka Streams: each stream-stream join window store keeps its most recent records in memory
    #: too, up to this many bytes, and answers the other side's look-ups from there (0: off; see
    #: :mod:`edge.state.join_window`)
    join_index_max_bytes: int = 16 * 1024 * 1024
    state_dir: Path | None = None
    commit_interval_ms: int = 30_000
    #: time every state-store operation into a ``StoreMetrics`` per store (~0.2 us per operation, two
    #: ``perf_counter_ns`` calls); off by default so the per-record path carries no metrics at all.
    store_metrics: bool = False
    #: send a store's changelog records collapsed per key at commit (``flush``) rather than one per
    #: write; matters for stores without the record cache (with it, writes are collapsed already).
    #: Off by default: with it the changelog holds fewer records than writes (restores count fewer).
    changelog_collapse: bool = False
    #: extractor for sources without their own (``Consumed.with_timestamp_extractor``); None = the record
    #: timestamp, failing on negative ones (Kafka's ``FailOnInvalidTimestamp``). See
    #: :mod:`edge.processor.timestamps` (instances, classes, names such as ``"log_and_skip"`` or callables).
    default_timestamp_extractor: Any = None
    #: Kafka's ``max.task.idle.ms``: how long a task with several input partitions waits for an empty
    #: partition that is caught up before processing the others (0: not at all, but still wait for data
    #: known to be on its way; -1: never wait). Applies to the runtime and the TopologyTestDriver.
    max_task_idle_ms: int = 0
    #: NOT Kafka Streams (an opt-in extension): after this much wall-clock time without a record, a task's
    #: stream time advances with the wall clock (stream-time punctuators and stream-time listeners fire),
    #: so windows on a quiet partition close. -1 (default): stream time moves with records only.
    idle_stream_time_advance_ms: int = -1
    #: Kafka's internal ``emit.interval.ms.kstreams.outer.join.spurious.results.fix``: at most one scan of a
    #: left/outer stream-stream join's waiting records per this much wall-clock time (a cost throttle; it
    #: delays non-joined results, never changes them). None = Kafka's defaults: 1000 ms in the runtime, 0
    #: (every record) in the TopologyTestDriver, so tests see results as soon as stream time allows.
    emit_interval_ms_kstreams_outer_join_spurious_results_fix: int | None = None
    #: Kafka's internal ``emit.interval.ms.kstreams.windowed.aggregation``: at most one check for closed
    #: windows of an emit-on-window-close aggregation per this much wall-clock time (a cost throttle; it
    #: delays final results, never changes them). None = Kafka's defaults: 1000 ms in the runtime, 0 (every
    #: record) in the TopologyTestDriver.
    emit_interval_ms_kstreams_windowed_aggregation: int | None = None
    #: Kafka's ``default.production.exception.handler`` for records a sink cannot serialize: ``fail``
    #: (the task fails) or ``continue`` (the record is dropped, logged and counted as dropped)
    production_exception_handler: str = "fail"


#: Kafka's name, under which the ``TopologyTestDriver`` takes it (``edge.StreamsConfig``,
#: ``edge.processor.StreamsConfig``); the application's own settings are ``edge.runtime.StreamsConfig``.
StreamsConfig = TaskConfig

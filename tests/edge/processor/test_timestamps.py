"""Timestamp extractors, stream time, record order and stream-time listeners in the TopologyTestDriver."""

from __future__ import annotations

import time

import pytest

from edge.dsl import Consumed, StreamsBuilder
from edge.processor import LogAndContinueHandler, ProcessingFailed, StreamsConfig
from edge.processor.api import Processor, PunctuationType
from edge.processor.record import Record
from edge.processor.timestamps import (
    FailOnInvalidTimestamp,
    InvalidTimestampError,
    LogAndSkipOnInvalidTimestamp,
    PayloadFieldTimestampExtractor,
    UsePartitionTimeOnInvalidTimestamp,
    WallclockTimestampExtractor,
    as_extractor,
    to_epoch_ms,
)
from edge.runtime.config import StreamsConfig as RuntimeConfig
from edge.runtime.config import StreamsConfigError
from edge.serde import Serdes
from edge.testing import TopologyTestDriver
from edge.topology import Topology

S, J = Serdes.string(), Serdes.json()


def _passthrough(consumed: Consumed):
    b = StreamsBuilder()
    b.stream("in", consumed).to("out")
    return b.build()


def _driver(topology, **config):
    return TopologyTestDriver(
        topology, StreamsConfig("ts", default_key_serde=S, default_value_serde=J, **config)
    )


def _out(d):
    return [(r.value, r.timestamp) for r in d.create_output_topic("out", S, J).read_records_to_list()]


# -- extractors ---------------------------------------------------------------------------------------
def test_default_extractor_uses_the_record_timestamp_and_fails_on_a_negative_one():
    with _driver(_passthrough(Consumed.with_(S, J))) as d:
        tin = d.create_input_topic("in", S, J)
        tin.pipe_input("k", 1, timestamp=5)
        with pytest.raises(ProcessingFailed) as info:
            tin.pipe_input("k", 2, timestamp=-1)
        assert isinstance(info.value.__cause__, InvalidTimestampError)
        assert (info.value.topic, info.value.offset) == ("in", 1)
        assert _out(d) == [(1, 5)]


def test_invalid_timestamp_under_the_continue_handler_skips_the_record():
    handler = LogAndContinueHandler()
    with _driver(_passthrough(Consumed.with_(S, J)), deserialization_exception_handler=handler) as d:
        tin = d.create_input_topic("in", S, J)
        tin.pipe_input("k", 1, timestamp=-1)
        tin.pipe_input("k", 2, timestamp=7)
        assert _out(d) == [(2, 7)]
        assert d._tasks[0].dropped_records == 1


def test_log_and_skip_drops_negative_timestamps_and_counts_them_even_with_the_fail_handler():
    c = Consumed.with_(S, J).with_timestamp_extractor(LogAndSkipOnInvalidTimestamp())
    with _driver(_passthrough(c)) as d:
        tin = d.create_input_topic("in", S, J)
        tin.pipe_input("k", 1, timestamp=-5)
        tin.pipe_input("k", 2, timestamp=3)
        assert _out(d) == [(2, 3)]
        task = d._tasks[0]
        assert task.dropped_records == 1 and task.stream_time == 3


def test_use_partition_time_replaces_a_negative_timestamp_and_fails_without_one():
    c = Consumed.with_(S, J).with_timestamp_extractor(UsePartitionTimeOnInvalidTimestamp)
    with _driver(_passthrough(c)) as d:
        tin = d.create_input_topic("in", S, J)
        with pytest.raises(ProcessingFailed, match="no valid timestamp yet"):
            tin.pipe_input("k", 0, timestamp=-1)
        tin.pipe_input("k", 1, timestamp=10)
        tin.pipe_input("k", 2, timestamp=4)
        tin.pipe_input("k", 3, timestamp=-1)
        assert _out(d) == [(1, 10), (2, 4), (3, 10)]


def test_payload_field_extractor_reads_ms_and_iso_strings_and_falls_back():
    c = Consumed.with_timestamp_extractor(PayloadFieldTimestampExtractor("ts"))
    with _driver(_passthrough(c)) as d:
        tin = d.create_input_topic("in", S, J)
        tin.pipe_input("k", {"ts": 1234}, timestamp=1)
        tin.pipe_input("k", {"ts": "2026-01-02T03:04:05.678Z"}, timestamp=1)
        tin.pipe_input("k", {"ts": "2026-01-02T03:04:05"}, timestamp=1)  # no zone: UTC
        with pytest.raises(ProcessingFailed, match="no valid timestamp in field 'ts'"):
            tin.pipe_input("k", {"other": 1}, timestamp=1)
        got = [ts for _, ts in _out(d)]
    assert got == [1234, 1767323045678, 1767323045000]
    fallback = PayloadFieldTimestampExtractor("meta.at", fallback=FailOnInvalidTimestamp())
    with _driver(_passthrough(Consumed.with_timestamp_extractor(fallback))) as d:
        tin = d.create_input_topic("in", S, J)
        tin.pipe_input("k", {"meta": {"at": 50}}, timestamp=9)
        tin.pipe_input("k", {"meta": {}}, timestamp=9)
        assert [ts for _, ts in _out(d)] == [50, 9]


def test_callable_extractor_sees_deserialized_record_and_partition_time():
    seen = []

    def extractor(record, partition_time):
        seen.append((record.topic, record.offset, record.key, record.value, record.timestamp, partition_time))
        return record.value * 10

    with _driver(_passthrough(Consumed.with_(S, J, extractor))) as d:
        tin = d.create_input_topic("in", S, J)
        tin.pipe_input("a", 3, timestamp=1)
        tin.pipe_input("b", 2, timestamp=2)
        assert _out(d) == [(3, 30), (2, 20)]
    assert seen == [("in", 0, "a", 3, 1, -1), ("in", 1, "b", 2, 2, 30)]


def test_config_default_extractor_applies_to_sources_without_their_own():
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, J)).to("out")
    b.stream("in2", Consumed.with_(S, J).with_timestamp_extractor(lambda r, pt: 7)).to("out")
    with _driver(b.build(), default_timestamp_extractor="field:ts") as d:
        d.create_input_topic("in", S, J).pipe_input("k", {"ts": 99}, timestamp=1)
        d.create_input_topic("in2", S, J).pipe_input("k", {"ts": 99}, timestamp=1)
        assert [ts for _, ts in _out(d)] == [99, 7]


def test_table_source_uses_its_extractor():
    b = StreamsBuilder()
    b.table("in", Consumed.with_(S, J).with_timestamp_extractor(PayloadFieldTimestampExtractor("ts")), "t")
    with _driver(b.build()) as d:
        d.create_input_topic("in", S, J).pipe_input("k", {"ts": 42}, timestamp=1)
        assert d.get_state_store("t").get("k").timestamp == 42


def test_wallclock_extractor_and_names():
    before = time.time_ns() // 1_000_000
    with _driver(_passthrough(Consumed.with_timestamp_extractor(WallclockTimestampExtractor()))) as d:
        d.create_input_topic("in", S, J).pipe_input("k", 1, timestamp=1)
        [(_, ts)] = _out(d)
    assert before <= ts <= time.time_ns() // 1_000_000
    assert type(as_extractor("log_and_skip")) is LogAndSkipOnInvalidTimestamp
    assert type(as_extractor("org.apache.kafka.streams.processor.UsePartitionTimeOnInvalidTimestamp")) is (
        UsePartitionTimeOnInvalidTimestamp
    )
    assert as_extractor("field:at").field == "at"
    with pytest.raises(ValueError, match="unknown timestamp extractor 'nope'"):
        as_extractor("nope")
    assert to_epoch_ms("1970-01-01T00:00:01+00:00") == 1000
    base = {"application.id": "a", "bootstrap.servers": "localhost:9092"}
    cfg = RuntimeConfig.from_mapping({**base, "default.timestamp.extractor": "log_and_skip"})
    assert type(cfg.default_timestamp_extractor) is LogAndSkipOnInvalidTimestamp
    with pytest.raises(StreamsConfigError, match=r"default\.timestamp\.extractor: unknown"):
        RuntimeConfig.from_mapping({**base, "default.timestamp.extractor": "nope"})
    for key in ("max.task.idle.ms", "idle.stream.time.advance.ms"):
        assert getattr(RuntimeConfig.from_mapping({**base, key: "-1"}), key.replace(".", "_")) == -1
        with pytest.raises(StreamsConfigError, match=f"{key} must be an integer >= -1"):
            RuntimeConfig.from_mapping({**base, key: "-2"})


# -- record order in the driver ------------------------------------------------------------------------
class _Fanout(Processor):
    """Forwards one record per timestamp in the value (out of order on purpose)."""

    def process(self, record: Record) -> None:
        for ts in record.value:
            self.context.forward(Record(record.key, ts, ts))


def test_driver_processes_records_one_input_caused_in_timestamp_order():
    """One piped record sends 30 to one repartition topic, then 10 and 20 to another; a merge of the two
    reads them lowest timestamp first across the topics (per topic, offset order)."""
    b = StreamsBuilder()
    seen = []
    fanned = b.stream("in", Consumed.with_(S, J)).process(_Fanout)
    high = fanned.filter(lambda k, v: v >= 25).repartition()
    low = fanned.filter(lambda k, v: v < 25).repartition()
    high.merge(low).peek(lambda k, v: seen.append(v)).to("out")
    with _driver(b.build()) as d:
        d.create_input_topic("in", S, J).pipe_input("k", [30, 20, 10], timestamp=1)
        assert seen == [20, 10, 30]  # "low" holds 20 then 10: offset order within a topic
        assert [ts for _, ts in _out(d)] == [20, 10, 30]
        d.create_input_topic("in", S, J).pipe_input("k", [40, 5], timestamp=2)
        assert seen[3:] == [5, 40]


def _merge_topology(seen):
    b = StreamsBuilder()
    left = b.stream("left", Consumed.with_(S, J))
    left.merge(b.stream("right", Consumed.with_(S, J))).peek(lambda k, v: seen.append(v)).to("out")
    return b.build()


def test_driver_max_task_idle_ms_holds_records_until_every_input_has_one_or_time_passes():
    seen: list = []
    with _driver(_merge_topology(seen), max_task_idle_ms=100) as d:
        left, right = d.create_input_topic("left", S, J), d.create_input_topic("right", S, J)
        left.pipe_input("k", "L5", timestamp=5)
        left.pipe_input("k", "L9", timestamp=9)
        assert seen == []  # "right" is empty: wait up to max.task.idle.ms
        right.pipe_input("k", "R3", timestamp=3)
        assert seen == ["R3"]  # lowest timestamp first; then "right" is empty again: wait anew
        d.advance_wall_clock_time(99)
        assert seen == ["R3"]
        d.advance_wall_clock_time(1)  # the idle deadline passed: go on without "right"
        assert seen == ["R3", "L5", "L9"]
        right.pipe_input("k", "R1", timestamp=1)
        left.pipe_input("k", "L10", timestamp=10)
        assert seen[3:] == ["R1"]


def test_driver_default_idle_time_processes_at_once():
    seen: list = []
    with _driver(_merge_topology(seen)) as d:
        d.create_input_topic("left", S, J).pipe_input("k", "L5", timestamp=5)
        d.create_input_topic("right", S, J).pipe_input("k", "R3", timestamp=3)
        assert seen == ["L5", "R3"]


# -- stream-time listeners and the idle stream-time advance -------------------------------------------
class _WindowCloser(Processor):
    """Emits "closed:<end>" for each 10 ms window once stream time passes its end (records or not)."""

    def init(self, context) -> None:  # type: ignore[no-untyped-def]
        super().init(context)
        self.open_end = -1
        self.calls: list[int] = []
        self.handle = context.register_stream_time_listener(self._on_time)
        context.schedule(10, PunctuationType.STREAM_TIME, lambda ts: self.calls.append(ts))

    def _on_time(self, stream_time: int) -> None:
        self.calls.append(-stream_time)
        self._close(stream_time)

    def _close(self, stream_time: int) -> None:
        if self.open_end >= 0 and stream_time >= self.open_end:
            self.context.forward(Record("w", f"closed:{self.open_end}", stream_time))
            self.open_end = -1

    def process(self, record: Record) -> None:
        self._close(self.context.stream_time)
        if self.open_end < 0:
            self.open_end = (record.timestamp // 10 + 1) * 10


def _closer_topology(holder):
    t = Topology()
    t.add_source("src", "in", key_serde=S, value_serde=J)

    def supplier():
        holder.append(_WindowCloser())
        return holder[-1]

    t.add_processor("closer", supplier, "src")
    t.add_sink("sink", "out", "closer", key_serde=S, value_serde=J)
    return t


def test_stream_time_listener_fires_only_when_stream_time_advances_without_records():
    holder: list = []
    with _driver(_closer_topology(holder), idle_stream_time_advance_ms=1000) as d:
        tin = d.create_input_topic("in", S, J)
        tin.pipe_input("k", 1, timestamp=3)
        proc = holder[0]
        assert proc.calls == [3]  # the stream-time punctuator, no listener call
        d.advance_wall_clock_time(999)
        assert _out(d) == [] and d._tasks[0].stream_time == 3
        d.advance_wall_clock_time(1)  # quiet for 1000 ms: stream time = 3 + 1000
        assert d._tasks[0].stream_time == 1003
        assert proc.calls == [3, -1003, 1003]  # listener first, then the due punctuator
        assert _out(d) == [("closed:10", 1003)]
        d.advance_wall_clock_time(500)  # still quiet: stream time keeps following the wall clock
        assert d._tasks[0].stream_time == 1503
        tin.pipe_input("k", 2, timestamp=1600)  # a record: stream time from records again
        d.advance_wall_clock_time(999)
        assert d._tasks[0].stream_time == 1600
        proc.handle.cancel()
        d.advance_wall_clock_time(1)
        assert d._tasks[0].stream_time == 2600 and -2600 not in proc.calls


def test_stream_time_does_not_move_without_records_by_default():
    holder: list = []
    with _driver(_closer_topology(holder)) as d:
        d.create_input_topic("in", S, J).pipe_input("k", 1, timestamp=3)
        d.advance_wall_clock_time(10_000_000)
        assert d._tasks[0].stream_time == 3 and _out(d) == []
        assert holder[0].calls == [3]


def test_a_failing_stream_time_listener_goes_to_the_processing_handler():
    class Bad(Processor):
        def init(self, context) -> None:  # type: ignore[no-untyped-def]
            super().init(context)
            context.register_stream_time_listener(lambda ts: 1 // 0)

        def process(self, record: Record) -> None:
            pass

    t = Topology()
    t.add_source("src", "in", key_serde=S, value_serde=J)
    t.add_processor("bad", Bad, "src")
    with _driver(t, idle_stream_time_advance_ms=0) as d:
        d.create_input_topic("in", S, J).pipe_input("k", 1, timestamp=3)
        with pytest.raises(ProcessingFailed, match="node='bad'"):
            d.advance_wall_clock_time(1)

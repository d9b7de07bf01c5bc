"""Windowed aggregations (time, sliding, session windows), ported from Kafka Streams' tests:
KStreamWindowAggregateTest, KStreamSlidingWindowAggregateTest and
KStreamSessionWindowAggregateProcessorTest. Expected keys, windows, values, timestamps and order are
Kafka's; where Kafka's test compares sets (sliding windows) so do we.
"""

from __future__ import annotations

import logging
import struct
from datetime import timedelta

import pytest

from edge.dsl import (
    Consumed,
    EmitStrategy,
    Grouped,
    Materialized,
    Named,
    Produced,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    TimeWindows,
)
from edge.errors import TopologyError
from edge.processor import StreamsConfig
from edge.processor.api import Processor
from edge.processor.record import Change
from edge.serde import Serdes, ValueAndTimestamp
from edge.serde.windowed import SessionWindow, SessionWindowedSerde, TimeWindow, TimeWindowedSerde, Windowed
from edge.testing import TopologyTestDriver
from edge.topology.graph import ProcessorGraphNode

S, L = Serdes.string(), Serdes.long()
STR = Consumed.with_(S, S)
UPDATE, CLOSE = EmitStrategy.on_window_update(), EmitStrategy.on_window_close()
STRATEGIES = [(UPDATE, True), (UPDATE, False), (CLOSE, True), (CLOSE, False)]
GAP_MS = 5 * 60 * 1000


def config(app="windowed", **kw):
    return StreamsConfig(app, default_key_serde=S, default_value_serde=S, **kw)


def string_init():
    return "0"


def to_string_adder(_key, value, agg):
    return f"{agg}+{value}"


def plus(_key, value, agg):
    return f"{agg}+{value}"


def materialized(name, caching, value_serde=S):
    m = Materialized.as_(name).with_value_serde(value_serde)
    return m if caching else m.with_caching_disabled()


class Capture(Processor):
    """Kafka's MockApiProcessor: records (key, Change or value, timestamp) of everything it gets."""

    def __init__(self, sink):
        self.sink = sink

    def process(self, record):
        self.sink.append((record.key, record.value, record.timestamp))


def capture_stream(stream):
    """The table's stream (new values only), like ``table.toStream().process(supplier)``."""
    out = []
    stream.process(lambda: Capture(out))
    return out


def capture_changes(table):
    """The table's changes (new and old values) as a child of the aggregation processor."""
    out = []
    builder = table._builder
    builder.add_node(
        ProcessorGraphNode(builder.names.processor("CAPTURE-"), [table._node], lambda: Capture(out))
    )
    return out


def W(key, start, end):
    return Windowed(key, TimeWindow(start, end))


def SW(key, start, end):
    return Windowed(key, SessionWindow(start, end))


def dropped(driver):
    return sum(t.dropped_records for t in driver._tasks)


# -- tumbling / hopping windows ----------------------------------------------------------------------------


@pytest.mark.parametrize(("strategy", "caching"), STRATEGIES)
def test_agg_basic_hopping(strategy, caching):
    """KStreamWindowAggregateTest.testAggBasic: size 10, advance 5, grace 100."""
    b = StreamsBuilder()
    table = (
        b.stream("topic1", STR)
        .group_by_key(Grouped.with_(S, S))
        .windowed_by(TimeWindows.of_size_and_grace(10, 100).advance_by(5))
        .emit_strategy(strategy)
        .aggregate(string_init, to_string_adder, materialized=materialized("topic1-Canonized", caching))
    )
    out = capture_stream(table.to_stream())
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("topic1", S, S)
        for k, v, ts in [
            ("A", "1", 0), ("B", "2", 1), ("C", "3", 2), ("D", "4", 3), ("A", "1", 4),
            ("A", "1", 5), ("B", "2", 6), ("D", "4", 7), ("B", "2", 8), ("C", "3", 9),
            ("A", "1", 10), ("B", "2", 11), ("D", "4", 12), ("B", "2", 13), ("C", "3", 14),
            ("B", "1", 3), ("B", "2", 2), ("B", "3", 9),
        ]:  # fmt: skip
            tin.pipe_input(k, v, ts)
    if strategy.on_close:
        assert out == []  # grace is 100: no window closes
        return
    assert out == [
        (W("A", 0, 10), "0+1", 0),
        (W("B", 0, 10), "0+2", 1),
        (W("C", 0, 10), "0+3", 2),
        (W("D", 0, 10), "0+4", 3),
        (W("A", 0, 10), "0+1+1", 4),
        (W("A", 0, 10), "0+1+1+1", 5),
        (W("A", 5, 15), "0+1", 5),
        (W("B", 0, 10), "0+2+2", 6),
        (W("B", 5, 15), "0+2", 6),
        (W("D", 0, 10), "0+4+4", 7),
        (W("D", 5, 15), "0+4", 7),
        (W("B", 0, 10), "0+2+2+2", 8),
        (W("B", 5, 15), "0+2+2", 8),
        (W("C", 0, 10), "0+3+3", 9),
        (W("C", 5, 15), "0+3", 9),
        (W("A", 5, 15), "0+1+1", 10),
        (W("A", 10, 20), "0+1", 10),
        (W("B", 5, 15), "0+2+2+2", 11),
        (W("B", 10, 20), "0+2", 11),
        (W("D", 5, 15), "0+4+4", 12),
        (W("D", 10, 20), "0+4", 12),
        (W("B", 5, 15), "0+2+2+2+2", 13),
        (W("B", 10, 20), "0+2+2", 13),
        (W("C", 5, 15), "0+3+3", 14),
        (W("C", 10, 20), "0+3", 14),
        (W("B", 0, 10), "0+2+2+2+1", 8),
        (W("B", 0, 10), "0+2+2+2+1+2", 8),
        (W("B", 0, 10), "0+2+2+2+1+2+3", 9),
        (W("B", 5, 15), "0+2+2+2+2+3", 13),
    ]


@pytest.mark.parametrize("caching", [True, False])
def test_emit_final_one_result_per_window_in_start_then_key_order(caching):
    """KStreamWindowAggregateTest.testJoin (emit final, first table): grace 5, size 10, advance 5."""
    b = StreamsBuilder()
    table = (
        b.stream("topic1", STR)
        .group_by_key(Grouped.with_(S, S))
        .windowed_by(TimeWindows.of_size_and_grace(10, 5).advance_by(5))
        .emit_strategy(CLOSE)
        .aggregate(string_init, to_string_adder, materialized=materialized("topic1-Canonized", caching))
    )
    out = capture_stream(table.to_stream())
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("topic1", S, S)
        for k, ts in [("A", 0), ("B", 1), ("C", 2), ("D", 3), ("A", 9), ("A", 15)]:
            tin.pipe_input(k, {"A": "1", "B": "2", "C": "3", "D": "4"}[k], ts)
        assert out == [
            (W("A", 0, 10), "0+1+1", 9),
            (W("B", 0, 10), "0+2", 1),
            (W("C", 0, 10), "0+3", 2),
            (W("D", 0, 10), "0+4", 3),
        ]
        out.clear()
        for k, ts in [("A", 10), ("B", 11), ("D", 12), ("B", 13), ("C", 14), ("A", 20)]:
            tin.pipe_input(k, {"A": "1", "B": "2", "C": "3", "D": "4"}[k], ts)
        assert out == [
            (W("A", 5, 15), "0+1+1", 10),
            (W("B", 5, 15), "0+2+2", 13),
            (W("C", 5, 15), "0+3", 14),
            (W("D", 5, 15), "0+4", 12),
        ]


@pytest.mark.parametrize("old_values", [False, True], ids=["old-values-off", "old-values-asked"])
@pytest.mark.parametrize("strategy", [UPDATE, CLOSE])
def test_emit_with_interval_0(strategy, old_values):
    """KStreamWindowAggregateTest.shouldEmitWithInterval0 (processor-level test run through the driver):
    old values are null unless a downstream operator asked for them (Kafka's ``sendOldValues``)."""
    b = StreamsBuilder()
    table = (
        b.stream("t", STR)
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10, 5).advance_by(5))
        .emit_strategy(strategy)
        .aggregate(string_init, to_string_adder, materialized=materialized("store", False))
    )
    if old_values:
        assert table.enable_sending_old_values(False)
    out = capture_changes(table)
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("t", S, S)
        for k, v, ts in [("A", "1", 0), ("A", "1", 5), ("B", "2", 10), ("C", "3", 15), ("D", "4", 20)]:
            tin.pipe_input(k, v, ts)
    if strategy.on_close:
        assert out == [
            (W("A", 0, 10), Change("0+1+1", None), 5),
            (W("A", 5, 15), Change("0+1", None), 5),
            (W("B", 5, 15), Change("0+2", None), 10),
        ]
    else:
        assert [(k, c.new, ts) for k, c, ts in out] == [
            (W("A", 0, 10), "0+1", 0),
            (W("A", 0, 10), "0+1+1", 5),
            (W("A", 5, 15), "0+1", 5),
            (W("B", 5, 15), "0+2", 10),
            (W("B", 10, 20), "0+2", 10),
            (W("C", 10, 20), "0+3", 15),
            (W("C", 15, 25), "0+3", 15),
            (W("D", 15, 25), "0+4", 20),
            (W("D", 20, 30), "0+4", 20),
        ]
        # with sendOldValues Kafka forwards the initializer's value as the old value of a new window
        olds = [c.old for _, c, _ in out]
        assert olds[:2] == (["0", "0+1"] if old_values else [None, None])
        assert old_values or set(olds) == {None}


def test_emit_final_not_before_close_time_progresses_enough():
    """KStreamWindowAggregateTest.shouldNotEmitFinalIfNotProgressEnough."""
    b = StreamsBuilder()
    table = (
        b.stream("t", STR)
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10, 5).advance_by(5))
        .emit_strategy(CLOSE)
        .aggregate(string_init, to_string_adder)
    )
    out = capture_changes(table)
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("t", S, S)
        for k, v, ts in [("A", "1", 0), ("B", "2", 5), ("C", "3", 15)]:
            tin.pipe_input(k, v, ts)
        assert out == [(W("A", 0, 10), Change("0+1", None), 0), (W("B", 0, 10), Change("0+2", None), 5)]
        out.clear()
        tin.pipe_input("D", "4", 15)  # observed time does not progress
        tin.pipe_input("E", "5", 19)  # progresses, but not enough to close another window
        assert out == []


@pytest.mark.parametrize(("strategy", "caching"), STRATEGIES)
def test_late_records_dropped_logged_and_counted(strategy, caching, caplog):
    """KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindow: size 10, advance 5,
    grace 90, retention 100; late means window end <= stream time - grace."""
    b = StreamsBuilder()
    (
        b.stream("topic", STR)
        .group_by_key(Grouped.with_(S, S))
        .windowed_by(TimeWindows.of_size_and_grace(10, 90).advance_by(5))
        .emit_strategy(strategy)
        .aggregate(
            lambda: "",
            plus,
            materialized=materialized("topic1-Canonicalized", caching)
            .with_logging_disabled()
            .with_retention(100),
        )
        .to_stream()
        .map(lambda k, v: (str(k), v))
        .to("output", Produced.with_(S, S))
    )
    caplog.set_level(logging.WARNING, logger="edge.processor.ops.windowed")
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("topic", S, S)
        for v, ts in [("100", 100), ("0", 0), ("1", 1), ("2", 2), ("3", 3), ("4", 4), ("5", 5), ("6", 6)]:
            tin.pipe_input("k", v, ts)
        tin.pipe_input("k", "105", 105)
        tin.pipe_input("k", "106", 106)
        assert dropped(d) == 7
        records = [
            (r.key, r.value, r.timestamp)
            for r in d.create_output_topic("output", S, S).read_records_to_list()
        ]
    # Kafka logs each of the 7; we log the first as Kafka does, then the others in one summary line
    # (when the task closes here; at most one per 10 s in a flood), see edge.processor.record_warnings
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2, messages
    kafka = "Skipping record for expired window. topic=[topic] partition=[0] offset=[{}] timestamp=[{}] " + (
        "window=[0,10) expiration=[10] streamTime=[100] key=[k]"
    )
    assert messages[0] == kafka.format(1, 0)
    assert messages[1].startswith("Skipping record for expired window: 6 more records in the last ")
    assert messages[1].endswith("; the latest: " + kafka.format(7, 6))
    if strategy.on_close:
        assert records == [("[k@5/15]", "+5+6", 6)]  # window close time is 15 when the record at 105 arrives
    else:
        assert records == [
            ("[k@95/105]", "+100", 100),
            ("[k@100/110]", "+100", 100),
            ("[k@5/15]", "+5", 5),
            ("[k@5/15]", "+5+6", 6),
            ("[k@100/110]", "+100+105", 105),
            ("[k@105/115]", "+105", 105),
            ("[k@100/110]", "+100+105+106", 106),
            ("[k@105/115]", "+105+106", 106),
        ]


@pytest.mark.parametrize(("strategy", "caching"), STRATEGIES)
def test_late_records_at_the_grace_boundary(strategy, caching, caplog):
    """KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindowByGrace: tumbling 10, grace 90."""
    b = StreamsBuilder()
    (
        b.stream("topic", STR)
        .group_by_key(Grouped.with_(S, S))
        .windowed_by(TimeWindows.of_size_and_grace(10, 90).advance_by(10))
        .emit_strategy(strategy)
        .aggregate(
            lambda: "",
            plus,
            materialized=materialized("topic1-Canonicalized", caching).with_logging_disabled(),
        )
        .to_stream()
        .map(lambda k, v: (str(k), v))
        .to("output", Produced.with_(S, S))
    )
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("topic", S, S)
        for v, ts in [
            ("100", 200),
            ("0", 100),
            ("1", 101),
            ("2", 102),
            ("3", 103),
            ("4", 104),
            ("5", 105),
            ("6", 6),
        ]:
            tin.pipe_input("k", v, ts)
        assert dropped(d) == 7
        messages = [r.getMessage() for r in caplog.records]
        assert any(
            m.startswith(
                "Skipping record for expired window. topic=[topic] partition=[0] offset=[1] timestamp=[100] "
                "window=[100,110) expiration=[110] streamTime=[200]"
            )
            for m in messages
        )
        records = [
            (r.key, r.value, r.timestamp)
            for r in d.create_output_topic("output", S, S).read_records_to_list()
        ]
    assert records == ([] if strategy.on_close else [("[k@200/210]", "+100", 200)])
    # the other six in one summary line when the task closes (Kafka logs each), the latest as the example
    summary = caplog.records[-1].getMessage()
    assert summary.startswith("Skipping record for expired window: 6 more records in the last ")
    assert "offset=[7] timestamp=[6] window=[0,10) expiration=[110] streamTime=[200]" in summary


def test_tumbling_in_order_out_of_order_and_exact_grace_boundary():
    """A record is accepted while its window's end is > stream time - grace, dropped at equality."""
    b = StreamsBuilder()
    b.stream("in", STR).group_by_key().windowed_by(TimeWindows.of_size_and_grace(10, 5)).count(
        materialized=Materialized.as_("counts").with_caching_disabled()
    ).to_stream().to("out")
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("in", S, S)
        tin.pipe_input("a", "x", 3)
        tin.pipe_input("a", "x", 12)  # window [10, 20)
        tin.pipe_input("a", "x", 7)  # out of order, [0, 10) still open: 10 > 12 - 5
        tin.pipe_input("a", "x", 14)  # stream time 14: close time 9
        tin.pipe_input("a", "x", 9)  # 10 > 9: still accepted
        tin.pipe_input("a", "x", 15)  # close time 10
        tin.pipe_input("a", "x", 1)  # 10 > 10 is false: late
        out = d.create_output_topic("out", TimeWindowedSerde(S, 10), L).read_records_to_list()
        assert [(r.key, r.value, r.timestamp) for r in out] == [
            (W("a", 0, 10), 1, 3),
            (W("a", 10, 20), 1, 12),
            (W("a", 0, 10), 2, 7),
            (W("a", 10, 20), 2, 14),
            (W("a", 0, 10), 3, 9),
            (W("a", 10, 20), 3, 15),
        ]
        assert dropped(d) == 1
        store = d.get_timestamped_window_store("counts")
        assert store.fetch("a", 0) == ValueAndTimestamp(3, 9)
        assert d.get_window_store("counts").fetch("a", 0, 20) == [(0, 3), (10, 3)]


def test_null_keys_are_skipped_and_counted(caplog):
    b = StreamsBuilder()
    b.stream("topic", STR).group_by_key().windowed_by(
        TimeWindows.of_size_with_no_grace(10).advance_by(5)
    ).count()
    with TopologyTestDriver(b.build(), config()) as d:
        d.create_input_topic("topic", S, S).pipe_input(None, "1")
        assert dropped(d) == 1
    assert "Skipping record due to null key. topic=[topic] partition=[0] offset=[0]" in caplog.messages


@pytest.mark.parametrize("old_values", [False, True], ids=["old-values-off", "old-values-asked"])
@pytest.mark.parametrize("caching", [True, False])
def test_reduce_and_count_with_caching_collapse(caching, old_values):
    """Without caching every update is forwarded; with it (and no commit per record) the cache
    forwards the latest value per window; old values only when a downstream operator asked."""
    b = StreamsBuilder()
    table = (
        b.stream("in", STR)
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(timedelta(milliseconds=10)))
        .reduce(lambda agg, v: agg + v, materialized=materialized("r", caching))
    )
    if old_values:
        assert table.enable_sending_old_values(False)
    out = capture_changes(table)
    with TopologyTestDriver(b.build(), config(), auto_commit=False) as d:
        tin = d.create_input_topic("in", S, S)
        for v, ts in [("a", 1), ("b", 2), ("c", 11)]:
            tin.pipe_input("k", v, ts)
        d.commit()
        tin.pipe_input("k", "d", 12)
        d.commit()
    if caching:
        assert out == [
            (W("k", 0, 10), Change("ab", None), 2),
            (W("k", 10, 20), Change("c", None), 11),
            (W("k", 10, 20), Change("cd", "c" if old_values else None), 12),
        ]
    else:
        assert out == [
            (W("k", 0, 10), Change("a", None), 1),
            (W("k", 0, 10), Change("ab", "a" if old_values else None), 2),
            (W("k", 10, 20), Change("c", None), 11),
            (W("k", 10, 20), Change("cd", "c" if old_values else None), 12),
        ]


def test_hopping_record_lands_in_size_over_advance_windows_and_store_content():
    b = StreamsBuilder()
    b.stream("in", STR).group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(20).advance_by(5)).count(
        materialized="hop"
    )
    with TopologyTestDriver(b.build(), config()) as d:
        d.create_input_topic("in", S, S).pipe_input("k", "v", 22)
        assert d.get_window_store("hop").all() == [
            (W("k", 5, 25), 1),
            (W("k", 10, 30), 1),
            (W("k", 15, 35), 1),
            (W("k", 20, 40), 1),
        ]
        assert d.get_timestamped_window_store("hop").fetch_all(10, 15) == [
            (W("k", 10, 30), ValueAndTimestamp(1, 22)),
            (W("k", 15, 35), ValueAndTimestamp(1, 22)),
        ]


def test_windowed_key_bytes_on_the_output_topic_are_kafkas():
    """A windowed table's key serde is the windowed serde of the grouped key serde: key + 8-byte start."""
    b = StreamsBuilder()
    b.stream("in", STR).group_by_key().windowed_by(
        TimeWindows.of_size_with_no_grace(100)
    ).count().to_stream().to("out", Produced.with_(None, L))
    b.stream("in2", STR).group_by_key().windowed_by(
        SessionWindows.of_inactivity_gap_with_no_grace(10)
    ).count().to_stream().to("out2", Produced.with_(None, L))
    with TopologyTestDriver(b.build(), config()) as d:
        d.create_input_topic("in", S, S).pipe_input("A", "x", 250)
        d.create_input_topic("in2", S, S).pipe_input("a", "x", 7)
        raw = d.create_output_topic("out", Serdes.bytes(), L).read_records_to_list()
        assert [r.key for r in raw] == [b"A" + struct.pack(">q", 200)]
        raw2 = d.create_output_topic("out2", Serdes.bytes(), L).read_records_to_list()
        assert [r.key for r in raw2] == [b"a" + struct.pack(">qq", 7, 7)]
    b2 = StreamsBuilder()
    b2.stream("in", STR).group_by_key().windowed_by(
        TimeWindows.of_size_with_no_grace(100)
    ).count().to_stream().to("o")
    with TopologyTestDriver(b2.build(), config()) as d:
        d.create_input_topic("in", S, S).pipe_input("B", "x", 5)
        rec = d.create_output_topic("o", TimeWindowedSerde(S, 100), L).read_record()
        assert (rec.key, rec.value) == (W("B", 0, 100), 1)
    assert isinstance(
        b.stream("in3", STR)
        .group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(1))
        .count()
        .key_serde,
        SessionWindowedSerde,
    )


# -- names, describe, retention ---------------------------------------------------------------------------

WINDOWED_COUNT = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [input])
      --> KSTREAM-AGGREGATE-0000000002
    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000001])
      --> KTABLE-TOSTREAM-0000000003
      <-- KSTREAM-SOURCE-0000000000
    Processor: KTABLE-TOSTREAM-0000000003 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-AGGREGATE-0000000002
    Sink: KSTREAM-SINK-0000000004 (topic: output)
      <-- KTABLE-TOSTREAM-0000000003

"""


def test_describe_of_a_windowed_count_matches_kafka():
    b = StreamsBuilder()
    b.stream("input", STR).group_by_key().windowed_by(
        TimeWindows.of_size_with_no_grace(1000)
    ).count().to_stream().to("output")
    topo = b.build()
    assert str(topo.describe()) == WINDOWED_COUNT
    assert topo.changelog_topics("app") == {
        "KSTREAM-AGGREGATE-STATE-STORE-0000000001": "app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog"
    }


def test_generated_names_like_kafka():
    # count(materialized) without a store name burns one index, as Kafka does
    b = StreamsBuilder()
    b.stream("in", STR).group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10)).count(
        materialized=Materialized.with_(S, L)
    )
    assert b.build().store_names() == ["KSTREAM-AGGREGATE-STATE-STORE-0000000002"]
    # reduce: its own prefix, and a repartition topic named after the store after a key change
    b = StreamsBuilder()
    b.stream("in", STR).select_key(lambda k, v: v).group_by_key().windowed_by(
        SessionWindows.of_inactivity_gap_with_no_grace(10)
    ).reduce(lambda a, v: a + v, named=Named.as_("sessions"))
    topo = b.build()
    assert topo.store_names() == ["KSTREAM-REDUCE-STATE-STORE-0000000002"]
    assert set(topo.internal_topics) == {"KSTREAM-REDUCE-STATE-STORE-0000000002-repartition"}
    assert "Processor: sessions (stores: [KSTREAM-REDUCE-STATE-STORE-0000000002])" in str(topo.describe())


def test_retention_defaults_and_enforcement():
    def store(windows, m=None, kind="count"):
        b = StreamsBuilder()
        w = b.stream("in", STR).group_by_key().windowed_by(windows)
        w.count(materialized=m or Materialized.as_("s"))
        topo = b.build()
        with TopologyTestDriver(topo, config()) as d:
            return d.get_state_store("s").retention_ms

    assert store(TimeWindows.of_size_and_grace(10, 5)) == 15
    assert store(SlidingWindows.of_time_difference_and_grace(10, 5)) == 25
    assert store(SessionWindows.of_inactivity_gap_and_grace(10, 5)) == 15
    assert (
        store(
            TimeWindows.of_size_and_grace(10, 5), Materialized.as_("s").with_retention(timedelta(seconds=1))
        )
        == 1000
    )
    with pytest.raises(
        TopologyError, match=r"window store s must be no smaller than its window size plus the grace"
    ):
        store(TimeWindows.of_size_and_grace(10, 5), Materialized.as_("s").with_retention(14))
    with pytest.raises(TopologyError, match=r"size=\[10\], grace=\[5\], retention=\[14\]"):
        store(TimeWindows.of_size_and_grace(10, 5), Materialized.as_("s").with_retention(14))
    with pytest.raises(TopologyError, match=r"2 \* time difference plus the grace period"):
        store(SlidingWindows.of_time_difference_and_grace(10, 5), Materialized.as_("s").with_retention(20))
    with pytest.raises(TopologyError, match=r"gap=\[10\], grace=\[5\], retention=\[14\]"):
        store(SessionWindows.of_inactivity_gap_and_grace(10, 5), Materialized.as_("s").with_retention(14))
    with pytest.raises(TopologyError, match="negative"):
        Materialized.as_("s").with_retention(-1)


def test_retention_drops_old_windows_from_the_store():
    b = StreamsBuilder()
    b.stream("in", STR).group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10)).count(
        materialized=Materialized.as_("c").with_retention(30)
    )
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("in", S, S)
        for ts in (0, 10, 20, 30, 40):
            tin.pipe_input("k", "v", ts)
        # stream time 40 (window start): windows starting before 40 - 30 + 1 are gone
        assert [w.window.start for w, _ in d.get_window_store("c").all()] == [20, 30, 40]
        assert d.get_window_store("c").fetch("k", 0) is None


# -- sliding windows ---------------------------------------------------------------------------------------


def sliding_output(out):
    """Kafka's gatherOutput: window start -> set of (value, timestamp)."""
    result: dict[int, set] = {}
    for key, value, ts in out:
        result.setdefault(key.window.start, set()).add((value, ts))
    return result


@pytest.mark.parametrize(("strategy", "caching"), STRATEGIES)
def test_sliding_aggregate_small_input(strategy, caching):
    """KStreamSlidingWindowAggregateTest.testAggregateSmallInput: time difference 10, grace 5."""
    b = StreamsBuilder()
    table = (
        b.stream("topic", STR)
        .group_by_key(Grouped.with_(S, S))
        .windowed_by(SlidingWindows.of_time_difference_and_grace(10, 5))
        .emit_strategy(strategy)
        .aggregate(string_init, to_string_adder, materialized=materialized("store-name", caching))
    )
    out = capture_stream(table.to_stream())
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("topic", S, S)
        for v, ts in [("1", 10), ("2", 10), ("3", 14), ("4", 15), ("5", 20), ("6", 22), ("7", 30)]:
            tin.pipe_input("A", v, ts)
    assert all(k.window.end == k.window.start + 10 for k, _, _ in out)
    if strategy.on_close:
        assert sliding_output(out) == {
            0: {("0+1+2", 10)},
            4: {("0+1+2+3", 14)},
            5: {("0+1+2+3+4", 15)},
            10: {("0+1+2+3+4+5", 20)},
            11: {("0+3+4+5", 20)},
            12: {("0+3+4+5+6", 22)},
        }
        assert len(out) == 6  # one result per window
    else:
        assert sliding_output(out) == {
            0: {("0+1", 10), ("0+1+2", 10)},
            4: {("0+1+2+3", 14)},
            5: {("0+1+2+3+4", 15)},
            10: {("0+1+2+3+4+5", 20)},
            11: {("0+3", 14), ("0+3+4", 15), ("0+3+4+5", 20)},
            12: {("0+3+4+5+6", 22)},
            15: {("0+4", 15), ("0+4+5", 20), ("0+4+5+6", 22)},
            16: {("0+5", 20), ("0+5+6", 22)},
            20: {("0+5+6+7", 30)},
            21: {("0+6", 22), ("0+6+7", 30)},
            23: {("0+7", 30)},
        }


@pytest.mark.parametrize(("strategy", "caching"), STRATEGIES)
def test_sliding_reduce_small_input(strategy, caching):
    """KStreamSlidingWindowAggregateTest.testReduceSmallInput."""
    b = StreamsBuilder()
    table = (
        b.stream("topic", STR)
        .group_by_key(Grouped.with_(S, S))
        .windowed_by(SlidingWindows.of_time_difference_and_grace(10, 5))
        .emit_strategy(strategy)
        .reduce(lambda a, v: f"{a}+{v}", materialized=materialized("store-name", caching))
    )
    out = capture_stream(table.to_stream())
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("topic", S, S)
        for v, ts in [("1", 10), ("2", 14), ("3", 15), ("4", 22), ("5", 26), ("6", 30)]:
            tin.pipe_input("A", v, ts)
    if strategy.on_close:
        assert sliding_output(out) == {
            0: {("1", 10)},
            4: {("1+2", 14)},
            5: {("1+2+3", 15)},
            11: {("2+3", 15)},
            12: {("2+3+4", 22)},
        }
    else:
        assert sliding_output(out) == {
            0: {("1", 10)},
            4: {("1+2", 14)},
            5: {("1+2+3", 15)},
            11: {("2", 14), ("2+3", 15)},
            12: {("2+3+4", 22)},
            15: {("3", 15), ("3+4", 22)},
            16: {("4", 22), ("4+5", 26)},
            20: {("4+5+6", 30)},
            23: {("5", 26), ("5+6", 30)},
            27: {("6", 30)},
        }


@pytest.mark.parametrize(("strategy", "caching"), STRATEGIES)
def test_sliding_early_records(strategy, caching):
    """KStreamSlidingWindowAggregateTest.testEarlyRecordsSmallInput: time difference 50, no grace."""
    b = StreamsBuilder()
    table = (
        b.stream("topic", STR)
        .group_by_key(Grouped.with_(S, S))
        .windowed_by(SlidingWindows.of_time_difference_and_grace(50, 0))
        .emit_strategy(strategy)
        .aggregate(string_init, to_string_adder, materialized=materialized("topic-Canonized", caching))
    )
    out = capture_stream(table.to_stream())
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("topic", S, S)
        for v, ts in [("1", 0), ("2", 5), ("3", 6), ("4", 3), ("5", 13), ("6", 10), ("7", 70)]:
            tin.pipe_input("A", v, ts)
    if strategy.on_close:
        assert sliding_output(out) == {
            0: {("0+1+2+3+4+5+6", 13)},
            1: {("0+2+3+4+5+6", 13)},
            4: {("0+2+3+5+6", 13)},
            6: {("0+3+5+6", 13)},
            7: {("0+5+6", 13)},
            11: {("0+5", 13)},
        }
    else:
        assert sliding_output(out) == {
            0: {
                ("0+1", 0),
                ("0+1+2", 5),
                ("0+1+2+3", 6),
                ("0+1+2+3+4", 6),
                ("0+1+2+3+4+5", 13),
                ("0+1+2+3+4+5+6", 13),
            },
            1: {("0+2", 5), ("0+2+3", 6), ("0+2+3+4", 6), ("0+2+3+4+5", 13), ("0+2+3+4+5+6", 13)},
            4: {("0+2+3", 6), ("0+2+3+5", 13), ("0+2+3+5+6", 13)},
            6: {("0+3", 6), ("0+3+5", 13), ("0+3+5+6", 13)},
            7: {("0+5", 13), ("0+5+6", 13)},
            11: {("0+5", 13)},
            20: {("0+7", 70)},
        }


def test_sliding_count_store_and_late_record(caplog):
    b = StreamsBuilder()
    b.stream("in", STR).group_by_key().windowed_by(SlidingWindows.of_time_difference_with_no_grace(10)).count(
        materialized="sl"
    )
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("in", S, S)
        tin.pipe_input("k", "a", 20)
        tin.pipe_input("k", "b", 25)
        tin.pipe_input("k", "c", 5)  # window [5, 15] ends before stream time 25: late
        assert dropped(d) == 1
        assert d.get_timestamped_window_store("sl").all() == [
            (W("k", 10, 20), ValueAndTimestamp(1, 20)),
            (W("k", 15, 25), ValueAndTimestamp(2, 25)),
            (W("k", 21, 31), ValueAndTimestamp(1, 25)),
        ]
    assert any("window=[5,15] expiration=[25] streamTime=[25]" in m for m in caplog.messages)


# -- session windows --------------------------------------------------------------------------------------


def session_count(builder, strategy=UPDATE, caching=True, gap=GAP_MS, grace=0, old_values=False):
    m = Materialized.as_("sessions").with_value_serde(L)
    table = (
        builder.stream("in", STR)
        .group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(gap, grace))
        .emit_strategy(strategy)
        .aggregate(
            lambda: 0,
            lambda k, v, agg: agg + 1,
            lambda k, a1, a2: a1 + a2,
            materialized=m if caching else m.with_caching_disabled(),
        )
    )
    if old_values:  # what a downstream suppress() or table join asks for (Kafka's sendOldValues)
        assert table.enable_sending_old_values(False)
    return capture_changes(table)


MULTI = [
    ("a", 0), ("b", 0), ("c", 0), ("d", 0), ("d", GAP_MS // 2), ("a", GAP_MS + 1), ("b", GAP_MS + 1),
    ("a", GAP_MS + 1 + GAP_MS // 2), ("c", GAP_MS + 1 + GAP_MS // 2),
]  # fmt: skip


def test_sessions_merge_cached_one_flush():
    """KStreamSessionWindowAggregateProcessorTest.shouldHandleMultipleSessionsAndMerging (cached, one
    flush at the end): sessions created and merged away within the flush never reach downstream."""
    b = StreamsBuilder()
    out = session_count(b)
    with TopologyTestDriver(b.build(), config(), auto_commit=False) as d:
        tin = d.create_input_topic("in", S, S)
        for k, ts in MULTI:
            tin.pipe_input(k, "1", ts)
        d.commit()
        half, after = GAP_MS // 2, GAP_MS + 1
        assert out == [
            (SW("a", 0, 0), Change(1, None), 0),
            (SW("b", 0, 0), Change(1, None), 0),
            (SW("c", 0, 0), Change(1, None), 0),
            (SW("d", 0, half), Change(2, None), half),
            (SW("b", after, after), Change(1, None), after),
            (SW("a", after, after + half), Change(2, None), after + half),
            (SW("c", after + half, after + half), Change(1, None), after + half),
        ]
        # retention is gap + grace = GAP_MS: sessions ending before 450001 - GAP_MS + 1 have expired
        sessions = d.get_session_store("sessions")
        assert sessions.fetch("a") == [(SW("a", after, after + half), 2)]
        assert sessions.find_sessions("d", 0, GAP_MS) == []  # [0, 150000] has expired too
        assert sessions.fetch("b") == [(SW("b", after, after), 1)]


@pytest.mark.parametrize("old_values", [False, True], ids=["old-values-off", "old-values-asked"])
@pytest.mark.parametrize("caching", [True, False])
def test_sessions_merge_forwards_tombstones(caching, old_values):
    """shouldImmediatelyForwardRemovedSessionsWhenMerging: merged sessions are removed and a tombstone
    stamped with their end is forwarded before the merged session: ``Change(None, None)`` as in Kafka's
    test, ``Change(None, old)`` when a downstream operator asked for old values."""
    b = StreamsBuilder()
    out = session_count(b, caching=caching, old_values=old_values)
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("in", S, S)
        tin.pipe_input("a", "1", 0)
        tin.pipe_input("a", "1", 5)
        tin.pipe_input("a", "1", 20)
        tin.pipe_input("a", "1", 10)  # joins the two sessions [0, 5] and [20, 20]

    def old(value):
        return value if old_values else None

    head = [
        (SW("a", 0, 0), Change(1, None), 0),
        (SW("a", 0, 0), Change(None, old(1)), 0),
        (SW("a", 0, 5), Change(2, None), 5),
        (SW("a", 0, 5), Change(None, old(2)), 5),
        (SW("a", 0, 20), Change(3, None), 20),
    ]
    # the record at 10 falls inside [0, 20]: the session is removed and put again under the same key,
    # which the cache collapses into one update
    if caching:
        assert out == [*head, (SW("a", 0, 20), Change(4, old(3)), 20)]
    else:
        assert out == [
            *head,
            (SW("a", 0, 20), Change(None, old(3)), 20),
            (SW("a", 0, 20), Change(4, None), 20),
        ]


def test_session_emit_final_one_result_per_session_ordered_by_end():
    """shouldHandleMultipleSessionsAndMerging with ON_WINDOW_CLOSE."""
    b = StreamsBuilder()
    out = session_count(b, strategy=CLOSE)
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("in", S, S)
        for k, ts in MULTI:
            tin.pipe_input(k, "1", ts)
    half = GAP_MS // 2
    assert out == [
        (SW("a", 0, 0), Change(1, None), 0),
        (SW("b", 0, 0), Change(1, None), 0),
        (SW("c", 0, 0), Change(1, None), 0),
        (SW("d", 0, half), Change(2, None), half),
    ]


def test_session_late_record_with_grace(caplog):
    """shouldLogAndMeterWhenSkippingLateRecordWithNonzeroGrace: gap 10, grace 1."""
    b = StreamsBuilder()
    out = session_count(b, gap=10, grace=1)
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("in", S, S)
        tin.pipe_input("dummy", "dummy", 0)
        tin.pipe_input("OnTime1", "1", 0)
        tin.pipe_input("dummy", "dummy", 11)
        tin.pipe_input("OnTime2", "1", 0)  # close time 0: [0, 0] is still open
        tin.pipe_input("dummy", "dummy", 12)
        tin.pipe_input("Late1", "1", 0)  # close time 1
        assert dropped(d) == 1
    assert any(
        m.startswith(
            "Skipping record for expired window. topic=[in] partition=[0] offset=[5] timestamp=[0] "
            "window=[0,0] expiration=[1] streamTime=[12]"
        )
        for m in caplog.messages
    )
    assert [k.key for k, c, _ in out if c.new is not None].count("OnTime2") == 1
    assert "Late1" not in [k.key for k, _, _ in out]


def test_session_reduce_and_store_values():
    b = StreamsBuilder()
    # grace 20: the session [0, 0] is still open (and retained) when the record at 10 arrives
    b.stream("in", STR).group_by_key().windowed_by(SessionWindows.of_inactivity_gap_and_grace(10, 20)).reduce(
        lambda a, v: a + v, materialized="red"
    ).to_stream().to("out", Produced.with_(SessionWindowedSerde(S), S))
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("in", S, S)
        tin.pipe_input("k", "a", 0)
        tin.pipe_input("k", "b", 20)
        tin.pipe_input("k", "c", 10)  # bridges both sessions: the merger reduces "b" into "a", then "c"
        out = d.create_output_topic("out", SessionWindowedSerde(S), S).read_records_to_list()
        assert [(r.key, r.value, r.timestamp) for r in out] == [
            (SW("k", 0, 0), "a", 0),
            (SW("k", 20, 20), "b", 20),
            (SW("k", 0, 0), None, 0),
            (SW("k", 20, 20), None, 20),
            (SW("k", 0, 20), "abc", 20),
        ]
        assert d.get_session_store("red").all() == [(SW("k", 0, 20), "abc")]


# -- emit final across restarts ---------------------------------------------------------------------------


def test_emit_final_survives_a_restart_without_duplicates(tmp_path):
    def topology():
        b = StreamsBuilder()
        (
            b.stream("in", STR)
            .group_by_key()
            .windowed_by(TimeWindows.of_size_with_no_grace(10))
            .emit_strategy(CLOSE)
            .count(materialized="final")
            .to_stream()
            .to("out", Produced.with_(TimeWindowedSerde(S, 10), L))
        )
        return b.build()

    topo = topology()
    assert "final-emit-metadata" in topo.store_names()
    cfg = config(state_dir=tmp_path)
    with TopologyTestDriver(topo, cfg) as d:
        tin = d.create_input_topic("in", S, S)
        for ts in (1, 5, 12):
            tin.pipe_input("k", "v", ts)
        first = [
            (r.key, r.value, r.timestamp)
            for r in d.create_output_topic("out", TimeWindowedSerde(S, 10), L).read_records_to_list()
        ]
        assert first == [(W("k", 0, 10), 2, 5)]
        assert d.get_key_value_store("final-emit-metadata").get("final") == 12
    with TopologyTestDriver(topology(), cfg) as d:
        tin = d.create_input_topic("in", S, S)
        tin.pipe_input("k", "v", 13)  # close time progresses, but [0, 10) was emitted before the restart
        tin.pipe_input("k", "v", 25)
        out = [
            (r.key, r.value, r.timestamp)
            for r in d.create_output_topic("out", TimeWindowedSerde(S, 10), L).read_records_to_list()
        ]
        assert out == [(W("k", 10, 20), 2, 13)]


def test_emit_final_interval_throttles_by_wall_clock():
    b = StreamsBuilder()
    out = capture_changes(
        b.stream("in", STR)
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10, 5))
        .emit_strategy(CLOSE)
        .count()
    )
    cfg = config(emit_interval_ms_kstreams_windowed_aggregation=1000)
    with TopologyTestDriver(b.build(), cfg) as d:
        tin = d.create_input_topic("in", S, S)
        tin.pipe_input("a", "v", 1)  # the first check passes the throttle: nothing closed yet
        tin.pipe_input("b", "v", 15)  # a write to window 10 moves the store's time: closed windows go out
        assert out == [(W("a", 0, 10), Change(1, None), 1)]
        tin.pipe_input("c", "v", 16)
        tin.pipe_input("c", "v", 21)
        tin.pipe_input("c", "v", 25)  # [10, 20) closes, but no wall-clock time passed: throttled
        assert len(out) == 1
        d.advance_wall_clock_time(1000)
        tin.pipe_input("c", "v", 26)
        assert out[1:] == [(W("b", 10, 20), Change(1, None), 15), (W("c", 10, 20), Change(1, None), 16)]

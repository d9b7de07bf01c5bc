"""cogroup (KIP-150), ported from Kafka's CogroupedKStreamImplTest and the Time/Session/Sliding
WindowedCogroupedKStreamImplTests: same inputs, same outputs (values, timestamps, order), same names."""

import pytest

from edge.dsl import (
    Consumed,
    Grouped,
    Materialized,
    Named,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    TimeWindows,
)
from edge.errors import TopologyError
from edge.processor import StreamsConfig
from edge.serde import Serdes
from edge.serde.windowed import SessionWindowedSerde, TimeWindowedSerde
from edge.testing import TopologyTestDriver

S, INT = Serdes.string(), Serdes.int()
STR = Consumed.with_(S, S)
OUTPUT = "output"


def config():
    return StreamsConfig("cogroup", default_key_serde=S, default_value_serde=S)


def string_aggregator(_key, value, agg):
    return agg + value


def string_sum(_key, value, agg):
    return agg + int(value)


def to_string_adder(_key, value, agg):  # Kafka's MockAggregator.TOSTRING_ADDER
    return f"{agg}+{value}"


def to_string_remover(_key, value, agg):  # MockAggregator.TOSTRING_REMOVER
    return f"{agg}-{value}"


def triples(topic):
    return [(r.key, r.value, r.timestamp) for r in topic.read_records_to_list()]


def test_cogroup_with_three_grouped_streams():
    b = StreamsBuilder()
    g1 = b.stream("one", STR).group_by_key()
    g2 = b.stream("two", STR).group_by_key()
    g3 = b.stream("three", STR).group_by_key()
    (
        g1.cogroup(string_aggregator)
        .cogroup(g2, string_aggregator)
        .cogroup(g3, string_aggregator)
        .aggregate(lambda: "")
        .to_stream()
        .to(OUTPUT)
    )
    t = b.build()
    assert t.store_names() == ["COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003"]  # one store for all
    with TopologyTestDriver(t, config()) as d:
        one, two, three = (d.create_input_topic(n, S, S) for n in ("one", "two", "three"))
        out = d.create_output_topic(OUTPUT, S, S)
        one.pipe_input("k1", "A", 0)
        one.pipe_input("k2", "A", 1)
        one.pipe_input("k1", "A", 10)
        one.pipe_input("k2", "A", 100)
        two.pipe_input("k2", "B", 100)
        two.pipe_input("k2", "B", 200)
        two.pipe_input("k1", "B", 1)
        two.pipe_input("k2", "B", 500)
        three.pipe_input("k1", "B", 500)
        three.pipe_input("k2", "B", 500)
        three.pipe_input("k3", "B", 500)
        three.pipe_input("k2", "B", 100)
        assert triples(out) == [
            ("k1", "A", 0),
            ("k2", "A", 1),
            ("k1", "AA", 10),
            ("k2", "AA", 100),
            ("k2", "AAB", 100),
            ("k2", "AABB", 200),
            ("k1", "AAB", 10),
            ("k2", "AABBB", 500),
            ("k1", "AABB", 500),
            ("k2", "AABBBB", 500),
            ("k3", "B", 500),
            ("k2", "AABBBBB", 500),
        ]
        assert d.get_key_value_store("COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003").to_dict() == {
            "k1": "AABB",
            "k2": "AABBBBB",
            "k3": "B",
        }


def test_single_stream_and_null_values():
    b = StreamsBuilder()
    b.stream("one", STR).group_by_key().cogroup(string_aggregator).aggregate(lambda: "").to_stream().to(
        OUTPUT
    )
    with TopologyTestDriver(b.build(), config()) as d:
        one = d.create_input_topic("one", S, S)
        out = d.create_output_topic(OUTPUT, S, S)
        one.pipe_input("k1", "A", 0)
        one.pipe_input("k2", "B", 0)
        one.pipe_input("k2", None, 0)  # testCogroupHandleNullValues: skipped
        one.pipe_input("k2", "B", 0)
        one.pipe_input("k1", "A", 0)
        assert triples(out) == [("k1", "A", 0), ("k2", "B", 0), ("k2", "BB", 0), ("k1", "AA", 0)]


def _two_streams(second_consumed=STR):
    b = StreamsBuilder()
    g1 = b.stream("one", STR).group_by_key()
    g2 = b.stream("two", second_consumed).group_by_key()
    return b, g1, g2


def test_different_output_type_and_input_types():
    """shouldAllowDifferentOutputTypeInCoGroup + shouldCoGroupStreamsWithDifferentInputTypes."""
    b, g1, g2 = _two_streams(Consumed.with_(S, INT))
    (
        g1.cogroup(string_sum)
        .cogroup(g2, lambda _k, v, agg: agg + v)
        .aggregate(lambda: 0, materialized=Materialized.as_("store1").with_value_serde(INT))
        .to_stream()
        .to(OUTPUT)
    )
    with TopologyTestDriver(b.build(), config()) as d:
        one, two = d.create_input_topic("one", S, S), d.create_input_topic("two", S, INT)
        out = d.create_output_topic(OUTPUT, S, INT)
        for k, v, ts in [("k1", "1", 0), ("k2", "1", 1), ("k1", "1", 10), ("k2", "1", 100)]:
            one.pipe_input(k, v, ts)
        for k, v, ts in [
            ("k2", 2, 100),
            ("k2", 2, 200),
            ("k1", 2, 1),
            ("k2", 2, 500),
            ("k1", 2, 500),
            ("k2", 3, 500),
            ("k3", 2, 500),
            ("k2", 2, 100),
        ]:
            two.pipe_input(k, v, ts)
        assert triples(out) == [
            ("k1", 1, 0),
            ("k2", 1, 1),
            ("k1", 2, 10),
            ("k2", 2, 100),
            ("k2", 4, 100),
            ("k2", 6, 200),
            ("k1", 4, 10),
            ("k2", 8, 500),
            ("k1", 6, 500),
            ("k2", 11, 500),
            ("k3", 2, 500),
            ("k2", 13, 500),
        ]


def test_mixed_aggregators():
    b, g1, g2 = _two_streams()
    (
        g1.cogroup(to_string_remover)
        .cogroup(g2, to_string_adder)
        .aggregate(lambda: "0", materialized=Materialized.as_("store1").with_value_serde(S))
        .to_stream()
        .to(OUTPUT)
    )
    with TopologyTestDriver(b.build(), config()) as d:
        one, two = d.create_input_topic("one", S, S), d.create_input_topic("two", S, S)
        out = d.create_output_topic(OUTPUT, S, S)
        for k, v, ts in [("k1", "1", 0), ("k2", "1", 1), ("k1", "1", 10), ("k2", "1", 100)]:
            one.pipe_input(k, v, ts)
        for k, v, ts in [("k1", "2", 500), ("k2", "2", 500), ("k1", "2", 500), ("k2", "2", 100)]:
            two.pipe_input(k, v, ts)
        assert triples(out) == [
            ("k1", "0-1", 0),
            ("k2", "0-1", 1),
            ("k1", "0-1-1", 10),
            ("k2", "0-1-1", 100),
            ("k1", "0-1-1+2", 500),
            ("k2", "0-1-1+2", 500),
            ("k1", "0-1-1+2+2", 500),
            ("k2", "0-1-1+2+2", 500),
        ]


def test_cogroup_then_table_table_join():
    b, g1, g2 = _two_streams()
    table1 = (
        g1.cogroup(string_aggregator)
        .cogroup(g2, string_aggregator)
        .aggregate(lambda: "", Named.as_("name"), Materialized.as_("store"))
    )
    table2 = b.table("three", STR)
    table1.join(table2, lambda a, c: f"{a}+{c}", materialized=Materialized.with_(S, S)).to_stream().to(OUTPUT)
    with TopologyTestDriver(b.build(), config()) as d:
        one, two, three = (d.create_input_topic(n, S, S) for n in ("one", "two", "three"))
        out = d.create_output_topic(OUTPUT, S, S)
        one.pipe_input("k1", "A", 5)
        two.pipe_input("k2", "B", 6)
        assert out.is_empty()
        three.pipe_input("k1", "C", 0)
        three.pipe_input("k2", "D", 10)
        assert triples(out) == [("k1", "A+C", 5), ("k2", "B+D", 10)]


def test_named_processors_and_store():
    """shouldNameProcessorsAndStoreBasedOnNamedParameter."""
    b, g1, g2 = _two_streams()
    (
        g1.cogroup(string_aggregator)
        .cogroup(g2, string_aggregator)
        .aggregate(lambda: "", Named.as_("test"), Materialized.as_("store"))
        .to_stream()
        .to(OUTPUT)
    )
    text = str(b.build().describe())
    for line in (
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [one])\n      --> test-cogroup-agg-0\n",
        "    Processor: test-cogroup-agg-0 (stores: [store])\n"
        "      --> test-cogroup-merge\n      <-- KSTREAM-SOURCE-0000000000\n",
        "    Processor: test-cogroup-agg-1 (stores: [store])\n"
        "      --> test-cogroup-merge\n      <-- KSTREAM-SOURCE-0000000001\n",
        "    Processor: test-cogroup-merge (stores: [])\n"
        "      --> KTABLE-TOSTREAM-0000000005\n      <-- test-cogroup-agg-0, test-cogroup-agg-1\n",
        "    Sink: KSTREAM-SINK-0000000006 (topic: output)\n",
    ):
        assert line in text, line
    assert "Sub-topology: 1" not in text


def test_repartition_topic_for_an_upstream_key_change():
    """shouldNameRepartitionTopic: the mapped input is repartitioned (named by its Grouped) and the
    aggregate, in the next sub-topology, reads it beside the other input."""
    b = StreamsBuilder()
    g1 = b.stream("one", STR).map(lambda k, v: (v, k)).group_by_key(Grouped.as_("repartition-test"))
    g2 = b.stream("two", STR).group_by_key()
    g1.cogroup(string_aggregator).cogroup(g2, string_aggregator).aggregate(lambda: "").to_stream().to(OUTPUT)
    t = b.build()
    text = str(t.describe())
    for line in (
        "    Sink: repartition-test-repartition-sink (topic: repartition-test-repartition)\n",
        "    Source: repartition-test-repartition-source (topics: [repartition-test-repartition])\n"
        "      --> COGROUPKSTREAM-AGGREGATE-0000000007\n",
        "    Processor: COGROUPKSTREAM-AGGREGATE-0000000007 "
        "(stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])\n",
        "    Processor: COGROUPKSTREAM-AGGREGATE-0000000008 "
        "(stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])\n",
        "      <-- COGROUPKSTREAM-AGGREGATE-0000000007, COGROUPKSTREAM-AGGREGATE-0000000008\n",
        "    Sink: KSTREAM-SINK-0000000011 (topic: output)\n",
    ):
        assert line in text, line
    with TopologyTestDriver(t, config()) as d:
        one, two = d.create_input_topic("one", S, S), d.create_input_topic("two", S, S)
        out = d.create_output_topic(OUTPUT, S, S)
        one.pipe_input("A", "k1", 1)  # re-keyed to k1
        two.pipe_input("k1", "B", 2)
        one.pipe_input("C", "k1", 3)
        assert triples(out) == [("k1", "A", 1), ("k1", "AB", 2), ("k1", "ABC", 3)]


def _windowed_two_streams():
    b = StreamsBuilder()
    g1 = b.stream("topic", STR).group_by_key(Grouped.with_(S, S))
    g2 = b.stream("topic2", STR).group_by_key(Grouped.with_(S, S))
    return b, g1.cogroup(to_string_adder).cogroup(g2, to_string_remover)


def test_time_windowed_cogroup_mixed_aggregators_many_windows():
    """TimeWindowedCogroupedKStreamImplTest.timeWindowMixAggregatorsManyWindowsTest."""
    b, cg = _windowed_two_streams()
    (
        cg.windowed_by(TimeWindows.of_size_with_no_grace(500))
        .aggregate(lambda: "0", materialized=Materialized.with_(S, S))
        .to_stream()
        .to(OUTPUT)
    )
    with TopologyTestDriver(b.build(), config()) as d:
        t1, t2 = d.create_input_topic("topic", S, S), d.create_input_topic("topic2", S, S)
        out = d.create_output_topic(OUTPUT, TimeWindowedSerde(S, 500), S)
        for k, ts in [("k1", 0), ("k2", 0), ("k2", 1), ("k1", 2)]:
            t1.pipe_input(k, "A", ts)
        for k, ts in [("k1", 3), ("k2", 3), ("k2", 501), ("k1", 501)]:
            t2.pipe_input(k, "B", ts)
        got = [(r.key.key, r.key.window.start, r.value, r.timestamp) for r in out.read_records_to_list()]
        assert got == [
            ("k1", 0, "0+A", 0),
            ("k2", 0, "0+A", 0),
            ("k2", 0, "0+A+A", 1),
            ("k1", 0, "0+A+A", 2),
            ("k1", 0, "0+A+A-B", 3),
            ("k2", 0, "0+A+A-B", 3),
            ("k2", 500, "0-B", 501),
            ("k1", 500, "0-B", 501),
        ]


def test_session_windowed_cogroup_mixed_aggregators_many_windows():
    """SessionWindowedCogroupedKStreamImplTest.sessionWindowMixAggregatorsManyWindowsTest."""
    b, cg = _windowed_two_streams()
    (
        cg.windowed_by(SessionWindows.of_inactivity_gap_and_grace(100, 86_400_000))
        .aggregate(lambda: "0", lambda _k, a, c: f"{a}+{c}", materialized=Materialized.with_(S, S))
        .to_stream()
        .to(OUTPUT)
    )
    with TopologyTestDriver(b.build(), config()) as d:
        t1, t2 = d.create_input_topic("topic", S, S), d.create_input_topic("topic2", S, S)
        out = d.create_output_topic(OUTPUT, SessionWindowedSerde(S), S)
        for k, ts in [("k1", 0), ("k2", 0), ("k2", 1), ("k1", 2)]:
            t1.pipe_input(k, "A", ts)
        for k, ts in [("k1", 3), ("k2", 500), ("k2", 501), ("k1", 501)]:
            t2.pipe_input(k, "B", ts)
        got = [(r.key.key, r.value, r.timestamp) for r in out.read_records_to_list()]
        assert got == [
            ("k1", "0+A", 0),
            ("k2", "0+A", 0),
            ("k2", None, 0),
            ("k2", "0+0+A+A", 1),
            ("k1", None, 0),
            ("k1", "0+0+A+A", 2),
            ("k1", None, 2),
            ("k1", "0+0+0+A+A-B", 3),
            ("k2", "0-B", 500),
            ("k2", None, 500),
            ("k2", "0+0-B-B", 501),
            ("k1", "0-B", 501),
        ]


def test_sliding_windowed_cogroup():
    """SlidingWindowedCogroupedKStreamImplTest.slidingWindowAggregateStreamsTest."""
    b, cg = _windowed_two_streams()
    (
        cg.windowed_by(SlidingWindows.of_time_difference_and_grace(500, 2000))
        .aggregate(lambda: "0", materialized=Materialized.with_(S, S))
        .to_stream()
        .to(OUTPUT)
    )
    with TopologyTestDriver(b.build(), config()) as d:
        t1 = d.create_input_topic("topic", S, S)
        out = d.create_output_topic(OUTPUT, TimeWindowedSerde(S, 500), S)
        for k, v, ts in [
            ("k1", "A", 500),
            ("k2", "A", 500),
            ("k2", "A", 501),
            ("k1", "A", 502),
            ("k1", "B", 503),
            ("k2", "B", 503),
            ("k2", "B", 504),
            ("k1", "B", 504),
        ]:
            t1.pipe_input(k, v, ts)
        got = [(r.key.key, r.key.window.start, r.value, r.timestamp) for r in out.read_records_to_list()]
        assert got == [
            ("k1", 0, "0+A", 500),
            ("k2", 0, "0+A", 500),
            ("k2", 501, "0+A", 501),
            ("k2", 1, "0+A+A", 501),
            ("k1", 501, "0+A", 502),
            ("k1", 2, "0+A+A", 502),
            ("k1", 501, "0+A+B", 503),
            ("k1", 503, "0+B", 503),
            ("k1", 3, "0+A+A+B", 503),
            ("k2", 501, "0+A+B", 503),
            ("k2", 502, "0+B", 503),
            ("k2", 3, "0+A+A+B", 503),
            ("k2", 502, "0+B+B", 504),
            ("k2", 501, "0+A+B+B", 504),
            ("k2", 504, "0+B", 504),
            ("k2", 4, "0+A+A+B+B", 504),
            ("k1", 503, "0+B+B", 504),
            ("k1", 501, "0+A+B+B", 504),
            ("k1", 504, "0+B", 504),
            ("k1", 4, "0+A+A+B+B", 504),
        ]


def test_named_windowed_cogroup():
    b, cg = _windowed_two_streams()
    cg.windowed_by(TimeWindows.of_size_with_no_grace(500)).aggregate(
        lambda: "", Named.as_("foo"), Materialized.as_("store")
    )
    text = str(b.build().describe())
    assert "Processor: foo-cogroup-agg-0 (stores: [store])" in text
    assert "Processor: foo-cogroup-agg-1 (stores: [store])" in text
    assert "Processor: foo-cogroup-merge (stores: [])" in text


def test_user_mistakes():
    _b, g1, _g2 = _two_streams()
    with pytest.raises(TopologyError, match="aggregator must be a callable"):
        g1.cogroup(None)
    with pytest.raises(TopologyError, match="expected a KGroupedStream"):
        g1.cogroup(string_aggregator).cogroup("two", string_aggregator)
    with pytest.raises(TopologyError, match="initializer must be a callable"):
        g1.cogroup(string_aggregator).aggregate(None)
    with pytest.raises(TopologyError, match="windowed_by expects"):
        g1.cogroup(string_aggregator).windowed_by(500)
    other = StreamsBuilder().stream("x", STR).group_by_key()
    with pytest.raises(TopologyError, match="same StreamsBuilder"):
        g1.cogroup(string_aggregator).cogroup(other, string_aggregator)

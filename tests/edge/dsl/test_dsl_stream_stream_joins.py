"""Windowed stream-stream joins (inner, left, outer), ported from Kafka Streams' KStreamKStreamJoinTest,
KStreamKStreamLeftJoinTest, KStreamKStreamOuterJoinTest and TopologyTest: same inputs, same outputs
(key, value, timestamp) in the same order, same names and describe() text."""

from __future__ import annotations

import logging

import pytest

from edge.dsl import Consumed, Produced, StreamJoined, StreamsBuilder
from edge.dsl.windows import JoinWindows
from edge.errors import TopologyError
from edge.processor import StreamsConfig
from edge.processor.ops.stream_joins import (
    LeftOrRightValue,
    LeftOrRightValueListSerde,
    TimestampedKeyAndJoinSide,
    TimestampedKeyAndJoinSideSerde,
)
from edge.serde import Serdes
from edge.testing import TopologyTestDriver

INT, S = Serdes.int(), Serdes.string()
CONSUMED = Consumed.with_(INT, S)
KEYS = [0, 1, 2, 3]


def tostring_joiner(left, right):
    """Kafka's MockValueJoiner.TOSTRING_JOINER (Java prints a missing side as "null")."""
    return f"{'null' if left is None else left}+{'null' if right is None else right}"


def no_grace(ms):
    return JoinWindows.of_time_difference_with_no_grace(ms)


def with_grace(ms, grace):
    return JoinWindows.of_time_difference_and_grace(ms, grace)


def build(op, windows, stream_joined=None, joiner=tostring_joiner, right=S):
    """``topic1`` <op> ``topic2`` -> ``out``; ``right``: the serde of topic2's values."""
    b = StreamsBuilder()
    s1 = b.stream("topic1", CONSUMED)
    s2 = b.stream("topic2", Consumed.with_(INT, right))
    sj = stream_joined or StreamJoined.with_(INT, S, right)
    getattr(s1, op)(s2, joiner, windows, sj).to("out", Produced.with_(INT, S))
    return b.build()


class Run:
    """A TopologyTestDriver on a join topology, with Kafka's checkAndClearProcessResult."""

    def __init__(self, topology, config=None, right=S):
        self.driver = TopologyTestDriver(topology, config or StreamsConfig("ssj", INT, S))
        self.t1 = self.driver.create_input_topic("topic1", INT, S)
        self.t2 = self.driver.create_input_topic("topic2", INT, right)
        self.out = self.driver.create_output_topic("out", INT, S)

    def left(self, key, value, ts):
        self.t1.pipe_input(key, value, ts)

    def right(self, key, value, ts):
        self.t2.pipe_input(key, value, ts)

    def check(self, *expected):
        got = [(r.key, r.value, r.timestamp) for r in self.out.read_records_to_list()]
        assert got == list(expected)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.driver.close()


# -- inner joins (KStreamKStreamJoinTest) ----------------------------------------------------------------
def test_join():
    with Run(build("join", no_grace(100))) as r:
        for i in KEYS[:2]:
            r.left(i, f"A{i}", 0)
        r.check()
        for i in KEYS[:2]:
            r.right(i, f"a{i}", 0)
        r.check((0, "A0+a0", 0), (1, "A1+a1", 0))
        for i in KEYS:
            r.left(i, f"B{i}", 0)
        r.check((0, "B0+a0", 0), (1, "B1+a1", 0))
        for i in KEYS:
            r.right(i, f"b{i}", 0)
        r.check(
            (0, "A0+b0", 0),
            (0, "B0+b0", 0),
            (1, "A1+b1", 0),
            (1, "B1+b1", 0),
            (2, "B2+b2", 0),
            (3, "B3+b3", 0),
        )
        for i in KEYS:
            r.left(i, f"C{i}", 0)
        r.check(
            (0, "C0+a0", 0),
            (0, "C0+b0", 0),
            (1, "C1+a1", 0),
            (1, "C1+b1", 0),
            (2, "C2+b2", 0),
            (3, "C3+b3", 0),
        )
        for i in KEYS[:2]:
            r.right(i, f"c{i}", 0)
        r.check(
            (0, "A0+c0", 0),
            (0, "B0+c0", 0),
            (0, "C0+c0", 0),
            (1, "A1+c1", 0),
            (1, "B1+c1", 0),
            (1, "C1+c1", 0),
        )


def test_windowing_inner_join_upper_and_lower_bounds():
    """KStreamKStreamJoinTest.testWindowing (first part): a right record joins left records within
    [t - 100, t + 100]; the bounds are inclusive; the result carries the larger timestamp."""
    with Run(build("join", no_grace(100))) as r:
        for i in KEYS[:2]:
            r.left(i, f"A{i}", 0)
        r.check()
        for i in KEYS:
            r.right(i, f"a{i}", 0)
        r.check((0, "A0+a0", 0), (1, "A1+a1", 0))
        # left records at 1000; right records at 1100 + i: only key 0 (1100) is within 100 ms
        for i in KEYS:
            r.left(i, f"B{i}", 1000)
        r.check()
        for i in KEYS:
            r.right(i, f"b{i}", 1100 + i)
        r.check((0, "B0+b0", 1100))
        # right records at 899 + i ... 900: lower bound
        for i in KEYS:
            r.right(i, f"c{i}", 899 + i)
        r.check((1, "B1+c1", 1000), (2, "B2+c2", 1000), (3, "B3+c3", 1000))


def test_asymmetric_windowing_after():
    """KStreamKStreamJoinTest.testAsymmetricWindowingAfter: ``before(0).after(100)``: a left record at t
    joins right records in [t, t + 100]."""
    windows = no_grace(0).after(100)
    with Run(build("join", windows)) as r:
        time = 1000
        for i, k in enumerate(KEYS):
            r.left(k, f"A{k}", time + i)
        r.check()
        for k in KEYS:
            r.right(k, f"a{k}", time - 1)
        r.check()
        for k in KEYS:
            r.right(k, f"b{k}", time)
        r.check((0, "A0+b0", 1000))
        for k in KEYS:
            r.right(k, f"c{k}", time + 1)
        r.check((0, "A0+c0", 1001), (1, "A1+c1", 1001))
        for k in KEYS:
            r.right(k, f"d{k}", time + 3)
        r.check((0, "A0+d0", 1003), (1, "A1+d1", 1003), (2, "A2+d2", 1003), (3, "A3+d3", 1003))
        for k in KEYS:
            r.right(k, f"e{k}", time + 100)
        r.check((0, "A0+e0", 1100), (1, "A1+e1", 1100), (2, "A2+e2", 1100), (3, "A3+e3", 1100))
        for k in KEYS:
            r.right(k, f"f{k}", time + 101)
        r.check((1, "A1+f1", 1101), (2, "A2+f2", 1101), (3, "A3+f3", 1101))
        for k in KEYS:
            r.right(k, f"h{k}", time + 103)
        r.check((3, "A3+h3", 1103))
        for k in KEYS:
            r.right(k, f"i{k}", time + 104)
        r.check()


def test_asymmetric_windowing_before():
    """KStreamKStreamJoinTest.testAsymmetricWindowingBefore: ``before(100).after(0)``: a left record at t
    joins right records in [t - 100, t]."""
    windows = no_grace(0).before(100)
    with Run(build("join", windows)) as r:
        time = 1000
        for i, k in enumerate(KEYS):
            r.left(k, f"A{k}", time + i)
        r.check()
        for k in KEYS:
            r.right(k, f"a{k}", time - 100 - 1)
        r.check()
        for k in KEYS:
            r.right(k, f"b{k}", time - 100)
        r.check((0, "A0+b0", 1000))
        for k in KEYS:
            r.right(k, f"c{k}", time - 99)
        r.check((0, "A0+c0", 1000), (1, "A1+c1", 1001))
        for k in KEYS:
            r.right(k, f"d{k}", time - 97)
        r.check((0, "A0+d0", 1000), (1, "A1+d1", 1001), (2, "A2+d2", 1002), (3, "A3+d3", 1003))
        time = 1000 + 3
        for k in KEYS:
            r.right(k, f"e{k}", time)
        r.check((3, "A3+e3", 1003))
        for k in KEYS:
            r.right(k, f"f{k}", time + 1)
        r.check()


def test_inner_join_drops_records_with_null_key_or_value_and_counts_them(caplog):
    with Run(build("join", no_grace(100))) as r, caplog.at_level(logging.WARNING):
        r.left(None, "A", 0)
        r.left(0, None, 0)
        r.right(0, "a", 0)
        r.check()
        assert "Skipping record due to null key or value" in caplog.text
        (task,) = r.driver._tasks
        assert task.dropped_records == 2


# -- left joins (KStreamKStreamLeftJoinTest) ---------------------------------------------------------------
def test_left_join_duplicates():
    with Run(build("left_join", with_grace(100, 10))) as r:
        r.left(0, "A0", 0)
        r.left(0, "A0-0", 0)
        r.right(1, "a0", 111)
        r.right(2, "dummy", 500)
        r.check((0, "A0+null", 0), (0, "A0-0+null", 0))
        r.left(2, "A2", 1000)
        r.left(2, "A2-0", 1000)
        r.right(2, "a2", 1001)
        r.check((2, "A2+a2", 1001), (2, "A2-0+a2", 1001))
        r.right(3, "a3", 315)
        r.check()


@pytest.mark.parametrize("closing_side", ["left", "right"])
def test_left_expired_non_joined_records_are_emitted_by_either_processor(closing_side):
    with Run(build("left_join", with_grace(100, 0))) as r:
        r.left(0, "A0", 1)
        r.left(1, "A1", 2)
        r.left(0, "A0-0", 3)
        r.check()
        r.right(1, "a1", 3)
        r.check((1, "A1+a1", 3))
        if closing_side == "left":
            r.left(2, "dummy", 401)
            r.check((0, "A0+null", 1), (0, "A0-0+null", 3))
            r.right(2, "dummy", 401)
            r.check((2, "dummy+dummy", 401))
        else:
            r.right(2, "dummy", 401)
            r.check((0, "A0+null", 1), (0, "A0-0+null", 3))
            r.left(2, "dummy", 402)
            r.check((2, "dummy+dummy", 402))


@pytest.mark.parametrize("grace", [0, None])
def test_right_non_joined_records_are_never_emitted_by_a_left_join(grace):
    windows = with_grace(100, 0) if grace == 0 else no_grace(100)
    with Run(build("left_join", windows)) as r:
        r.right(0, "A0", 1)
        r.right(1, "A1", 2)
        r.right(0, "A0-0", 3)
        r.check()
        r.left(1, "a1", 3)
        r.check((1, "a1+A1", 3))
        r.left(2, "dummy", 401)
        r.check()
        r.right(2, "dummy", 402)
        r.check((2, "dummy+dummy", 402))


def test_left_join_ordering():
    with Run(build("left_join", no_grace(100))) as r:
        r.left(0, "A0", 0)
        r.left(1, "A1", 100)
        r.check()
        r.right(1, "a1", 110)
        r.check((0, "A0+null", 0), (1, "A1+a1", 110))


def test_left_join_grace_period():
    with Run(build("left_join", with_grace(100, 10))) as r:
        for k in KEYS[:2]:
            r.left(k, f"A{k}", 0)
        r.check()
        for k in KEYS:
            r.right(k, f"a{k}", 101)
        r.check()
        r.right(0, "dummy", 101 + 1100)
        r.check((0, "A0+null", 0), (1, "A1+null", 0))


def test_left_join_windowing_lower_bound_emits_late_left_records_at_once():
    """KStreamKStreamLeftJoinTest.testWindowing/testLowerWindowBound: a left record whose window closed
    before it arrived (out of order) gets its non-joined result immediately."""
    with Run(build("left_join", no_grace(100))) as r:
        for k in KEYS[:2]:
            r.left(k, f"A{k}", 0)
        r.check()
        for k in KEYS:
            r.right(k, f"a{k}", 0)
        r.check((0, "A0+a0", 0), (1, "A1+a1", 0))
        # stream time 1000: the window of a left record at 0..899 is closed on arrival
        r.right(9, "x", 1000)
        r.check()
        r.left(2, "L2", 800)
        r.check((2, "L2+null", 800))
        # within [t - 100, t + 100] of stream time: waits
        r.left(3, "L3", 950)
        r.check()
        r.right(3, "a3", 1050)
        r.check((3, "L3+a3", 1050))


def test_no_left_join_result_for_asymmetric_window():
    with Run(build("left_join", no_grace(100).before(0))) as r:
        for i, k in enumerate(KEYS[:2]):
            r.left(k, f"A{k}", i)
        r.check()
        r.right(0, "a0", 100)
        r.check((0, "A0+a0", 100))
        r.right(1, "a1", 102)
        r.check((1, "A1+null", 1))


def test_left_join_emits_null_key_records_at_once():
    """Kafka 3.7+ (KIP-962): a left join's left record without a key cannot match and is emitted at once;
    a right record without a key is dropped."""
    with Run(build("left_join", no_grace(100))) as r:
        r.left(None, "A", 5)
        r.check((None, "A+null", 5))
        r.right(None, "a", 6)
        r.check()


# -- outer joins (KStreamKStreamOuterJoinTest, KStreamKStreamJoinTest.testOuterJoin) ----------------------
L = Serdes.long()


def test_outer_join_duplicates():
    with Run(build("outer_join", with_grace(100, 10), right=L), right=L) as r:
        r.left(0, "A0", 0)
        r.left(0, "A0-0", 0)
        r.right(1, 11, 0)
        r.right(1, 12, 0)
        r.right(1, 10, 111)
        r.right(3, 100, 211)  # bumps stream time: the windows at 0 close
        r.check((1, "null+11", 0), (1, "null+12", 0), (0, "A0+null", 0), (0, "A0-0+null", 0))
        r.left(2, "A2", 200)
        r.left(2, "A2-0", 200)
        r.right(2, 13, 201)
        r.right(2, 14, 201)
        r.check((2, "A2+13", 201), (2, "A2-0+13", 201), (2, "A2+14", 201), (2, "A2-0+14", 201))
        r.right(3, 100, 1500)
        r.check((1, "null+10", 111), (3, "null+100", 211))


@pytest.mark.parametrize("expired_side", ["left", "right"])
@pytest.mark.parametrize("closing_side", ["left", "right"])
def test_outer_expired_non_joined_records_are_emitted_by_either_processor(expired_side, closing_side):
    """KStreamKStreamOuterJoinTest.test{Left,Right}ExpiredNonJoinedRecordsAreEmittedByThe{Left,Right}Processor."""
    with Run(build("outer_join", with_grace(100, 0))) as r:
        this, other = (r.left, r.right) if expired_side == "left" else (r.right, r.left)
        fmt = (lambda v: f"{v}+null") if expired_side == "left" else (lambda v: f"null+{v}")
        this(0, "A0", 1)
        this(1, "A1", 2)
        this(0, "A0-0", 3)
        r.check()
        other(1, "a1", 3)
        r.check((1, "A1+a1" if expired_side == "left" else "a1+A1", 3))
        closer, follower = (r.left, r.right) if closing_side == "left" else (r.right, r.left)
        closer(2, "dummy", 401)
        r.check((0, fmt("A0"), 1), (0, fmt("A0-0"), 3))
        follower(2, "dummy", 402)
        r.check((2, "dummy+dummy", 402))


def test_outer_join_ordering():
    with Run(build("outer_join", no_grace(100), right=L), right=L) as r:
        r.left(0, "A0", 0)
        r.left(1, "A1", 100)
        r.check()
        r.right(1, 11, 110)
        r.check((0, "A0+null", 0), (1, "A1+11", 110))


def test_outer_join_grace_period():
    with Run(build("outer_join", with_grace(100, 10), right=L), right=L) as r:
        r.left(0, "A0", 0)
        r.right(1, 11, 0)
        r.check()
        r.left(1, "A1", 101)
        r.right(0, 10, 101)
        r.check()
        r.right(0, 100, 112)
        r.check((1, "null+11", 0), (0, "A0+null", 0))


def test_emit_all_non_joined_results_for_asymmetric_window():
    with Run(build("outer_join", no_grace(5).after(20), right=L), right=L) as r:
        r.left(0, "A0", 29)
        r.check()
        r.left(1, "A1", 30)
        r.check()
        r.right(2, 12, 31)
        r.check()
        r.right(3, 13, 36)
        r.check()
        r.right(4, 14, 37)
        r.check((2, "null+12", 31))
        r.right(5, 15, 50)
        r.check((0, "A0+null", 29), (3, "null+13", 36), (4, "null+14", 37))


def test_outer_join_with_matches_arriving_in_time_never_emits_non_joined():
    """KStreamKStreamJoinTest.testOuterJoin (first part) with a 24 h grace: every record finds its
    partner within the window, so only joined results appear."""
    with Run(build("outer_join", with_grace(100, 24 * 3600 * 1000))) as r:
        for k in KEYS[:2]:
            r.left(k, f"A{k}", 0)
        r.check()
        for k in KEYS[:2]:
            r.right(k, f"a{k}", 0)
        r.check((0, "A0+a0", 0), (1, "A1+a1", 0))
        for k in KEYS:
            r.left(k, f"B{k}", 0)
        r.check((0, "B0+a0", 0), (1, "B1+a1", 0))
        for k in KEYS:
            r.right(k, f"b{k}", 0)
        r.check(
            (0, "A0+b0", 0),
            (0, "B0+b0", 0),
            (1, "A1+b1", 0),
            (1, "B1+b1", 0),
            (2, "B2+b2", 0),
            (3, "B3+b3", 0),
        )


def test_joiner_with_key_and_headers_forwarded():
    with Run(build("left_join", no_grace(10), joiner=lambda k, a, b: f"{k}:{a}/{b}")) as r:
        r.left(7, "x", 0)
        r.right(7, "y", 5)
        r.check((7, "7:x/y", 5))
        r.left(8, "z", 6)
        r.right(1, "far", 100)
        r.check((8, "8:z/None", 6))


# -- stores, names, describe ---------------------------------------------------------------------------
def test_store_contents_and_outer_store_serde_round_trip():
    with Run(build("left_join", no_grace(100))) as r:
        r.left(0, "A0", 10)
        r.left(0, "A0b", 10)
        r.right(1, "a1", 20)
        this = r.driver.get_window_store("KSTREAM-JOINTHIS-0000000004-store")
        other = r.driver.get_window_store("KSTREAM-OUTEROTHER-0000000005-store")
        assert list(this.fetch(0, 0, 100)) == [(10, "A0"), (10, "A0b")]
        assert list(other.fetch(1, 0, 100)) == [(20, "a1")]
        shared = r.driver.get_key_value_store("KSTREAM-OUTERSHARED-0000000004-store")
        assert list(shared.all()) == [
            (
                TimestampedKeyAndJoinSide(10, 0, True),
                [LeftOrRightValue("A0", None), LeftOrRightValue("A0b", None)],
            )
        ]
        r.right(0, "a0", 30)  # joins both: the waiting records are removed, nothing non-joined is emitted
        r.check((0, "A0+a0", 30), (0, "A0b+a0", 30))
        assert list(shared.all()) == []
    key_serde = TimestampedKeyAndJoinSideSerde(S)
    raw = key_serde.serialize("t", TimestampedKeyAndJoinSide(5, "k", False))
    assert raw == b"\x00" * 7 + b"\x05" + b"\x00" + b"k"
    assert key_serde.deserialize("t", raw) == TimestampedKeyAndJoinSide(5, "k", False)
    value_serde = LeftOrRightValueListSerde(S, INT)
    values = [LeftOrRightValue("a", None), LeftOrRightValue(None, 7)]
    raw = value_serde.serialize("t", values)
    assert (
        raw
        == b"\x01" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x02\x01a" + b"\x00\x00\x00\x05\x00\x00\x00\x00\x07"
    )
    assert value_serde.deserialize("t", raw) == values


def test_changelog_topics_and_configs():
    topo = build("left_join", no_grace(100))
    assert topo.changelog_topics("app") == {
        "KSTREAM-JOINTHIS-0000000004-store": "app-KSTREAM-JOINTHIS-0000000004-store-changelog",
        "KSTREAM-OUTEROTHER-0000000005-store": "app-KSTREAM-OUTEROTHER-0000000005-store-changelog",
        "KSTREAM-OUTERSHARED-0000000004-store": "app-KSTREAM-OUTERSHARED-0000000004-store-changelog",
    }
    disabled = build("join", no_grace(100), StreamJoined.with_(INT, S, S).with_logging_disabled())
    assert disabled.changelog_topics("app") == {}


def test_stream_joined_logging_config_applies_to_window_store_changelogs():
    sj = StreamJoined.with_(INT, S, S).with_logging_enabled({"retention.ms": "1000", "segment.bytes": 1024})
    topo = build("left_join", no_grace(100), sj)
    stores = {name: sd.builder for name, sd in topo._stores.items()}
    this = stores["KSTREAM-JOINTHIS-0000000004-store"].to_builder(StreamsConfig("x"))
    assert this.changelog_config["cleanup.policy"] == "delete"
    assert this.changelog_config["segment.bytes"] == "1024"
    assert this.retention_ms == 200 and this.window_size_ms == 200 and this.retain_duplicates
    shared = stores["KSTREAM-OUTERSHARED-0000000004-store"].to_builder(StreamsConfig("x"))
    assert shared.changelog_config.get("segment.bytes") == "1024"


INNER_DESCRIBE = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic1])
      --> KSTREAM-WINDOWED-0000000002
    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic2])
      --> KSTREAM-WINDOWED-0000000003
    Processor: KSTREAM-WINDOWED-0000000002 (stores: [{this}])
      --> KSTREAM-JOINTHIS-0000000004
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-WINDOWED-0000000003 (stores: [{other}])
      --> KSTREAM-JOINOTHER-0000000005
      <-- KSTREAM-SOURCE-0000000001
    Processor: KSTREAM-JOINOTHER-0000000005 (stores: [{this}])
      --> KSTREAM-MERGE-0000000006
      <-- KSTREAM-WINDOWED-0000000003
    Processor: KSTREAM-JOINTHIS-0000000004 (stores: [{other}])
      --> KSTREAM-MERGE-0000000006
      <-- KSTREAM-WINDOWED-0000000002
    Processor: KSTREAM-MERGE-0000000006 (stores: [])
      --> none
      <-- KSTREAM-JOINTHIS-0000000004, KSTREAM-JOINOTHER-0000000005

"""

LEFT_DESCRIBE = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic1])
      --> KSTREAM-WINDOWED-0000000002
    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic2])
      --> KSTREAM-WINDOWED-0000000003
    Processor: KSTREAM-WINDOWED-0000000002 (stores: [{this}])
      --> KSTREAM-JOINTHIS-0000000004
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-WINDOWED-0000000003 (stores: [{other}])
      --> KSTREAM-OUTEROTHER-0000000005
      <-- KSTREAM-SOURCE-0000000001
    Processor: KSTREAM-JOINTHIS-0000000004 (stores: [{other}, {shared}])
      --> KSTREAM-MERGE-0000000006
      <-- KSTREAM-WINDOWED-0000000002
    Processor: KSTREAM-OUTEROTHER-0000000005 (stores: [{this}, {shared}])
      --> KSTREAM-MERGE-0000000006
      <-- KSTREAM-WINDOWED-0000000003
    Processor: KSTREAM-MERGE-0000000006 (stores: [])
      --> none
      <-- KSTREAM-JOINTHIS-0000000004, KSTREAM-OUTEROTHER-0000000005

"""

OUTER_DESCRIBE = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic1])
      --> KSTREAM-WINDOWED-0000000002
    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic2])
      --> KSTREAM-WINDOWED-0000000003
    Processor: KSTREAM-WINDOWED-0000000002 (stores: [{this}])
      --> KSTREAM-OUTERTHIS-0000000004
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-WINDOWED-0000000003 (stores: [{other}])
      --> KSTREAM-OUTEROTHER-0000000005
      <-- KSTREAM-SOURCE-0000000001
    Processor: KSTREAM-OUTEROTHER-0000000005 (stores: [{this}, {shared}])
      --> KSTREAM-MERGE-0000000006
      <-- KSTREAM-WINDOWED-0000000003
    Processor: KSTREAM-OUTERTHIS-0000000004 (stores: [{other}, {shared}])
      --> KSTREAM-MERGE-0000000006
      <-- KSTREAM-WINDOWED-0000000002
    Processor: KSTREAM-MERGE-0000000006 (stores: [])
      --> none
      <-- KSTREAM-OUTERTHIS-0000000004, KSTREAM-OUTEROTHER-0000000005

"""


def _describe(op, store_name=None):
    b = StreamsBuilder()
    s1, s2 = b.stream("input-topic1"), b.stream("input-topic2")
    sj = StreamJoined.with_(INT, S, S)
    if store_name:
        sj = sj.with_store_name(store_name)
    getattr(s1, op)(s2, tostring_joiner, no_grace(100), sj)
    return str(b.build().describe())


@pytest.mark.parametrize(
    ("op", "template", "default", "custom"),
    [
        (
            "join",
            INNER_DESCRIBE,
            ("KSTREAM-JOINTHIS-0000000004-store", "KSTREAM-JOINOTHER-0000000005-store", ""),
            ("custom-name-this-join-store", "custom-name-other-join-store", ""),
        ),
        (
            "left_join",
            LEFT_DESCRIBE,
            (
                "KSTREAM-JOINTHIS-0000000004-store",
                "KSTREAM-OUTEROTHER-0000000005-store",
                "KSTREAM-OUTERSHARED-0000000004-store",
            ),
            (
                "custom-name-this-join-store",
                "custom-name-outer-other-join-store",
                "custom-name-left-shared-join-store",
            ),
        ),
        (
            "outer_join",
            OUTER_DESCRIBE,
            (
                "KSTREAM-OUTERTHIS-0000000004-store",
                "KSTREAM-OUTEROTHER-0000000005-store",
                "KSTREAM-OUTERSHARED-0000000004-store",
            ),
            (
                "custom-name-outer-this-join-store",
                "custom-name-outer-other-join-store",
                "custom-name-outer-shared-join-store",
            ),
        ),
    ],
)
def test_describe_matches_kafka_topology_test(op, template, default, custom):
    """TopologyTest.streamStream{,Left,Outer}JoinTopologyWith{Default,Custom}StoresNames."""
    for stores, name in ((default, None), (custom, "custom-name")):
        this, other, shared = stores
        assert _describe(op, name) == template.format(this=this, other=other, shared=shared)


def _rekeyed_joins(first_name=None, second_name=None):
    """KStreamKStreamJoinTest.shouldReuseRepartitionTopicWithGeneratedName /
    shouldCreateRepartitionTopicsWithUserProvidedName."""
    b = StreamsBuilder()
    s1 = b.stream("topic", Consumed.with_(S, S))
    s2 = b.stream("topic2", Consumed.with_(S, S))
    s3 = b.stream("topic3", Consumed.with_(S, S))
    new_stream = s1.map(lambda k, v: (v, k))
    sj1 = StreamJoined.with_(S, S, S)
    sj2 = StreamJoined.with_(S, S, S)
    if first_name:
        sj1, sj2 = sj1.with_name(first_name), sj2.with_name(second_name)
    new_stream.join(s2, lambda a, c: a + c, no_grace(100), sj1).to("out-one")
    new_stream.join(s3, lambda a, c: a + c, no_grace(100), sj2).to("out-to")
    return b.build()


def test_rekeyed_stream_joined_twice_reuses_its_generated_repartition_topic():
    topo = _rekeyed_joins()
    assert list(topo.internal_topics) == ["KSTREAM-MAP-0000000003-repartition"]
    text = str(topo.describe())
    assert "Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-MAP-0000000003-repartition)" in text
    assert "Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-MAP-0000000003-repartition])" in text
    for line in [
        "Processor: KSTREAM-WINDOWED-0000000007 (stores: [KSTREAM-JOINTHIS-0000000009-store])",
        "Processor: KSTREAM-WINDOWED-0000000016 (stores: [KSTREAM-JOINTHIS-0000000018-store])",
        "Processor: KSTREAM-JOINOTHER-0000000019 (stores: [KSTREAM-JOINTHIS-0000000018-store])",
        "      <-- KSTREAM-JOINTHIS-0000000018, KSTREAM-JOINOTHER-0000000019",
        "Sink: KSTREAM-SINK-0000000021 (topic: out-to)",
    ]:
        assert line in text
    assert len(topo.subtopologies()) == 2


def test_rekeyed_streams_with_user_names_get_their_own_repartition_topics():
    topo = _rekeyed_joins("first-join", "second-join")
    assert sorted(topo.internal_topics) == ["first-join-left-repartition", "second-join-left-repartition"]
    text = str(topo.describe())
    for line in [
        "Processor: first-join-this-windowed (stores: [KSTREAM-JOINTHIS-0000000009-store])",
        "Processor: first-join-other-join (stores: [KSTREAM-JOINTHIS-0000000009-store])",
        "Processor: first-join-this-join (stores: [KSTREAM-JOINOTHER-0000000010-store])",
        "      <-- first-join-this-join, first-join-other-join",
        "Sink: KSTREAM-SINK-0000000012 (topic: out-one)",
        "Processor: second-join-this-windowed (stores: [KSTREAM-JOINTHIS-0000000018-store])",
        "Sink: KSTREAM-SINK-0000000021 (topic: out-two)"
        if False
        else "Sink: KSTREAM-SINK-0000000021 (topic: out-to)",
    ]:
        assert line in text
    assert len(topo.subtopologies()) == 3


def test_rekeyed_join_runs_through_the_repartition_topic():
    b = StreamsBuilder()
    orders = b.stream("orders", Consumed.with_(S, S)).select_key(lambda k, v: v.split(":")[0])
    payments = b.stream("payments", Consumed.with_(S, S))
    orders.left_join(payments, lambda o, p: f"{o}|{p}", no_grace(10)).to("out", Produced.with_(S, S))
    topo = b.build()
    assert list(topo.internal_topics) == ["KSTREAM-KEY-SELECT-0000000001-repartition"]
    with TopologyTestDriver(topo, StreamsConfig("rk", S, S)) as d:
        d.create_input_topic("orders", S, S).pipe_input("o1", "c1:pen", 0)
        d.create_input_topic("payments", S, S).pipe_input("c1", "paid", 5)
        d.create_input_topic("orders", S, S).pipe_input("o2", "c2:ink", 6)
        d.create_input_topic("payments", S, S).pipe_input("c9", "late", 100)
        out = d.create_output_topic("out", S, S).read_records_to_list()
        assert [(r.key, r.value, r.timestamp) for r in out] == [
            ("c1", "c1:pen|paid", 5),
            ("c2", "c2:ink|None", 6),
        ]


def test_user_mistakes():
    b = StreamsBuilder()
    s1, s2 = b.stream("a"), b.stream("b")
    with pytest.raises(TopologyError, match="JoinWindows"):
        s1.join(s2, tostring_joiner)
    with pytest.raises(TopologyError, match=r"StreamJoined\.with_name"):
        s1.join(s2, tostring_joiner, no_grace(1), named="x")
    with pytest.raises(TopologyError, match="expected a KStream"):
        s1.outer_join(b.table("t"), tostring_joiner, no_grace(1))
    with pytest.raises(TopologyError, match="for joins with a KStream"):
        s1.join(b.table("t2"), tostring_joiner, no_grace(1))
    with pytest.raises(TopologyError, match="non-empty"):
        StreamJoined.with_(None, None).with_name("")

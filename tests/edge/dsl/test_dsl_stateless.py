"""Every stateless KStream operator through the TopologyTestDriver."""

import pytest

from edge.dsl import Branched, Consumed, Named, Produced, StreamsBuilder
from edge.errors import TopologyError
from edge.processor import StreamsConfig
from edge.serde import Serdes
from edge.testing import NoRecordError, TestRecord, TopologyTestDriver

S = Serdes.string()
STR = Consumed.with_(S, S)


def config(app="stateless"):
    return StreamsConfig(app, default_key_serde=S, default_value_serde=S)


def run(build, inputs, outputs=("out",), value_serdes=None, input_topic="in"):
    b = StreamsBuilder()
    build(b)
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic(input_topic, S, S)
        for rec in inputs:
            tin.pipe_input(*rec)
        vs = value_serdes or {}
        return {o: d.create_output_topic(o, S, vs.get(o, S)).read_records_to_list() for o in outputs}


def kv(records):
    return [(r.key, r.value) for r in records]


def test_filter_and_filter_not():
    def build(b):
        s = b.stream("in", STR)
        s.filter(lambda k, v: v.startswith("a")).to("yes")
        s.filter_not(lambda k, v: v.startswith("a")).to("no")

    out = run(build, [("1", "apple"), ("2", "banana"), ("3", "avocado")], ("yes", "no"))
    assert kv(out["yes"]) == [("1", "apple"), ("3", "avocado")]
    assert kv(out["no"]) == [("2", "banana")]


def test_map_map_values_select_key_keep_timestamp_and_headers():
    def build(b):
        s = b.stream("in", STR)
        s.map(lambda k, v: (v, k)).to("swapped")
        s.map_values(str.upper).to("upper")
        s.map_values(lambda k, v: f"{k}:{v}", with_key=True).to("withkey")
        s.select_key(lambda k, v: v[0]).to("rekeyed")

    h = [("trace", b"t1")]
    out = run(build, [("k", "val", 42, h)], ("swapped", "upper", "withkey", "rekeyed"))
    assert out["swapped"] == [TestRecord("val", "k", 42, h)]
    assert out["upper"] == [TestRecord("k", "VAL", 42, h)]
    assert out["withkey"] == [TestRecord("k", "k:val", 42, h)]
    assert out["rekeyed"] == [TestRecord("v", "val", 42, h)]


def test_flat_map_and_flat_map_values():
    def build(b):
        s = b.stream("in", STR)
        s.flat_map(lambda k, v: [(w, k) for w in v.split()]).to("fm")
        s.flat_map_values(str.split).to("fmv")

    out = run(build, [("k", "a b"), ("j", "")], ("fm", "fmv"))
    assert kv(out["fm"]) == [("a", "k"), ("b", "k")]
    assert kv(out["fmv"]) == [("k", "a"), ("k", "b")]


def test_peek_and_foreach():
    seen, peeked = [], []

    def build(b):
        s = b.stream("in", STR)
        s.peek(lambda k, v: peeked.append((k, v))).to("out")
        s.foreach(lambda k, v: seen.append(v))

    out = run(build, [("a", "1"), ("b", "2")])
    assert kv(out["out"]) == [("a", "1"), ("b", "2")]
    assert peeked == [("a", "1"), ("b", "2")]
    assert seen == ["1", "2"]


def test_split_named_branches_and_default():
    result = {}

    def build(b):
        branches = (
            b.stream("in", STR)
            .split(Named.as_("route-"))
            .branch(lambda k, v: v.startswith("a"), Branched.as_("a"))
            .branch(
                lambda k, v: v.startswith("b"), Branched.with_function(lambda s: s.map_values(str.upper), "b")
            )
            .default_branch(Branched.as_("other"))
        )
        result.update(branches)
        for name, stream in branches.items():
            stream.to(name)

    out = run(
        build,
        [("1", "apple"), ("2", "banana"), ("3", "cherry"), ("4", "apricot")],
        ("route-a", "route-b", "route-other"),
    )
    assert sorted(result) == ["route-a", "route-b", "route-other"]
    assert kv(out["route-a"]) == [("1", "apple"), ("4", "apricot")]
    assert kv(out["route-b"]) == [("2", "BANANA")]
    assert kv(out["route-other"]) == [("3", "cherry")]


def test_split_without_default_drops_unmatched_and_generates_names():
    b = StreamsBuilder()
    branches = b.stream("in", STR).split().branch(lambda k, v: v == "x").no_default_branch()
    assert list(branches) == ["KSTREAM-BRANCH-00000000011"]
    branches["KSTREAM-BRANCH-00000000011"].to("out")
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("in", S, S)
        tin.pipe_input("k", "x")
        tin.pipe_input("k", "y")
        assert d.create_output_topic("out", S, S).read_values_to_list() == ["x"]


def test_merge():
    def build(b):
        a = b.stream("a", STR)
        c = b.stream("c", STR)
        a.merge(c).to("out")

    b = StreamsBuilder()
    build(b)
    with TopologyTestDriver(b.build(), config()) as d:
        d.create_input_topic("a", S, S).pipe_input("1", "from-a")
        d.create_input_topic("c", S, S).pipe_input("2", "from-c")
        assert d.create_output_topic("out", S, S).read_key_values_to_list() == [
            ("1", "from-a"),
            ("2", "from-c"),
        ]


def test_stream_from_topic_list():
    b = StreamsBuilder()
    b.stream(["x", "y"], STR).to("out")
    with TopologyTestDriver(b.build(), config()) as d:
        d.create_input_topic("x", S, S).pipe_input("1", "x")
        d.create_input_topic("y", S, S).pipe_input("2", "y")
        assert d.create_output_topic("out", S, S).read_values_to_list() == ["x", "y"]


def test_to_topic_chooser_and_produced_serdes():
    def build(b):
        b.stream("in", STR).map_values(len).to(
            lambda k, v: "long" if v > 3 else "short", Produced.with_(S, Serdes.int())
        )

    out = run(
        build,
        [("a", "abcdef"), ("b", "ab")],
        ("long", "short"),
        {"long": Serdes.int(), "short": Serdes.int()},
    )
    assert kv(out["long"]) == [("a", 6)]
    assert kv(out["short"]) == [("b", 2)]


def test_repartition_routes_through_internal_topic():
    b = StreamsBuilder()
    from edge.dsl import Repartitioned

    b.stream("in", STR).select_key(lambda k, v: v).repartition(Repartitioned.as_("by-value")).to("out")
    topo = b.build()
    assert len(topo.subtopologies()) == 2
    assert set(topo.internal_topics) == {"by-value-repartition"}
    with TopologyTestDriver(topo, config("app")) as d:
        d.create_input_topic("in", S, S).pipe_input("k", "v", 5)
        assert d.create_output_topic("out", S, S).read_records_to_list() == [TestRecord("v", "v", 5, [])]
        assert d.create_output_topic("app-by-value-repartition", S, S).get_queue_size() == 1


def test_output_topic_read_past_end_and_unknown_input_topic():
    b = StreamsBuilder()
    b.stream("in", STR).to("out")
    with TopologyTestDriver(b.build(), config()) as d:
        with pytest.raises(NoRecordError):
            d.create_output_topic("out", S, S).read_value()
        with pytest.raises(TopologyError, match="not an input"):
            d.create_input_topic("nope", S, S)


def test_input_topic_auto_advance_timestamps():
    b = StreamsBuilder()
    b.stream("in", STR).to("out")
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("in", S, S, start_timestamp=1000, auto_advance_ms=10)
        tin.pipe_value_list(["a", "b", "c"])
        assert [r.timestamp for r in d.create_output_topic("out", S, S).read_records_to_list()] == [
            1000,
            1010,
            1020,
        ]

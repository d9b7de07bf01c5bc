"""KGroupedStream count/reduce/aggregate, repartitioning after key changes, and record-cache collapsing."""

from edge.dsl import Consumed, Grouped, Materialized, Produced, StreamsBuilder
from edge.processor import StreamsConfig
from edge.serde import Serdes
from edge.testing import TestRecord, TopologyTestDriver

S, L, J = Serdes.string(), Serdes.long(), Serdes.json()
STR = Consumed.with_(S, S)


def config(app="agg", **kw):
    return StreamsConfig(app, default_key_serde=S, default_value_serde=S, **kw)


def test_count_group_by_key_needs_no_repartition():
    b = StreamsBuilder()
    b.stream("in", STR).group_by_key().count(materialized="counts").to_stream().to(
        "out", Produced.with_(S, L)
    )
    topo = b.build()
    assert len(topo.subtopologies()) == 1 and not topo.internal_topics
    with TopologyTestDriver(topo, config()) as d:
        tin = d.create_input_topic("in", S, S)
        for k, ts in [("a", 1), ("b", 2), ("a", 3)]:
            tin.pipe_input(k, "x", ts)
        tin.pipe_input("a", None, 4)  # null values are not counted
        tin.pipe_input(None, "x", 5)  # nor null keys
        out = d.create_output_topic("out", S, L).read_records_to_list()
        assert out == [TestRecord("a", 1, 1, []), TestRecord("b", 1, 2, []), TestRecord("a", 2, 3, [])]
        assert d.get_key_value_store("counts").to_dict() == {"a": 2, "b": 1}


def test_repartition_after_select_key_then_count():
    b = StreamsBuilder()
    (
        b.stream("in", STR)
        .select_key(lambda k, v: v)
        .group_by_key(Grouped.as_("by-colour"))
        .count()
        .to_stream()
        .to("out", Produced.with_(S, L))
    )
    topo = b.build()
    assert set(topo.internal_topics) == {"by-colour-repartition"}
    assert len(topo.subtopologies()) == 2
    with TopologyTestDriver(topo, config("app")) as d:
        tin = d.create_input_topic("in", S, S)
        for k, v in [("u1", "red"), ("u2", "blue"), ("u3", "red")]:
            tin.pipe_input(k, v)
        assert d.create_output_topic("out", S, L).read_key_values_to_list() == [
            ("red", 1),
            ("blue", 1),
            ("red", 2),
        ]
        repartitioned = d.create_output_topic("app-by-colour-repartition", S, S).read_key_values_to_list()
        assert repartitioned == [("red", "red"), ("blue", "blue"), ("red", "red")]


def test_reduce_and_aggregate_with_timestamps():
    b = StreamsBuilder()
    grouped = b.stream("in", Consumed.with_(S, L)).group_by_key()
    grouped.reduce(
        lambda agg, v: agg + v, materialized=Materialized.as_("sum").with_value_serde(L)
    ).to_stream().to("sum", Produced.with_(S, L))
    grouped.aggregate(
        lambda: {"n": 0, "max": None},
        lambda k, v, agg: {"n": agg["n"] + 1, "max": v if agg["max"] is None else max(v, agg["max"])},
        materialized=Materialized.as_("stats").with_value_serde(J),
    ).to_stream().to("stats", Produced.with_(S, J))
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("in", S, L)
        tin.pipe_input("k", 5, 100)
        tin.pipe_input("k", 7, 50)  # out of order: the aggregate keeps the newest timestamp
        tin.pipe_input("j", 1, 60)
        sums = d.create_output_topic("sum", S, L).read_records_to_list()
        assert [(r.key, r.value, r.timestamp) for r in sums] == [("k", 5, 100), ("k", 12, 100), ("j", 1, 60)]
        stats = d.create_output_topic("stats", S, J).read_key_values_to_list()
        assert stats[-2:] == [("k", {"n": 2, "max": 7}), ("j", {"n": 1, "max": 1})]
        assert d.get_key_value_store("stats").get("k") == {"n": 2, "max": 7}


def test_changelog_topic_receives_store_updates():
    b = StreamsBuilder()
    b.stream("in", STR).group_by_key().count(materialized="counts")
    with TopologyTestDriver(b.build(), config("app")) as d:
        tin = d.create_input_topic("in", S, S)
        tin.pipe_input("a", "x", 10)
        tin.pipe_input("a", "x", 20)
        changelog = d.create_output_topic("app-counts-changelog", S, Serdes.bytes()).read_records_to_list()
        assert [r.key for r in changelog] == ["a", "a"]
        assert [r.timestamp for r in changelog] == [10, 20]


def test_record_cache_collapses_updates_until_commit():
    b = StreamsBuilder()
    b.stream("in", STR).group_by_key().count(materialized="counts").to_stream().to(
        "out", Produced.with_(S, L)
    )
    with TopologyTestDriver(b.build(), config(), auto_commit=False) as d:
        tin = d.create_input_topic("in", S, S)
        for k in ["a", "a", "b", "a", "b"]:
            tin.pipe_input(k, "x")
        out = d.create_output_topic("out", S, L)
        assert out.is_empty()  # everything is still in the record cache
        assert d.get_key_value_store("counts").get("a") == 3  # reads see cached values
        d.commit()
        assert sorted(out.read_key_values_to_list()) == [("a", 3), ("b", 2)]


def test_caching_disabled_forwards_every_update_even_without_commit():
    b = StreamsBuilder()
    b.stream("in", STR).group_by_key().count(
        materialized=Materialized.as_("counts").with_caching_disabled()
    ).to_stream().to("out", Produced.with_(S, L))
    with TopologyTestDriver(b.build(), config(), auto_commit=False) as d:
        tin = d.create_input_topic("in", S, S)
        for k in ["a", "a"]:
            tin.pipe_input(k, "x")
        assert d.create_output_topic("out", S, L).read_values_to_list() == [1, 2]


def test_in_memory_store_without_logging():
    b = StreamsBuilder()
    b.stream("in", STR).group_by_key().count(
        materialized=Materialized.as_("mem").in_memory().with_logging_disabled()
    )
    with TopologyTestDriver(b.build(), config("app")) as d:
        d.create_input_topic("in", S, S).pipe_input("a", "x")
        assert d.get_key_value_store("mem").get("a") == 1
        assert "app-mem-changelog" not in d.produced_topics()

"""describe() output, deterministic generated names and honoured explicit names."""

import pytest

from edge.dsl import Consumed, Grouped, Materialized, Named, Produced, StreamsBuilder
from edge.errors import TopologyError
from edge.serde import Serdes

S, L = Serdes.string(), Serdes.long()

WORDCOUNT = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [streams-plaintext-input])
      --> KSTREAM-FLATMAPVALUES-0000000001
    Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])
      --> KSTREAM-KEY-SELECT-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])
      --> counts-store-repartition-filter
      <-- KSTREAM-FLATMAPVALUES-0000000001
    Processor: counts-store-repartition-filter (stores: [])
      --> counts-store-repartition-sink
      <-- KSTREAM-KEY-SELECT-0000000002
    Sink: counts-store-repartition-sink (topic: counts-store-repartition)
      <-- counts-store-repartition-filter

  Sub-topology: 1
    Source: counts-store-repartition-source (topics: [counts-store-repartition])
      --> KSTREAM-AGGREGATE-0000000003
    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [counts-store])
      --> KTABLE-TOSTREAM-0000000007
      <-- counts-store-repartition-source
    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])
      --> KSTREAM-SINK-0000000008
      <-- KSTREAM-AGGREGATE-0000000003
    Sink: KSTREAM-SINK-0000000008 (topic: streams-wordcount-output)
      <-- KTABLE-TOSTREAM-0000000007

"""


def word_count():
    b = StreamsBuilder()
    (
        b.stream("streams-plaintext-input", Consumed.with_(S, S))
        .flat_map_values(str.split)
        .group_by(lambda k, w: w)
        .count(materialized=Materialized.as_("counts-store"))
        .to_stream()
        .to("streams-wordcount-output", Produced.with_(S, L))
    )
    return b.build()


def test_word_count_describe_matches_kafka_streams():
    assert str(word_count().describe()) == WORDCOUNT


def test_names_are_deterministic_across_builds():
    assert word_count().describe() == word_count().describe()


def test_generated_names_for_unnamed_aggregation():
    b = StreamsBuilder()
    b.stream("in").select_key(lambda k, v: v).group_by_key().count()
    topo = b.build()
    assert topo.store_names() == ["KSTREAM-AGGREGATE-STATE-STORE-0000000002"]
    assert set(topo.internal_topics) == {"KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition"}
    assert topo.changelog_topics("app") == {
        "KSTREAM-AGGREGATE-STATE-STORE-0000000002": "app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog"
    }


def test_explicit_names_are_honoured_and_do_not_shift_others():
    def build(named):
        b = StreamsBuilder()
        s = b.stream("in", Consumed.as_("source") if named else None)
        s = s.filter(lambda k, v: True, named=Named.as_("keep-all") if named else None)
        s.group_by(lambda k, v: v, Grouped.as_("grouped")).count(
            named="counter" if named else None
        ).to_stream().to("out")
        return b.build()

    named = str(build(True).describe())
    for name in [
        "Source: source ",
        "Processor: keep-all ",
        "Processor: counter ",
        "grouped-repartition-sink",
    ]:
        assert name in named
    unnamed = str(build(False).describe())
    # the to_stream node keeps its generated index whether or not earlier nodes were named
    tostream = [line for line in unnamed.splitlines() if "Processor: KTABLE-TOSTREAM" in line]
    assert tostream and tostream[0].split()[1] in named


def test_global_table_describe():
    b = StreamsBuilder()
    b.global_table("products", Consumed.with_(S, S))
    text = str(b.build().describe())
    assert "Sub-topology: 0 for global store (will not generate tasks)" in text
    assert "Processor: KTABLE-SOURCE-0000000002 (stores: [products-STATE-STORE-0000000000])" in text


def test_table_join_sub_topology_contains_both_stores():
    b = StreamsBuilder()
    left, right = b.table("l"), b.table("r")
    left.join(right, lambda a, c: a).to_stream().to("out")
    topo = b.build()
    (st,) = topo.subtopologies()
    assert set(st.stores) == {"l-STATE-STORE-0000000000", "r-STATE-STORE-0000000003"}
    assert st.source_topics == ["l", "r"]


def test_user_mistakes_raise_topology_errors():
    b = StreamsBuilder()
    s = b.stream("in")
    with pytest.raises(TopologyError, match="legal Kafka topic name"):
        s.to("bad topic!")
    with pytest.raises(TopologyError, match="already a source"):
        b.stream("in")
    s.filter(lambda k, v: True, named="dup")
    with pytest.raises(TopologyError, match="used twice"):
        s.filter(lambda k, v: True, named="dup")
    with pytest.raises(TopologyError, match="KTable or GlobalKTable"):
        s.join(s, lambda a, c: a)

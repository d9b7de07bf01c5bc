"""Kafka Streams is the spec: programs ported from Kafka's own tests (KStreamKTableJoinTest,
KStreamImplTest, StreamsBuilderTest, KTableFilterTest, RepartitionOptimizingTest) must print Kafka's
describe() text line for line and produce Kafka's outputs, and every behaviour that once differed
from Kafka Streams must now be Kafka's.

The expected topology strings below are copied verbatim from Kafka's tests (apache/kafka, trunk).
"""

import logging

import pytest

from edge.dsl import (
    Consumed,
    EmitStrategy,
    Grouped,
    Joined,
    Materialized,
    Named,
    Produced,
    Repartitioned,
    StreamsBuilder,
    TimeWindows,
)
from edge.errors import TopologyError
from edge.processor import StreamsConfig
from edge.processor.api import Processor
from edge.processor.record import Change
from edge.serde import Serdes
from edge.serde.windowed import TimeWindow, Windowed
from edge.state.versioned import Stores
from edge.testing import TopologyTestDriver
from edge.topology.graph import ProcessorGraphNode

S, L, INT = Serdes.string(), Serdes.long(), Serdes.int()
STR = Consumed.with_(S, S)


def config(app="faithful", **kw):
    return StreamsConfig(app, default_key_serde=S, default_value_serde=S, **kw)


def dropped(driver) -> int:
    return sum(t.dropped_records for t in driver._all_tasks())


def records(driver, topic, key_serde=S, value_serde=S):
    return [
        (r.key, r.value, r.timestamp)
        for r in driver.create_output_topic(topic, key_serde, value_serde).read_records_to_list()
    ]


# KStreamKTableJoinTest.expectedTopologyWithGeneratedRepartitionTopicNames
REKEYED_JOIN_GENERATED = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])\n"
    "      --> KSTREAM-MAP-0000000007\n"
    "    Processor: KSTREAM-MAP-0000000007 (stores: [])\n"
    "      --> KSTREAM-FILTER-0000000009\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    "    Processor: KSTREAM-FILTER-0000000009 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000008\n"
    "      <-- KSTREAM-MAP-0000000007\n"
    "    Sink: KSTREAM-SINK-0000000008 (topic: KSTREAM-MAP-0000000007-repartition)\n"
    "      <-- KSTREAM-FILTER-0000000009\n"
    "\n"
    "  Sub-topology: 1\n"
    "    Source: KSTREAM-SOURCE-0000000010 (topics: [KSTREAM-MAP-0000000007-repartition])\n"
    "      --> KSTREAM-JOIN-0000000011, KSTREAM-JOIN-0000000016\n"
    "    Processor: KSTREAM-JOIN-0000000011 (stores: [topic2-STATE-STORE-0000000001])\n"
    "      --> KSTREAM-SINK-0000000012\n"
    "      <-- KSTREAM-SOURCE-0000000010\n"
    "    Processor: KSTREAM-JOIN-0000000016 (stores: [topic3-STATE-STORE-0000000004])\n"
    "      --> KSTREAM-SINK-0000000017\n"
    "      <-- KSTREAM-SOURCE-0000000010\n"
    "    Source: KSTREAM-SOURCE-0000000002 (topics: [topic2])\n"
    "      --> KTABLE-SOURCE-0000000003\n"
    "    Source: KSTREAM-SOURCE-0000000005 (topics: [topic3])\n"
    "      --> KTABLE-SOURCE-0000000006\n"
    "    Sink: KSTREAM-SINK-0000000012 (topic: out-one)\n"
    "      <-- KSTREAM-JOIN-0000000011\n"
    "    Sink: KSTREAM-SINK-0000000017 (topic: out-two)\n"
    "      <-- KSTREAM-JOIN-0000000016\n"
    "    Processor: KTABLE-SOURCE-0000000003 (stores: [topic2-STATE-STORE-0000000001])\n"
    "      --> none\n"
    "      <-- KSTREAM-SOURCE-0000000002\n"
    "    Processor: KTABLE-SOURCE-0000000006 (stores: [topic3-STATE-STORE-0000000004])\n"
    "      --> none\n"
    "      <-- KSTREAM-SOURCE-0000000005\n"
    "\n"
)


# KStreamKTableJoinTest.expectedTopologyWithUserProvidedRepartitionTopicNames
REKEYED_JOIN_NAMED = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])\n"
    "      --> KSTREAM-MAP-0000000007\n"
    "    Processor: KSTREAM-MAP-0000000007 (stores: [])\n"
    "      --> first-join-repartition-filter, second-join-repartition-filter\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    "    Processor: first-join-repartition-filter (stores: [])\n"
    "      --> first-join-repartition-sink\n"
    "      <-- KSTREAM-MAP-0000000007\n"
    "    Processor: second-join-repartition-filter (stores: [])\n"
    "      --> second-join-repartition-sink\n"
    "      <-- KSTREAM-MAP-0000000007\n"
    "    Sink: first-join-repartition-sink (topic: first-join-repartition)\n"
    "      <-- first-join-repartition-filter\n"
    "    Sink: second-join-repartition-sink (topic: second-join-repartition)\n"
    "      <-- second-join-repartition-filter\n"
    "\n"
    "  Sub-topology: 1\n"
    "    Source: first-join-repartition-source (topics: [first-join-repartition])\n"
    "      --> first-join\n"
    "    Source: KSTREAM-SOURCE-0000000002 (topics: [topic2])\n"
    "      --> KTABLE-SOURCE-0000000003\n"
    "    Processor: first-join (stores: [topic2-STATE-STORE-0000000001])\n"
    "      --> KSTREAM-SINK-0000000012\n"
    "      <-- first-join-repartition-source\n"
    "    Sink: KSTREAM-SINK-0000000012 (topic: out-one)\n"
    "      <-- first-join\n"
    "    Processor: KTABLE-SOURCE-0000000003 (stores: [topic2-STATE-STORE-0000000001])\n"
    "      --> none\n"
    "      <-- KSTREAM-SOURCE-0000000002\n"
    "\n"
    "  Sub-topology: 2\n"
    "    Source: second-join-repartition-source (topics: [second-join-repartition])\n"
    "      --> second-join\n"
    "    Source: KSTREAM-SOURCE-0000000005 (topics: [topic3])\n"
    "      --> KTABLE-SOURCE-0000000006\n"
    "    Processor: second-join (stores: [topic3-STATE-STORE-0000000004])\n"
    "      --> KSTREAM-SINK-0000000017\n"
    "      <-- second-join-repartition-source\n"
    "    Sink: KSTREAM-SINK-0000000017 (topic: out-two)\n"
    "      <-- second-join\n"
    "    Processor: KTABLE-SOURCE-0000000006 (stores: [topic3-STATE-STORE-0000000004])\n"
    "      --> none\n"
    "      <-- KSTREAM-SOURCE-0000000005\n"
    "\n"
)


# KStreamImplTest.shouldNotMaterializedKTableFromKStream
TO_TABLE_NOT_MATERIALIZED = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n"
    "      --> KSTREAM-TOTABLE-0000000001\n"
    "    Processor: KSTREAM-TOTABLE-0000000001 (stores: [])\n"
    "      --> KTABLE-TOSTREAM-0000000003\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    "    Processor: KTABLE-TOSTREAM-0000000003 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000004\n"
    "      <-- KSTREAM-TOTABLE-0000000001\n"
    "    Sink: KSTREAM-SINK-0000000004 (topic: output)\n"
    "      <-- KTABLE-TOSTREAM-0000000003\n"
    "\n"
)


# KStreamImplTest.shouldSupportKeyChangeKTableFromKStream
TO_TABLE_KEY_CHANGE = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n"
    "      --> KSTREAM-MAP-0000000001\n"
    "    Processor: KSTREAM-MAP-0000000001 (stores: [])\n"
    "      --> KSTREAM-FILTER-0000000005\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    "    Processor: KSTREAM-FILTER-0000000005 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000004\n"
    "      <-- KSTREAM-MAP-0000000001\n"
    "    Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-TOTABLE-0000000002-repartition)\n"
    "      <-- KSTREAM-FILTER-0000000005\n"
    "\n"
    "  Sub-topology: 1\n"
    "    Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-TOTABLE-0000000002-repartition])\n"
    "      --> KSTREAM-TOTABLE-0000000002\n"
    "    Processor: KSTREAM-TOTABLE-0000000002 (stores: [])\n"
    "      --> KTABLE-TOSTREAM-0000000007\n"
    "      <-- KSTREAM-SOURCE-0000000006\n"
    "    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000008\n"
    "      <-- KSTREAM-TOTABLE-0000000002\n"
    "    Sink: KSTREAM-SINK-0000000008 (topic: output)\n"
    "      <-- KTABLE-TOSTREAM-0000000007\n"
    "\n"
)


# KStreamImplTest.shouldSupportTableTableJoinWithKStreamToKTable
TO_TABLE_TABLE_JOIN = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KSTREAM-SOURCE-0000000000 (topics: [left])\n"
    "      --> KSTREAM-TOTABLE-0000000001\n"
    "    Source: KSTREAM-SOURCE-0000000003 (topics: [right])\n"
    "      --> KSTREAM-TOTABLE-0000000004\n"
    "    Processor: KSTREAM-TOTABLE-0000000001 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000002])\n"
    "      --> KTABLE-JOINTHIS-0000000007\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    "    Processor: KSTREAM-TOTABLE-0000000004 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000005])\n"
    "      --> KTABLE-JOINOTHER-0000000008\n"
    "      <-- KSTREAM-SOURCE-0000000003\n"
    "    Processor: KTABLE-JOINOTHER-0000000008 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000002])\n"
    "      --> KTABLE-MERGE-0000000006\n"
    "      <-- KSTREAM-TOTABLE-0000000004\n"
    "    Processor: KTABLE-JOINTHIS-0000000007 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000005])\n"
    "      --> KTABLE-MERGE-0000000006\n"
    "      <-- KSTREAM-TOTABLE-0000000001\n"
    "    Processor: KTABLE-MERGE-0000000006 (stores: [])\n"
    "      --> KTABLE-TOSTREAM-0000000009\n"
    "      <-- KTABLE-JOINTHIS-0000000007, KTABLE-JOINOTHER-0000000008\n"
    "    Processor: KTABLE-TOSTREAM-0000000009 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000010\n"
    "      <-- KTABLE-MERGE-0000000006\n"
    "    Sink: KSTREAM-SINK-0000000010 (topic: output)\n"
    "      <-- KTABLE-TOSTREAM-0000000009\n"
    "\n"
)


# KStreamImplTest.shouldSupportStreamTableJoinWithKStreamToKTable
TO_TABLE_STREAM_JOIN = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KSTREAM-SOURCE-0000000000 (topics: [streamTopic])\n"
    "      --> KSTREAM-JOIN-0000000004\n"
    "    Processor: KSTREAM-JOIN-0000000004 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000003])\n"
    "      --> KSTREAM-SINK-0000000005\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    "    Source: KSTREAM-SOURCE-0000000001 (topics: [tableTopic])\n"
    "      --> KSTREAM-TOTABLE-0000000002\n"
    "    Sink: KSTREAM-SINK-0000000005 (topic: output)\n"
    "      <-- KSTREAM-JOIN-0000000004\n"
    "    Processor: KSTREAM-TOTABLE-0000000002 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000003])\n"
    "      --> none\n"
    "      <-- KSTREAM-SOURCE-0000000001\n"
    "\n"
)


# KStreamImplTest.shouldSupportGroupByCountWithKStreamToKTable
TO_TABLE_GROUP_BY_COUNT = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n"
    "      --> KSTREAM-TOTABLE-0000000001\n"
    "    Processor: KSTREAM-TOTABLE-0000000001 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000002])\n"
    "      --> KTABLE-SELECT-0000000003\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    "    Processor: KTABLE-SELECT-0000000003 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000005\n"
    "      <-- KSTREAM-TOTABLE-0000000001\n"
    "    Sink: KSTREAM-SINK-0000000005 (topic: KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition)\n"
    "      <-- KTABLE-SELECT-0000000003\n"
    "\n"
    "  Sub-topology: 1\n"
    "    Source: KSTREAM-SOURCE-0000000006 (topics: [KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition])\n"
    "      --> KTABLE-AGGREGATE-0000000007\n"
    "    Processor: KTABLE-AGGREGATE-0000000007 (stores: [KTABLE-AGGREGATE-STATE-STORE-0000000004])\n"
    "      --> KTABLE-TOSTREAM-0000000008\n"
    "      <-- KSTREAM-SOURCE-0000000006\n"
    "    Processor: KTABLE-TOSTREAM-0000000008 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000009\n"
    "      <-- KTABLE-AGGREGATE-0000000007\n"
    "    Sink: KSTREAM-SINK-0000000009 (topic: output)\n"
    "      <-- KTABLE-TOSTREAM-0000000008\n"
    "\n"
)


# KStreamImplTest.shouldSupportTriggerMaterializedWithKTableFromKStream
TO_TABLE_MATERIALIZED_MAP_VALUES = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n"
    "      --> KSTREAM-TOTABLE-0000000001\n"
    "    Processor: KSTREAM-TOTABLE-0000000001 (stores: [])\n"
    "      --> KTABLE-MAPVALUES-0000000003\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    "    Processor: KTABLE-MAPVALUES-0000000003 (stores: [store])\n"
    "      --> KTABLE-TOSTREAM-0000000004\n"
    "      <-- KSTREAM-TOTABLE-0000000001\n"
    "    Processor: KTABLE-TOSTREAM-0000000004 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000005\n"
    "      <-- KTABLE-MAPVALUES-0000000003\n"
    "    Sink: KSTREAM-SINK-0000000005 (topic: output)\n"
    "      <-- KTABLE-TOSTREAM-0000000004\n"
    "\n"
)


# -- describe() and outputs of Kafka's own test programs ----------------------------------------------
def test_rekeyed_stream_joined_with_two_tables_reuses_one_repartition_topic():
    """KStreamKTableJoinTest.shouldReuseRepartitionTopicWithGeneratedName (failed at build() before)."""
    b = StreamsBuilder()
    stream_a = b.stream("topic", STR)
    table_b = b.table("topic2", STR)
    table_c = b.table("topic3", STR)
    rekeyed = stream_a.map(lambda k, v: (v, k))
    rekeyed.join(table_b, lambda v1, v2: v1 + v2).to("out-one")
    rekeyed.join(table_c, lambda v1, v2: v1 + v2).to("out-two")
    topology = b.build()
    assert str(topology.describe()) == REKEYED_JOIN_GENERATED
    assert topology.internal_topics == {"KSTREAM-MAP-0000000007-repartition"}
    with TopologyTestDriver(topology, config()) as d:
        d.create_input_topic("topic2", S, S).pipe_input("v", "B", 1)
        d.create_input_topic("topic3", S, S).pipe_input("v", "C", 2)
        d.create_input_topic("topic", S, S).pipe_input("k", "v", 3)
        assert records(d, "out-one") == [("v", "kB", 3)]
        assert records(d, "out-two") == [("v", "kC", 3)]


def test_named_stream_table_joins_get_their_own_repartition_topics_without_suffix():
    """KStreamKTableJoinTest.shouldCreateRepartitionTopicsWithUserProvidedName: ``<name>-repartition``
    (no ``-left``), named with Joined.with_(..., name)."""
    b = StreamsBuilder()
    stream_a = b.stream("topic", STR)
    table_b = b.table("topic2", STR)
    table_c = b.table("topic3", STR)
    rekeyed = stream_a.map(lambda k, v: (v, k))
    rekeyed.join(table_b, lambda v1, v2: v1 + v2, joined=Joined.with_(S, S, S, "first-join")).to("out-one")
    rekeyed.join(table_c, lambda v1, v2: v1 + v2, joined=Joined.with_(S, S, S, "second-join")).to("out-two")
    topology = b.build()
    assert str(topology.describe()) == REKEYED_JOIN_NAMED
    assert topology.internal_topics == {"first-join-repartition", "second-join-repartition"}


def test_to_table_is_not_materialized_unless_needed():
    """KStreamImplTest.shouldNotMaterializedKTableFromKStream."""
    b = StreamsBuilder()
    b.stream("input", STR).to_table().to_stream().to("output")
    topology = b.build()
    assert str(topology.describe()) == TO_TABLE_NOT_MATERIALIZED
    assert topology.store_names() == []
    with TopologyTestDriver(topology, config()) as d:
        inp = d.create_input_topic("input", S, S)
        for key, value, ts in [
            ("A", "01", 5),
            ("B", "02", 100),
            ("C", "03", 0),
            ("D", "04", 0),
            ("A", "05", 10),
            ("A", "06", 8),
        ]:
            inp.pipe_input(key, value, ts)
        assert records(d, "output") == [
            ("A", "01", 5),
            ("B", "02", 100),
            ("C", "03", 0),
            ("D", "04", 0),
            ("A", "05", 10),
            ("A", "06", 8),
        ]


def test_to_table_after_a_key_change_repartitions_under_the_totable_name():
    """KStreamImplTest.shouldSupportKeyChangeKTableFromKStream."""
    b = StreamsBuilder()
    b.stream("input", STR).map(lambda k, v: (ord(k[0]) - ord("A"), v)).to_table(
        materialized=Materialized.with_(INT, None)
    ).to_stream().to("output")
    topology = b.build()
    assert str(topology.describe()) == TO_TABLE_KEY_CHANGE
    with TopologyTestDriver(topology, config()) as d:
        inp = d.create_input_topic("input", S, S)
        for key, value, ts in [
            ("A", "01", 5),
            ("B", "02", 100),
            ("C", "03", 0),
            ("D", "04", 0),
            ("A", "05", 10),
            ("A", "06", 8),
        ]:
            inp.pipe_input(key, value, ts)
        assert records(d, "output", INT) == [
            (0, "01", 5),
            (1, "02", 100),
            (2, "03", 0),
            (3, "04", 0),
            (0, "05", 10),
            (0, "06", 8),
        ]


def test_table_table_join_of_to_tables():
    """KStreamImplTest.shouldSupportTableTableJoinWithKStreamToKTable."""
    b = StreamsBuilder()
    table1 = b.stream("left", STR).to_table()
    table2 = b.stream("right", STR).to_table()
    table1.join(table2, lambda a, c: f"{a}+{c}").to_stream().to("output")
    topology = b.build()
    assert str(topology.describe()) == TO_TABLE_TABLE_JOIN
    with TopologyTestDriver(topology, config()) as d:
        left, right = d.create_input_topic("left", S, S), d.create_input_topic("right", S, S)
        out = d.create_output_topic("output", S, S)
        right.pipe_input("lhs1", "rhsValue1")
        right.pipe_input("rhs2", "rhsValue2")
        right.pipe_input("lhs3", "rhsValue3")
        assert out.read_key_values_to_map() == {}
        left.pipe_input("lhs1", "lhsValue1")
        left.pipe_input("lhs2", "lhsValue2")
        assert out.read_key_values_to_map() == {"lhs1": "lhsValue1+rhsValue1"}
        left.pipe_input("lhs3", "lhsValue3")
        assert out.read_key_values_to_map() == {"lhs3": "lhsValue3+rhsValue3"}
        left.pipe_input("lhs1", "lhsValue4")
        assert out.read_key_values_to_map() == {"lhs1": "lhsValue4+rhsValue1"}


def test_stream_table_join_with_a_to_table():
    """KStreamImplTest.shouldSupportStreamTableJoinWithKStreamToKTable (node order: Kafka's sort)."""
    b = StreamsBuilder()
    stream = b.stream("streamTopic", STR)
    table = b.stream("tableTopic", STR).to_table()
    stream.join(table, lambda a, c: f"{a}+{c}").to("output")
    topology = b.build()
    assert str(topology.describe()) == TO_TABLE_STREAM_JOIN
    with TopologyTestDriver(topology, config()) as d:
        left, right = d.create_input_topic("streamTopic", S, S), d.create_input_topic("tableTopic", S, S)
        out = d.create_output_topic("output", S, S)
        right.pipe_input("lhs1", "rhsValue1")
        right.pipe_input("rhs2", "rhsValue2")
        right.pipe_input("lhs3", "rhsValue3")
        assert out.read_key_values_to_map() == {}
        left.pipe_input("lhs1", "lhsValue1")
        left.pipe_input("lhs2", "lhsValue2")
        assert out.read_key_values_to_map() == {"lhs1": "lhsValue1+rhsValue1"}
        left.pipe_input("lhs3", "lhsValue3")
        assert out.read_key_values_to_map() == {"lhs3": "lhsValue3+rhsValue3"}
        left.pipe_input("lhs1", "lhsValue4")
        assert out.read_key_values_to_map() == {"lhs1": "lhsValue4+rhsValue1"}


def test_table_group_by_count_of_a_to_table():
    """KStreamImplTest.shouldSupportGroupByCountWithKStreamToKTable: group_by materializes the table
    (old values), the re-grouping repartition has no filter node and sink/source come before the
    aggregate's name."""
    b = StreamsBuilder()
    b.stream("input", STR).to_table().group_by(
        lambda k, v: (v, v), Grouped.with_(S, S)
    ).count().to_stream().to("output", Produced.with_(S, L))
    topology = b.build()
    assert str(topology.describe()) == TO_TABLE_GROUP_BY_COUNT
    with TopologyTestDriver(topology, config()) as d:
        inp = d.create_input_topic("input", S, S)
        for key, value, ts in [
            ("A", "green", 10),
            ("B", "green", 9),
            ("A", "blue", 12),
            ("C", "yellow", 15),
            ("D", "green", 11),
        ]:
            inp.pipe_input(key, value, ts)
        assert records(d, "output", S, L) == [
            ("green", 1, 10),
            ("green", 2, 10),
            ("green", 1, 12),
            ("blue", 1, 12),
            ("yellow", 1, 15),
            ("green", 2, 12),
        ]


def test_materialized_map_values_of_an_unmaterialized_to_table():
    """KStreamImplTest.shouldSupportTriggerMaterializedWithKTableFromKStream."""
    b = StreamsBuilder()
    b.stream("input", STR).to_table().map_values(
        lambda v: ord(v[0]) - ord("a"),
        materialized=Materialized.as_("store").with_key_serde(S).with_value_serde(INT),
    ).to_stream().to("output")
    topology = b.build()
    assert str(topology.describe()) == TO_TABLE_MATERIALIZED_MAP_VALUES
    with TopologyTestDriver(topology, config()) as d:
        inp = d.create_input_topic("input", S, S)
        for key, value, ts in [
            ("A", "green", 10),
            ("B", "green", 9),
            ("A", "blue", 12),
            ("C", "yellow", 15),
            ("D", "green", 11),
        ]:
            inp.pipe_input(key, value, ts)
        assert d.get_key_value_store("store").to_dict() == {"A": 1, "B": 6, "C": 24, "D": 6}
        assert records(d, "output", S, INT) == [
            ("A", 6, 10),
            ("B", 6, 9),
            ("A", 1, 12),
            ("C", 24, 15),
            ("D", 6, 11),
        ]


# -- naming ---------------------------------------------------------------------------------------------
def test_explicit_names_burn_their_index_like_kafka():
    """Kafka's NamedInternal.orElseGenerateWithPrefix burns the index of a named processor, so naming one
    operator does not renumber the others; a Materialized.as_ store takes no index."""

    def build(named: bool) -> str:
        b = StreamsBuilder()
        s = b.stream("in", Consumed.as_("src") if named else STR)
        s = s.filter(lambda k, v: True, named=Named.as_("keep") if named else None)
        s.group_by_key().count(named="counter" if named else None, materialized="counts").to_stream().to(
            "out"
        )
        return str(b.build().describe())

    unnamed, named = build(False), build(True)
    assert "KSTREAM-FILTER-0000000001" in unnamed and "Processor: keep (" in named
    # counts takes no index: aggregate 2, to_stream 3, sink 4 in both programs
    for name in ("KTABLE-TOSTREAM-0000000003", "KSTREAM-SINK-0000000004"):
        assert name in unnamed and name in named
    assert "KSTREAM-AGGREGATE-0000000002" in unnamed and "Processor: counter (stores: [counts])" in named


def test_unnamed_materialized_reserves_a_store_index_without_materializing():
    """KTableImpl.doFilter: a Materialized without a name burns a store name, the filter stays
    unmaterialized (queryable only with a name)."""
    b = StreamsBuilder()
    t = b.table("t", STR, "t-store")
    t.filter(lambda k, v: True, materialized=Materialized.with_(S, S)).to_stream().to("out")
    topology = b.build()
    assert topology.store_names() == ["t-store"]
    # source 0, table-source 1, filter store 2 (burnt), filter 3, to_stream 4
    assert "Processor: KTABLE-FILTER-0000000003 (stores: [])" in str(topology.describe())


@pytest.mark.parametrize(
    "make",
    [
        lambda b: b.stream("bad topic"),
        lambda b: b.stream("in").to("x" * 250),
        lambda b: b.stream("in").to(".."),
        lambda b: b.table("t", materialized="store/with/slash"),
        lambda b: b.stream("in").group_by_key().count(materialized="bad store!"),
        lambda b: b.stream("in").select_key(lambda k, v: v).repartition(Repartitioned.as_("bad name")),
        lambda b: b.stream("in").filter(lambda k, v: True, named="bad name"),
    ],
)
def test_illegal_topic_store_and_node_names_fail_when_declared(make):
    with pytest.raises(TopologyError, match=r"name .* (illegal|not a legal)"):
        make(StreamsBuilder())


def test_processor_api_store_names_are_validated_at_build():
    from edge.state import key_value_store_builder
    from edge.topology import Topology

    with pytest.raises(TopologyError, match="'bad store!'"):
        Topology().add_state_store(key_value_store_builder("bad store!", S, S))


# -- KTable filter and old values -----------------------------------------------------------------------
def _filter_program(materialize_source: bool) -> StreamsBuilder:
    b = StreamsBuilder()
    table = b.table("t", Consumed.with_(S, INT), "source-store" if materialize_source else None)
    table.filter(lambda k, v: v % 2 == 0).to_stream().to("out", Produced.with_(S, INT))
    return b


def test_ktable_filter_without_old_values_sends_a_tombstone_per_rejected_record():
    """KTableFilterTest.doTestNotSendingOldValue: the parent is not materialized."""
    with TopologyTestDriver(_filter_program(False).build(), config()) as d:
        inp = d.create_input_topic("t", S, INT)
        for key, value in [("A", 1), ("B", 2), ("C", 3), ("A", 4), ("B", 5), ("C", None)]:
            inp.pipe_input(key, value, 0)
        assert d.create_output_topic("out", S, INT).read_key_values_to_list() == [
            ("A", None),
            ("B", 2),
            ("C", None),
            ("A", 4),
            ("B", None),
            ("C", None),
        ]


def test_ktable_filter_with_old_values_skips_records_that_stay_out():
    with TopologyTestDriver(_filter_program(True).build(), config()) as d:
        inp = d.create_input_topic("t", S, INT)
        for key, value in [("A", 1), ("B", 2), ("C", 3), ("A", 4), ("B", 5), ("C", None)]:
            inp.pipe_input(key, value, 0)
        assert d.create_output_topic("out", S, INT).read_key_values_to_list() == [
            ("B", 2),
            ("A", 4),
            ("B", None),
        ]


# -- null keys and values: dropped, logged, counted -----------------------------------------------------
def test_repartition_drops_null_keys_with_a_warning_and_the_metric(caplog):
    b = StreamsBuilder()
    b.stream("in", STR).select_key(lambda k, v: None if v == "x" else v).repartition().to("out")
    topology = b.build()
    assert "Processor: KSTREAM-FILTER-0000000004 (stores: [])" in str(topology.describe())
    with TopologyTestDriver(topology, config()) as d, caplog.at_level(logging.WARNING):
        inp = d.create_input_topic("in", S, S)
        inp.pipe_input("a", "x", 1)
        inp.pipe_input("b", "y", 2)
        assert records(d, "out") == [("y", "y", 2)]
        assert dropped(d) == 1
    assert "Skipping record due to null key" in caplog.text


def test_repartition_keeps_null_keys_for_a_left_join_downstream():
    b = StreamsBuilder()
    table = b.table("t", STR)
    b.stream("in", STR).select_key(lambda k, v: None).repartition().left_join(
        table, lambda v, t: f"{v}+{t}"
    ).to("out")
    with TopologyTestDriver(b.build(), config()) as d:
        d.create_input_topic("in", S, S).pipe_input("a", "x", 1)
        assert records(d, "out") == [(None, "x+None", 1)]
        assert dropped(d) == 0


def test_stream_table_join_skips_and_counts_null_values_and_null_lookup_keys(caplog):
    b = StreamsBuilder()
    table = b.table("t", STR)
    globals_ = b.global_table("g", STR)
    stream = b.stream("in", STR)
    stream.join(table, lambda v, t: f"{v}+{t}").to("out")
    stream.left_join(globals_, lambda v, g: f"{v}+{g}", key_selector=lambda k, v: None if v == "n" else k).to(
        "gout"
    )
    with TopologyTestDriver(b.build(), config()) as d, caplog.at_level(logging.WARNING):
        d.create_input_topic("t", S, S).pipe_input("a", "T", 0)
        inp = d.create_input_topic("in", S, S)
        inp.pipe_input("a", None, 1)  # null value: both joins skip it
        inp.pipe_input("a", "n", 2)  # null global lookup key: the left join joins null (Kafka 4.1)
        inp.pipe_input("a", "v", 3)
        assert records(d, "out") == [("a", "n+T", 2), ("a", "v+T", 3)]
        assert records(d, "gout") == [("a", "n+None", 2), ("a", "v+None", 3)]
        assert dropped(d) == 2
    assert "Skipping record due to null join key or value" in caplog.text


def test_aggregation_and_table_source_null_keys_are_counted():
    b = StreamsBuilder()
    b.stream("in", STR).group_by_key().count(materialized="c")
    b.table("t", STR, "t-store")
    with TopologyTestDriver(b.build(), config()) as d:
        d.create_input_topic("in", S, S).pipe_input(None, "v", 1)
        d.create_input_topic("in", S, S).pipe_input("k", None, 2)
        d.create_input_topic("t", S, S).pipe_input(None, "v", 3)
        assert dropped(d) == 3


# -- KTable.group_by selector ----------------------------------------------------------------------------
def test_table_group_by_selector_must_return_a_pair():
    b = StreamsBuilder()
    b.table("t", STR).group_by(lambda k, v: v, Grouped.as_("regroup")).count()
    with (
        TopologyTestDriver(b.build(), config()) as d,
        pytest.raises(
            Exception, match=r"group_by \(regroup\): the selector must return a \(key, value\) pair"
        ),
    ):
        d.create_input_topic("t", S, S).pipe_input("k", "ab", 1)


# -- TestOutputTopic -----------------------------------------------------------------------------------
def test_read_key_values_to_map_keeps_tombstoned_keys():
    b = StreamsBuilder()
    b.stream("in", STR).to("out")
    with TopologyTestDriver(b.build(), config()) as d:
        inp = d.create_input_topic("in", S, S)
        inp.pipe_input("a", "1")
        inp.pipe_input("b", "2")
        inp.pipe_input("a", None)
        assert d.create_output_topic("out", S, S).read_key_values_to_map() == {"a": None, "b": "2"}
        inp.pipe_input(None, "x")
        with pytest.raises(ValueError, match="null key"):
            d.create_output_topic("out", S, S).read_key_values_to_map()


# -- headers through the cache; production errors --------------------------------------------------------
def test_cache_flushed_table_updates_keep_the_record_headers():
    b = StreamsBuilder()
    b.stream("in", STR).group_by_key().reduce(lambda a, c: a + c, materialized="r").to_stream().to("out")
    with TopologyTestDriver(b.build(), config(cache_max_bytes=1 << 20)) as d:
        d.create_input_topic("in", S, S).pipe_input("k", "v", 1, [("trace", b"t-1")])
        (rec,) = d.create_output_topic("out", S, S).read_records_to_list()
        assert (rec.key, rec.value, list(rec.headers)) == ("k", "v", [("trace", b"t-1")])


class _Failing:
    def serialize(self, topic, value):
        if value == "bad":
            raise ValueError("cannot encode 'bad'")
        return S.serialize(topic, value)

    def deserialize(self, topic, data):
        return S.deserialize(topic, data)


def test_production_exception_handler_continue_drops_unserializable_records():
    b = StreamsBuilder()
    b.stream("in", STR).to("out", Produced.with_(S, _Failing()))
    with TopologyTestDriver(b.build(), config(production_exception_handler="continue")) as d:
        inp = d.create_input_topic("in", S, S)
        inp.pipe_input("a", "bad")
        inp.pipe_input("b", "good")
        assert d.create_output_topic("out", S, S).read_key_values_to_list() == [("b", "good")]
        assert dropped(d) == 1


def test_production_exception_handler_fail_names_sink_and_topic():
    b = StreamsBuilder()
    b.stream("in", STR).to("out", Produced.with_(S, _Failing()))
    with (
        TopologyTestDriver(b.build(), config()) as d,
        pytest.raises(
            Exception, match="could not serialize a record for sink 'KSTREAM-SINK-0000000001', topic 'out'"
        ),
    ):
        d.create_input_topic("in", S, S).pipe_input("a", "bad")


def test_runtime_config_takes_production_handler_and_optimization():
    from edge.runtime.config import StreamsConfig as RuntimeConfig
    from edge.runtime.config import StreamsConfigError

    cfg = RuntimeConfig.from_mapping(
        {
            "application.id": "app",
            "bootstrap.servers": "127.0.0.1:9092",
            "default.production.exception.handler": "continue",
            "topology.optimization": "all",
        }
    )
    assert cfg.default_production_exception_handler == "continue"
    assert cfg.topology_optimization == "all"
    for key, value in (("default.production.exception.handler", "dlq"), ("topology.optimization", "fast")):
        with pytest.raises(StreamsConfigError, match=key if "handler" in key else "topology.optimization"):
            RuntimeConfig.from_mapping({"application.id": "app", "bootstrap.servers": "h:1", key: value})


# -- small APIs --------------------------------------------------------------------------------------
def test_to_stream_with_a_key_mapper_rekeys_like_select_key():
    """KTable.toStream(KeyValueMapper) = toStream().selectKey(mapper)."""
    b = StreamsBuilder()
    b.table("t", STR, "t-store").to_stream(lambda k, v: f"{k}:{v}").to("out")
    topology = b.build()
    text = str(topology.describe())
    # source 0, table source 1 (a named store takes no index), to_stream 2, select_key 3, sink 4
    assert "KTABLE-TOSTREAM-0000000002" in text and "KSTREAM-KEY-SELECT-0000000003" in text
    with TopologyTestDriver(topology, config()) as d:
        d.create_input_topic("t", S, S).pipe_input("a", "1", 5)
        assert records(d, "out") == [("a:1", "1", 5)]


def test_topic_name_extractor_receives_the_record_context():
    seen = []

    def extractor(key, value, record_context):
        seen.append(
            (
                record_context.topic,
                record_context.partition,
                record_context.offset,
                list(record_context.headers),
            )
        )
        return f"{record_context.topic}-{value}"

    b = StreamsBuilder()
    b.stream("in", STR).to(extractor)
    b.stream("in2", STR).to(lambda k, v: f"two-{v}")  # 2-argument extractors keep working
    with TopologyTestDriver(b.build(), config()) as d:
        d.create_input_topic("in", S, S).pipe_input("k", "x", 1, [("h", b"1")])
        d.create_input_topic("in2", S, S).pipe_input("k", "y", 1)
        assert records(d, "in-x") == [("k", "x", 1)]
        assert records(d, "two-y") == [("k", "y", 1)]
    assert seen == [("in", 0, 0, [("h", b"1")])]


def test_topic_name_extractor_returning_an_illegal_name_fails_the_record():
    b = StreamsBuilder()
    b.stream("in", STR).to(lambda k, v: "bad topic")
    with (
        TopologyTestDriver(b.build(), config()) as d,
        pytest.raises(Exception, match="returned 'bad topic', not a legal topic name"),
    ):
        d.create_input_topic("in", S, S).pipe_input("k", "x")


# -- topology optimization ---------------------------------------------------------------------------
def test_reuse_source_topic_as_changelog_with_optimization_all():
    """StreamsBuilderTest.shouldReuseSourceTopicAsChangelogsWithOptimization20 and
    shouldNotReuseSourceTopicAsChangelogsByDefault."""
    b = StreamsBuilder()
    b.table("topic", materialized="store")
    plain = b.build()
    assert plain.changelog_topics("appId") == {"store": "appId-store-changelog"}
    b = StreamsBuilder()
    b.table("topic", materialized="store")
    optimized = b.build(optimization="all")
    assert optimized.changelog_topics("appId") == {}
    assert optimized.source_changelogs() == {"store": "topic"}
    pt = optimized.build_processor_topology(0, config("appId"))
    assert pt.changelog_topics == {"store": "topic"}
    assert not pt.stores["store"].logging_enabled


def test_repartition_topic_is_not_reused_as_changelog():
    """StreamsBuilderTest.shouldNotReuseRepartitionTopicAsChangelogs."""
    b = StreamsBuilder()
    b.stream("topic").repartition().to_table(materialized="store")
    topology = b.build({"topology.optimization": "all"})
    assert topology.changelog_topics("appId") == {"store": "appId-store-changelog"}


def test_merge_repartition_topics_after_one_key_change():
    """Kafka's optimizer: a selectKey feeding two aggregations writes one repartition topic, named after
    the first, read by both (RepartitionOptimizingTest's shape)."""

    def program() -> StreamsBuilder:
        b = StreamsBuilder()
        keyed = b.stream("input", STR).select_key(lambda k, v: v)
        keyed.group_by_key(Grouped.as_("count-groupByKey")).count(materialized="count-store").to_stream().to(
            "counts", Produced.with_(S, L)
        )
        keyed.filter(lambda k, v: v != "skip", named="reduce-filter").group_by_key(
            Grouped.as_("reduce-groupByKey")
        ).reduce(lambda a, c: a + c, materialized="reduce-store").to_stream().to("reduced")
        return b

    plain = program().build()
    assert plain.internal_topics == {"count-groupByKey-repartition", "reduce-groupByKey-repartition"}
    optimized = program().build(optimization="all")
    assert optimized.internal_topics == {"count-groupByKey-repartition"}
    text = str(optimized.describe())
    assert "--> count-groupByKey-repartition-filter\n" in text
    # the filter between the key change and the second aggregation now runs after the merged topic
    assert (
        "Processor: reduce-filter (stores: [])\n"
        "      --> KSTREAM-REDUCE-0000000009\n"
        "      <-- count-groupByKey-repartition-source" in text
    )
    for topology in (plain, optimized):
        with TopologyTestDriver(topology, config()) as d:
            inp = d.create_input_topic("input", S, S)
            for key, value in [("1", "a"), ("2", "b"), ("3", "a"), ("4", "skip")]:
                inp.pipe_input(key, value, 0)
            assert d.create_output_topic("counts", S, L).read_key_values_to_map() == {
                "a": 2,
                "b": 1,
                "skip": 1,
            }
            assert d.create_output_topic("reduced", S, S).read_key_values_to_map() == {"a": "aa", "b": "b"}


# -- Kafka 4.1 behaviours found by comparing with Kafka's own tests ----------------------------------
class _Capture(Processor):
    """Kafka's MockApiProcessor: (key, value or Change, timestamp) of every record it gets."""

    def __init__(self, sink: list) -> None:
        self.sink = sink

    def process(self, record) -> None:
        self.sink.append((record.key, record.value, record.timestamp))


def _capture_stream(stream) -> list:
    """``stream.process(supplier)``."""
    out: list = []
    stream.process(lambda: _Capture(out))
    return out


def _capture_changes(table) -> list:
    """``topology.addProcessor("proc", supplier, table.name)``: the table's changes, old values included."""
    out: list = []
    builder = table._builder
    builder.add_node(
        ProcessorGraphNode(builder.names.processor("CAPTURE-"), [table._node], lambda: _Capture(out))
    )
    return out


def _java(value) -> str:
    """Java's string concatenation of a null."""
    return "null" if value is None else str(value)


class TestKStreamGlobalKTableLeftJoin:
    """KStreamGlobalKTableLeftJoinTest (Kafka 4.1): the stream value optionally names the table key
    after a comma; a missing one maps to a null table key."""

    @pytest.fixture
    def setup(self):
        b = StreamsBuilder()
        table = b.global_table("globalTableTopic", Consumed.with_(S, S))

        def key_mapper(key, value):
            tokens = value.split(",")
            return tokens[1] if len(tokens) > 1 else None

        stream = b.stream("streamTopic", Consumed.with_(INT, S))
        out = _capture_stream(
            stream.left_join(table, lambda v1, v2: f"{v1}+{_java(v2)}", key_selector=key_mapper)
        )
        with TopologyTestDriver(b.build(), config()) as d:
            yield (
                d,
                d.create_input_topic("streamTopic", INT, S, start_timestamp=0, auto_advance_ms=1),
                d.create_input_topic("globalTableTopic", S, S, start_timestamp=0, auto_advance_ms=1),
                out,
            )

    @staticmethod
    def push_to_stream(topic, count, prefix, include_foreign_key, include_null_key=False):
        for i in range(count):
            value = f"{prefix}{i}" + (f",FKey{i}" if include_foreign_key else "")
            topic.pipe_input(None if include_null_key and i == 0 else i, value)

    def test_should_join_on_null_key_mapper_values(self, setup):
        """shouldJoinOnNullKeyMapperValues (KAFKA-19208): a null table key joins with a null table value."""
        driver, stream, table, out = setup
        for i in range(4):
            table.pipe_input(f"FKey{i}", f"Y{i}")
        assert out == []
        self.push_to_stream(stream, 4, "XXX", False)
        assert out == [(0, "XXX0+null", 0), (1, "XXX1+null", 1), (2, "XXX2+null", 2), (3, "XXX3+null", 3)]
        assert dropped(driver) == 0

    def test_should_join_on_null_key_with_non_null_key_mapper_values(self, setup):
        """shouldJoinOnNullKeyWithNonNullKeyMapperValues."""
        _, stream, table, out = setup
        for i in range(4):
            table.pipe_input(f"FKey{i}", f"Y{i}")
        self.push_to_stream(stream, 4, "X", True, include_null_key=True)
        assert out == [
            (None, "X0,FKey0+Y0", 0),
            (1, "X1,FKey1+Y1", 1),
            (2, "X2,FKey2+Y2", 2),
            (3, "X3,FKey3+Y3", 3),
        ]


def _agg_repartition_selector(key, value):
    """KTableAggregateTest's selector: "null" maps to a null key, "NULL" to no pair at all."""
    if key == "null":
        return (None, value)
    if key == "NULL":
        return None
    return (value, value)


@pytest.mark.parametrize("versioned", [False, True], ids=["testAggRepartition", "testAggOfVersionedStore"])
def test_ktable_aggregate_skips_null_pairs_and_null_keys(versioned):
    """KTableAggregateTest.testAggRepartition / testAggOfVersionedStore: a selector answering null, or a
    pair with a null key, skips the record silently (KTableRepartitionMap); a versioned source ignores
    the out-of-order updates."""
    b = StreamsBuilder()
    source = (
        Materialized.as_(Stores.persistent_versioned_key_value_store("versioned", 300_000))
        if versioned
        else None
    )
    table2 = (
        b.table("topic1", STR, source)
        .group_by(_agg_repartition_selector, Grouped.with_(S, S))
        .aggregate(
            lambda: "0",
            lambda k, v, agg: f"{agg}+{v}",
            lambda k, v, agg: f"{agg}-{v}",
            materialized=Materialized.as_("topic1-Canonized").with_value_serde(S),
        )
    )
    out = _capture_stream(table2.to_stream())
    with TopologyTestDriver(b.build(), config()) as d:
        inp = d.create_input_topic("topic1", S, S)
        for key, value, ts in [
            ("A", "1", 10),
            ("A", None, 15),
            ("A", "1", 12),
            ("B", "2", 20),
            ("null", "3", 25),
            ("B", "4", 23),
            ("NULL", "5", 24),
            ("B", "7", 22),
        ]:
            inp.pipe_input(key, value, ts)
        assert dropped(d) == 0
    if versioned:
        assert out == [
            ("1", "0+1", 10),
            ("1", "0+1-1", 15),
            ("2", "0+2", 20),
            ("2", "0+2-2", 23),
            ("4", "0+4", 23),
        ]
    else:
        assert out == [
            ("1", "0+1", 10),
            ("1", "0+1-1", 15),
            ("1", "0+1-1+1", 15),
            ("2", "0+2", 20),
            ("2", "0+2-2", 23),
            ("4", "0+4", 23),
            ("4", "0+4-4", 23),
            ("7", "0+7", 22),
        ]


def _even(key, value) -> bool:
    return value % 2 == 0


def _filter_config():
    """KTableFilterTest.setUp: caching disabled at the config level (Kafka then strips the caching layer)."""
    return StreamsConfig("faithful", default_key_serde=S, default_value_serde=INT, cache_max_bytes=0)


@pytest.mark.parametrize("materialize", [False, True], ids=["WithoutMaterialization", "OnMaterialization"])
def test_ktable_filter_should_pass_through(materialize):
    """KTableFilterTest.shouldPassThroughWithoutMaterialization / shouldPassThroughOnMaterialization."""
    b = StreamsBuilder()
    table1 = b.table("topic1", Consumed.with_(S, INT))
    table2 = table1.filter(_even, materialized=Materialized.as_("store2") if materialize else None)
    table3 = table1.filter_not(_even)
    out2, out3 = _capture_stream(table2.to_stream()), _capture_stream(table3.to_stream())
    with TopologyTestDriver(b.build(), _filter_config()) as d:
        inp = d.create_input_topic("topic1", S, INT)
        for key, value, ts in [
            ("A", 1, 10),
            ("B", 2, 5),
            ("C", 3, 8),
            ("D", 4, 14),
            ("A", None, 18),
            ("B", None, 15),
        ]:
            inp.pipe_input(key, value, ts)
    assert out2 == [
        ("A", None, 10),
        ("B", 2, 5),
        ("C", None, 8),
        ("D", 4, 14),
        ("A", None, 18),
        ("B", None, 15),
    ]
    assert out3 == [
        ("A", 1, 10),
        ("B", None, 5),
        ("C", 3, 8),
        ("D", None, 14),
        ("A", None, 18),
        ("B", None, 15),
    ]


@pytest.mark.parametrize("materialize", [False, True], ids=["WithoutMaterialization", "OnMaterialization"])
def test_ktable_filter_should_not_send_old_values(materialize):
    """KTableFilterTest.shouldNotSendOldValuesWithoutMaterialization / shouldNotSendOldValuesOnMaterialization
    (doTestNotSendingOldValue): without old values a rejected or deleted key is ``Change(null, null)``."""
    b = StreamsBuilder()
    table1 = b.table("topic1", Consumed.with_(S, INT))
    table2 = table1.filter(_even, materialized=Materialized.as_("store2") if materialize else None)
    p1, p2 = _capture_changes(table1), _capture_changes(table2)
    with TopologyTestDriver(b.build(), _filter_config()) as d:
        inp = d.create_input_topic("topic1", S, INT)
        for key, ts in [("A", 5), ("B", 10), ("C", 15)]:
            inp.pipe_input(key, 1, ts)
        assert p1 == [("A", Change(1, None), 5), ("B", Change(1, None), 10), ("C", Change(1, None), 15)]
        assert p2 == [
            ("A", Change(None, None), 5),
            ("B", Change(None, None), 10),
            ("C", Change(None, None), 15),
        ]
        p1.clear(), p2.clear()
        inp.pipe_input("A", 2, 15)
        inp.pipe_input("B", 2, 8)
        assert p1 == [("A", Change(2, None), 15), ("B", Change(2, None), 8)]
        assert p2 == [("A", Change(2, None), 15), ("B", Change(2, None), 8)]
        p1.clear(), p2.clear()
        inp.pipe_input("A", 3, 20)
        assert p1 == [("A", Change(3, None), 20)]
        assert p2 == [("A", Change(None, None), 20)]
        p1.clear(), p2.clear()
        inp.pipe_input("A", None, 10)
        inp.pipe_input("B", None, 20)
        assert p1 == [("A", Change(None, None), 10), ("B", Change(None, None), 20)]
        assert p2 == [("A", Change(None, None), 10), ("B", Change(None, None), 20)]


def test_ktable_filter_should_skip_null_to_repartition_without_materialization():
    """KTableFilterTest.shouldSkipNullToRepartitionWithoutMaterialization: a downstream group_by makes
    the source send old values, so the filter drops rejections of keys that were never in."""
    b = StreamsBuilder()
    table1 = b.table("topic1", STR)
    table2 = table1.filter(lambda k, v: v.lower() == "accept")
    table2.group_by(lambda k, v: (k, v)).reduce(lambda a, v: a + v, lambda a, v: a[: -len(v)])
    p1, p2 = _capture_changes(table1), _capture_changes(table2)
    with TopologyTestDriver(b.build(), config(cache_max_bytes=0)) as d:
        inp = d.create_input_topic("topic1", S, S)
        for key, ts in [("A", 5), ("B", 10), ("C", 20)]:
            inp.pipe_input(key, "reject", ts)
    assert p1 == [
        ("A", Change("reject", None), 5),
        ("B", Change("reject", None), 10),
        ("C", Change("reject", None), 20),
    ]
    assert p2 == []


def _windowed(key, start, end):
    return Windowed(key, TimeWindow(start, end))


_KAFKA_CACHE_SERVES_EXPIRED_WINDOWS = pytest.mark.xfail(
    strict=True,
    reason="Kafka's TimeOrderedCachingWindowStore.fetch answers from the record cache before checking "
    "retention, so its join still sees topic1's expired window [0,10) at stream time 20; the edge keeps "
    "no cache under ON_WINDOW_CLOSE stores (results leave through the emit-final fetch)",
)


@pytest.mark.parametrize(
    "caching",
    [pytest.param(True, marks=_KAFKA_CACHE_SERVES_EXPIRED_WINDOWS), False],
    ids=["withCache", "withoutCache"],
)
def test_window_aggregate_emit_final_join(caching):
    """KStreamWindowAggregateTest.testJoin (ON_WINDOW_CLOSE): size 10, advance 5, grace 5, so retention
    15. Kafka keeps ON_WINDOW_CLOSE windows in its time-ordered store, which expires a window once
    ``start < observedStreamTime - retention``: at stream time 20, window [5,15) of topic1 is still
    there for the join."""
    b = StreamsBuilder()

    def aggregated(topic: str):
        m = Materialized.as_(f"{topic}-Canonized").with_value_serde(S)
        return (
            b.stream(topic, STR)
            .group_by_key(Grouped.with_(S, S))
            .windowed_by(TimeWindows.of_size_and_grace(10, 5).advance_by(5))
            .emit_strategy(EmitStrategy.on_window_close())
            .aggregate(
                lambda: "0",
                lambda k, v, agg: f"{agg}+{v}",
                materialized=m if caching else m.with_caching_disabled(),
            )
        )

    table1, table2 = aggregated("topic1"), aggregated("topic2")
    p0, p1 = _capture_stream(table1.to_stream()), _capture_stream(table2.to_stream())
    p2 = _capture_stream(table1.join(table2, lambda a, c: f"{a}%{c}").to_stream())
    W = _windowed
    with TopologyTestDriver(b.build(), config()) as d:
        in1, in2 = d.create_input_topic("topic1", S, S), d.create_input_topic("topic2", S, S)
        for key, value, ts in [
            ("A", "1", 0),
            ("B", "2", 1),
            ("C", "3", 2),
            ("D", "4", 3),
            ("A", "1", 9),
            ("A", "1", 15),
        ]:
            in1.pipe_input(key, value, ts)
        assert p0 == [
            (W("A", 0, 10), "0+1+1", 9),
            (W("B", 0, 10), "0+2", 1),
            (W("C", 0, 10), "0+3", 2),
            (W("D", 0, 10), "0+4", 3),
        ]
        assert p1 == p2 == []
        p0.clear()
        for key, value, ts in [
            ("A", "1", 10),
            ("B", "2", 11),
            ("D", "4", 12),
            ("B", "2", 13),
            ("C", "3", 14),
            ("A", "1", 20),
        ]:
            in1.pipe_input(key, value, ts)
        assert p0 == [
            (W("A", 5, 15), "0+1+1", 10),
            (W("B", 5, 15), "0+2+2", 13),
            (W("C", 5, 15), "0+3", 14),
            (W("D", 5, 15), "0+4", 12),
        ]
        assert p1 == p2 == []
        p0.clear()
        for key, value, ts in [("A", "a", 0), ("B", "b", 1), ("C", "c", 2), ("D", "d", 10), ("A", "a", 15)]:
            in2.pipe_input(key, value, ts)
        assert p0 == []
        first = [(W("A", 0, 10), "0+a", 0), (W("B", 0, 10), "0+b", 1), (W("C", 0, 10), "0+c", 2)]
        if caching:
            assert p1 == first
            assert p2 == [
                (W("A", 0, 10), "0+1+1%0+a", 9),
                (W("B", 0, 10), "0+2%0+b", 1),
                (W("C", 0, 10), "0+3%0+c", 2),
            ]
            p1.clear(), p2.clear()
        else:
            assert p2 == []  # Kafka: window [0,10) of topic1 expired at stream time 20 (0 < 20 - 15)
        for key, value, ts in [("A", "a", 5), ("B", "b", 6), ("D", "d", 7), ("D", "d", 18), ("A", "a", 21)]:
            in2.pipe_input(key, value, ts)
        assert p0 == []
        second = [(W("A", 5, 15), "0+a", 5), (W("B", 5, 15), "0+b", 6), (W("D", 5, 15), "0+d+d", 10)]
        assert p1 == (second if caching else first + second)
        assert p2 == [
            (W("A", 5, 15), "0+1+1%0+a", 10),
            (W("B", 5, 15), "0+2+2%0+b", 13),
            (W("D", 5, 15), "0+4%0+d+d", 12),
        ]

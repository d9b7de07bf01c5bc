"""KTable semantics: tombstones, filter/map_values updates, table-table joins, and table aggregation
with key changes (the old value goes to the subtractor, the new one to the adder)."""

from edge.dsl import Consumed, Grouped, Materialized, Produced, StreamsBuilder
from edge.processor import StreamsConfig
from edge.serde import Serdes
from edge.testing import TopologyTestDriver

S, L, INT = Serdes.string(), Serdes.long(), Serdes.int()
STR = Consumed.with_(S, S)


def config(app="tables"):
    return StreamsConfig(app, default_key_serde=S, default_value_serde=S)


def test_table_tombstone_deletes_and_is_forwarded():
    b = StreamsBuilder()
    b.table("t", STR, "t-store").to_stream().to("out")
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("t", S, S)
        tin.pipe_input("k", "v1")
        tin.pipe_input("k", "v2")
        tin.pipe_input("k", None)
        out = d.create_output_topic("out", S, S)
        assert out.read_key_values_to_list() == [("k", "v1"), ("k", "v2"), ("k", None)]
        assert d.get_key_value_store("t-store").get("k") is None
        assert d.get_key_value_store("t-store").to_dict() == {}


def test_generated_table_store_name_is_reserved_and_used_only_when_materialized():
    """Kafka (StreamsBuilderTest.shouldNotMaterializeStoresIfNotRequired): a table nobody looks up has
    no store; its generated name is still reserved and is the store's name once a join needs it."""
    b = StreamsBuilder()
    b.table("users", STR)
    assert b.build().store_names() == []
    b = StreamsBuilder()
    users = b.table("users", STR)
    b.stream("clicks", STR).join(users, lambda c, u: c)
    assert b.build().store_names() == ["users-STATE-STORE-0000000000"]


def test_filter_turns_rows_that_stop_matching_into_deletes():
    """Materialized parent (old values available): a record that was out and stays out is skipped."""
    b = StreamsBuilder()
    b.table("t", Consumed.with_(S, INT), "t-store").filter(lambda k, v: v > 10).to_stream().to("out")
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("t", S, INT)
        tin.pipe_input("a", 5)  # never matched: nothing to say
        tin.pipe_input("a", 20)  # now matches: insert
        tin.pipe_input("a", 30)  # update
        tin.pipe_input("a", 1)  # stops matching: delete
        tin.pipe_input("a", None)  # already absent downstream: nothing
        out = d.create_output_topic("out", S, INT).read_key_values_to_list()
        assert out == [("a", 20), ("a", 30), ("a", None)]


def test_filter_of_unmaterialized_table_forwards_a_tombstone_per_rejected_record():
    """Kafka's KTableFilter without old values: it cannot know whether the key was out already."""
    b = StreamsBuilder()
    b.table("t", Consumed.with_(S, INT)).filter(lambda k, v: v > 10).to_stream().to("out")
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("t", S, INT)
        for v in (5, 20, 30, 1, None):
            tin.pipe_input("a", v)
        out = d.create_output_topic("out", S, INT).read_key_values_to_list()
        assert out == [("a", None), ("a", 20), ("a", 30), ("a", None), ("a", None)]


def test_materialized_filter_and_map_values_are_queryable():
    b = StreamsBuilder()
    t = b.table("t", Consumed.with_(S, INT))
    t.filter_not(lambda k, v: v % 2, materialized=Materialized.as_("even").with_value_serde(INT))
    t.map_values(lambda v: str(v * 2), materialized=Materialized.as_("doubled").with_value_serde(S))
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("t", S, INT)
        tin.pipe_input("a", 2)
        tin.pipe_input("b", 3)
        tin.pipe_input("a", None)
        assert d.get_key_value_store("even").to_dict() == {}
        assert d.get_key_value_store("doubled").to_dict() == {"b": "6"}


def _two_tables(join):
    b = StreamsBuilder()
    left = b.table("left", STR)
    right = b.table("right", STR)
    join(left, right).to_stream().to("out")
    return b.build()


def _pipe(d, steps):
    left = d.create_input_topic("left", S, S)
    right = d.create_input_topic("right", S, S)
    for side, key, value, ts in steps:
        (left if side == "L" else right).pipe_input(key, value, ts)
    return d.create_output_topic("out", S, S).read_records_to_list()


STEPS = [
    ("L", "k", "l1", 1),
    ("R", "k", "r1", 2),
    ("L", "k", "l2", 3),
    ("R", "k", None, 4),
    ("L", "k", None, 5),
]


def test_table_table_inner_join():
    def joiner(lv, rv):
        return f"{lv}+{rv}"

    with TopologyTestDriver(_two_tables(lambda a, b: a.join(b, joiner)), config()) as d:
        out = _pipe(d, STEPS)
    assert [(r.value, r.timestamp) for r in out] == [("l1+r1", 2), ("l2+r1", 3), (None, 4)]


def test_table_table_left_join_null_right():
    with TopologyTestDriver(
        _two_tables(lambda a, b: a.left_join(b, lambda lv, rv: f"{lv}+{rv}")), config()
    ) as d:
        out = _pipe(d, STEPS)
    assert [r.value for r in out] == ["l1+None", "l1+r1", "l2+r1", "l2+None", None]


def test_table_table_outer_join():
    with TopologyTestDriver(
        _two_tables(lambda a, b: a.outer_join(b, lambda lv, rv: f"{lv}+{rv}")), config()
    ) as d:
        out = _pipe(d, [("R", "k", "r1", 1), ("L", "k", "l1", 2), ("R", "k", None, 3), ("L", "k", None, 4)])
    assert [r.value for r in out] == ["None+r1", "l1+r1", "l1+None", None]


def test_join_of_unmaterialized_derived_table_uses_value_getters():
    b = StreamsBuilder()
    left = b.table("left", STR).map_values(str.upper)
    right = b.table("right", STR).filter(lambda k, v: v != "hidden")
    left.join(right, lambda lv, rv: f"{lv}|{rv}").to_stream().to("out")
    with TopologyTestDriver(b.build(), config()) as d:
        out = _pipe(
            d, [("R", "k", "hidden", 1), ("L", "k", "a", 2), ("R", "k", "shown", 3), ("L", "k", "b", 4)]
        )
    assert [r.value for r in out] == ["A|shown", "B|shown"]


def test_table_group_by_aggregate_subtracts_old_and_adds_new_on_key_change():
    """Users with a region; sum of ages per region. Moving a user moves their age between regions."""
    b = StreamsBuilder()
    users = b.table("users", Consumed.with_(S, Serdes.json()))
    ages = users.group_by(lambda user, u: (u["region"], u["age"]), Grouped.with_(S, L)).aggregate(
        lambda: 0,
        lambda region, age, agg: agg + age,
        lambda region, age, agg: agg - age,
        materialized=Materialized.as_("age-by-region").with_value_serde(L),
    )
    ages.to_stream().to("out", Produced.with_(S, L))
    topo = b.build()
    assert set(topo.internal_topics) == {"age-by-region-repartition"}
    with TopologyTestDriver(topo, config()) as d:
        tin = d.create_input_topic("users", S, Serdes.json())
        out = d.create_output_topic("out", S, L)
        tin.pipe_input("alice", {"region": "eu", "age": 30})
        tin.pipe_input("bob", {"region": "eu", "age": 40})
        assert out.read_key_values_to_list() == [("eu", 30), ("eu", 70)]
        tin.pipe_input("alice", {"region": "us", "age": 31})  # key change: eu -30, us +31
        assert out.read_key_values_to_list() == [("eu", 40), ("us", 31)]
        tin.pipe_input("bob", {"region": "eu", "age": 41})  # same key: one update with both halves
        assert out.read_key_values_to_list() == [("eu", 41)]
        tin.pipe_input("alice", None)  # tombstone: subtract only
        assert out.read_key_values_to_list() == [("us", 0)]
        assert d.get_key_value_store("age-by-region").to_dict() == {"eu": 41, "us": 0}


def test_table_group_by_count_and_reduce():
    b = StreamsBuilder()
    t = b.table("t", STR)
    t.group_by(lambda k, v: (v, k)).count(materialized="per-value")
    t.group_by(lambda k, v: (v, k), Grouped.as_("by-v")).reduce(
        lambda agg, new: agg + new, lambda agg, old: agg.replace(old, ""), materialized="keys"
    )
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("t", S, S)
        tin.pipe_input("a", "x")
        tin.pipe_input("b", "x")
        tin.pipe_input("a", "y")
        assert d.get_key_value_store("per-value").to_dict() == {"x": 1, "y": 1}
        assert d.get_key_value_store("keys").to_dict() == {"x": "b", "y": "a"}


def test_stream_to_table_upserts_and_deletes():
    b = StreamsBuilder()
    b.stream("in", STR).to_table(materialized="latest").to_stream().to("out")
    b.stream("in2", STR).select_key(lambda k, v: v).to_table(named="by-value")
    topo = b.build()
    assert "by-value-repartition" in topo.internal_topics
    with TopologyTestDriver(topo, config()) as d:
        tin = d.create_input_topic("in", S, S)
        tin.pipe_input("k", "v1")
        tin.pipe_input("k", "v2")
        tin.pipe_input("k", None)
        assert d.create_output_topic("out", S, S).read_key_values_to_list() == [
            ("k", "v1"),
            ("k", "v2"),
            ("k", None),
        ]
        assert d.get_key_value_store("latest").to_dict() == {}
        d.create_input_topic("in2", S, S).pipe_input("x", "y")
        # as in Kafka, an unnamed to_table() nobody looks up has no store
        assert [n for n in topo.store_names() if n.startswith("KSTREAM-TOTABLE-STATE-STORE")] == []

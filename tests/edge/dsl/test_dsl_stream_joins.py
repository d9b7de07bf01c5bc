"""KStream joins with a KTable (inner/left, repartitioned when the key changed) and a GlobalKTable."""

from edge.dsl import Consumed, Produced, StreamsBuilder
from edge.processor import StreamsConfig
from edge.serde import Serdes
from edge.testing import TestRecord, TopologyTestDriver

S = Serdes.string()
STR = Consumed.with_(S, S)


def config(app="joins"):
    return StreamsConfig(app, default_key_serde=S, default_value_serde=S)


def _driver(left):
    b = StreamsBuilder()
    table = b.table("table", STR)
    stream = b.stream("stream", STR)
    joined = (
        stream.left_join(table, lambda s, t: f"{s}/{t}")
        if left
        else stream.join(table, lambda s, t: f"{s}/{t}")
    )
    joined.to("out")
    return TopologyTestDriver(b.build(), config())


def test_stream_table_inner_join_drops_unmatched_and_uses_stream_timestamp():
    with _driver(left=False) as d:
        table = d.create_input_topic("table", S, S)
        stream = d.create_input_topic("stream", S, S)
        stream.pipe_input("k", "s0", 1)  # no table row yet: dropped
        table.pipe_input("k", "t1", 2)
        stream.pipe_input("k", "s1", 3)
        table.pipe_input("k", None, 4)
        stream.pipe_input("k", "s2", 5)
        assert d.create_output_topic("out", S, S).read_records_to_list() == [TestRecord("k", "s1/t1", 3, [])]


def test_stream_table_left_join_passes_none_for_missing_rows():
    with _driver(left=True) as d:
        table = d.create_input_topic("table", S, S)
        stream = d.create_input_topic("stream", S, S)
        stream.pipe_input("k", "s0")
        table.pipe_input("k", "t1")
        stream.pipe_input("k", "s1")
        stream.pipe_input("other", "s2")
        out = d.create_output_topic("out", S, S).read_key_values_to_list()
        assert out == [("k", "s0/None"), ("k", "s1/t1"), ("other", "s2/None")]


def test_stream_rekeyed_before_table_join_is_repartitioned():
    b = StreamsBuilder()
    table = b.table("table", STR)
    b.stream("stream", STR).select_key(lambda k, v: v).join(table, lambda s, t: t).to("out")
    topo = b.build()
    assert set(topo.internal_topics) == {"KSTREAM-KEY-SELECT-0000000004-repartition"}
    with TopologyTestDriver(topo, config()) as d:
        d.create_input_topic("table", S, S).pipe_input("x", "row-x")
        d.create_input_topic("stream", S, S).pipe_input("ignored", "x")
        assert d.create_output_topic("out", S, S).read_key_values_to_list() == [("x", "row-x")]


def test_stream_global_table_join_with_key_selector():
    b = StreamsBuilder()
    products = b.global_table("products", STR, "products-store")
    orders = b.stream("orders", Consumed.with_(S, Serdes.json()))
    orders.join(products, lambda o, p: {**o, "product": p}, key_selector=lambda k, o: o["pid"]).to(
        "inner", Produced.with_(S, Serdes.json())
    )
    orders.left_join(products, lambda o, p: p, key_selector=lambda k, o: o["pid"]).to("left")
    topo = b.build()
    assert [st.is_global for st in topo.subtopologies()] == [True, False]
    with TopologyTestDriver(topo, config()) as d:
        d.create_input_topic("products", S, S).pipe_input("p1", "Pen")
        o = d.create_input_topic("orders", S, Serdes.json())
        o.pipe_input("o1", {"pid": "p1"})
        o.pipe_input("o2", {"pid": "p9"})
        inner = d.create_output_topic("inner", S, Serdes.json()).read_key_values_to_list()
        assert inner == [("o1", {"pid": "p1", "product": "Pen"})]
        assert d.create_output_topic("left", S, S).read_key_values_to_list() == [("o1", "Pen"), ("o2", None)]
        assert d.get_key_value_store("products-store").get("p1") == "Pen"


def test_two_global_tables_share_one_global_task():
    b = StreamsBuilder()
    products = b.global_table("products", STR, "products")
    prices = b.global_table("prices", STR, "prices")
    (
        b.stream("orders", STR)
        .join(products, lambda o, p: f"{o}:{p}", key_selector=lambda k, v: v)
        .left_join(prices, lambda op, price: f"{op}@{price}", key_selector=lambda k, v: v.split(":")[0])
        .to("out")
    )
    topo = b.build()
    assert [st.is_global for st in topo.subtopologies()] == [True, False]
    assert "Sub-topology: 0 for global store" in str(topo.describe())
    with TopologyTestDriver(topo, config()) as d:
        d.create_input_topic("products", S, S).pipe_input("p1", "Pen")
        d.create_input_topic("prices", S, S).pipe_input("p1", "2.50")
        d.create_input_topic("orders", S, S).pipe_input("o1", "p1")
        assert d.create_output_topic("out", S, S).read_values_to_list() == ["p1:Pen@2.50"]

"""Processor API: custom processors with stores, named forwarding, headers, punctuation; and the
Topology API used directly (add_source/add_processor/add_sink)."""

import pytest

from edge.dsl import Consumed, Produced, StreamsBuilder
from edge.errors import TopologyError
from edge.processor import Processor, PunctuationType, Record, StreamsConfig
from edge.serde import Serdes
from edge.state import key_value_store_builder
from edge.testing import TopologyTestDriver
from edge.topology import Topology

S, L = Serdes.string(), Serdes.long()


def config():
    return StreamsConfig("papi", default_key_serde=S, default_value_serde=S)


class Dedup(Processor):
    """Forwards the first record of each key, with a header saying where it came from."""

    def init(self, context):
        super().init(context)
        self.seen = context.get_state_store("seen")

    def process(self, record):
        if self.seen.get(record.key) is None:
            self.seen.put(record.key, record.timestamp)
            src = f"{self.context.topic}@{self.context.offset}".encode()
            self.context.forward(record.with_headers([*(record.headers or []), ("src", src)]))


def test_process_with_store_and_headers():
    b = StreamsBuilder()
    b.add_state_store(key_value_store_builder("seen", S, L, caching=False))
    b.stream("in", Consumed.with_(S, S)).process(Dedup, "seen").to("out")
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("in", S, S)
        tin.pipe_input("a", "1", 10, [("h", b"x")])
        tin.pipe_input("a", "2", 11)
        tin.pipe_input("b", "3", 12)
        out = d.create_output_topic("out", S, S).read_records_to_list()
        assert [(r.key, r.value, r.headers) for r in out] == [
            ("a", "1", [("h", b"x"), ("src", b"in@0")]),
            ("b", "3", [("src", b"in@2")]),
        ]
        assert d.get_state_store("seen").get("a") == 10


def test_unconnected_store_access_is_a_clear_error():
    class Bad(Processor):
        def process(self, record):
            self.context.get_state_store("seen")

    b = StreamsBuilder()
    b.add_state_store(key_value_store_builder("seen", S, L))
    b.stream("in", Consumed.with_(S, S)).process(Bad)
    with TopologyTestDriver(b.build(), config()) as d, pytest.raises(Exception, match="not connected"):
        d.create_input_topic("in", S, S).pipe_input("a", "1")


class Router(Processor):
    def process(self, record):
        self.context.forward(record, to="evens" if int(record.value) % 2 == 0 else "odds")


def test_topology_api_forward_to_named_child():
    t = (
        Topology()
        .add_source("src", "in", key_serde=S, value_serde=S)
        .add_processor("router", Router, "src")
        .add_sink("evens", "even-topic", "router")
        .add_sink("odds", "odd-topic", "router")
    )
    with TopologyTestDriver(t, config()) as d:
        tin = d.create_input_topic("in", S, S)
        for v in "1234":
            tin.pipe_input("k", v)
        assert d.create_output_topic("even-topic", S, S).read_values_to_list() == ["2", "4"]
        assert d.create_output_topic("odd-topic", S, S).read_values_to_list() == ["1", "3"]


def test_topology_validation_errors():
    t = Topology().add_source("src", "in")
    with pytest.raises(TopologyError, match="already exists"):
        t.add_source("src", "other")
    with pytest.raises(TopologyError, match="already consumed"):
        t.add_source("src2", "in")
    with pytest.raises(TopologyError, match="does not exist"):
        t.add_processor("p", Router, "missing")
    with pytest.raises(TopologyError, match="not added"):
        t.add_processor("p", Router, "src", stores=["nope"])


class Ticker(Processor):
    def init(self, context):
        super().init(context)
        self.fired = []
        context.schedule(10, PunctuationType.STREAM_TIME, self.on_stream)
        context.schedule(1000, PunctuationType.WALL_CLOCK_TIME, self.on_wall)

    def on_stream(self, ts):
        self.context.forward(Record("stream-tick", str(ts), ts))

    def on_wall(self, ts):
        self.context.forward(Record("wall-tick", str(ts), ts))

    def process(self, record):
        pass


def test_punctuation_stream_time_and_wall_clock():
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).process(Ticker).to("out")
    with TopologyTestDriver(b.build(), config(), initial_wall_clock_ms=0) as d:
        tin = d.create_input_topic("in", S, S)
        out = d.create_output_topic("out", S, S)
        tin.pipe_input("a", "x", 5)  # first record fires the stream-time schedule (starts at 0)
        tin.pipe_input("a", "x", 9)
        tin.pipe_input("a", "x", 27)  # missed intervals fire once
        assert out.read_key_values_to_list() == [("stream-tick", "5"), ("stream-tick", "27")]
        d.advance_wall_clock_time(999)
        assert out.is_empty()
        d.advance_wall_clock_time(1)
        assert out.read_key_values_to_list() == [("wall-tick", "1000")]


class Buffering(Processor):
    """Buffers values in an uncached store and asks for a commit every second record; counts closes."""

    closed = 0

    def init(self, context):
        super().init(context)
        self.n = 0

    def process(self, record):
        self.n += 1
        self.context.forward(record.with_value(f"{record.value}#{self.n}"))
        if self.n % 2 == 0:
            self.context.commit()

    def close(self):
        type(self).closed += 1


def test_close_is_called_and_commit_requests_are_honoured():
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).process(Buffering).group_by_key().count(
        materialized="c"
    ).to_stream().to("out", Produced.with_(S, L))
    d = TopologyTestDriver(b.build(), config(), auto_commit=False)
    tin = d.create_input_topic("in", S, S)
    out = d.create_output_topic("out", S, L)
    tin.pipe_input("k", "a")
    assert out.is_empty()  # cached, no commit yet
    tin.pipe_input("k", "b")  # the processor asked for a commit: caches flush
    assert out.read_key_values_to_list() == [("k", 2)]
    d.close()
    assert Buffering.closed == 1


class Upper(Processor):
    def process(self, record):
        self.context.forward(record.with_value(record.value.upper()))


def test_process_values_keeps_the_stream_co_partitioned():
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).process_values(Upper).group_by_key().count(materialized="c")
    b.stream("in2", Consumed.with_(S, S)).process(Upper).group_by_key().count(materialized="c2")
    topo = b.build()
    assert set(topo.internal_topics) == {"c2-repartition"}  # only process() may have changed keys
    with TopologyTestDriver(topo, config()) as d:
        d.create_input_topic("in", S, S).pipe_input("k", "v")
        assert d.get_key_value_store("c").get("k") == 1

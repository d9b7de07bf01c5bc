"""Versioned tables in the DSL (KIP-914): stream-table joins as of the stream record's time, the grace
buffer (ported from Kafka's KStreamKTableJoinTest shouldDelayJoinByGracePeriod /
shouldHandleLateJoinsWithGracePeriod), out-of-order table updates, and the Processor API store."""

import pytest

from edge.dsl import Consumed, Joined, Materialized, StreamsBuilder
from edge.errors import TopologyError
from edge.processor import StreamsConfig
from edge.processor.api import Processor
from edge.processor.record import Record
from edge.serde import Serdes
from edge.state.versioned import Stores, VersionedRecord
from edge.testing import TopologyTestDriver

S, INT = Serdes.string(), Serdes.int()
CONSUMED = Consumed.with_(INT, S)


def config():
    return StreamsConfig("versioned", default_key_serde=INT, default_value_serde=S)


def triples(topic):
    return [(r.key, r.value, r.timestamp) for r in topic.read_records_to_list()]


def grace_join(grace_ms):
    """KStreamKTableJoinTest.makeJoin: a versioned table (5 min history) and a join with grace."""
    b = StreamsBuilder()
    stream = b.stream("streamTopic", CONSUMED)
    table = b.table(
        "tableTopic2",
        CONSUMED,
        Materialized.as_(Stores.persistent_versioned_key_value_store("V-grace", 300_000)),
    )
    stream.join(table, lambda a, c: f"{a}+{c}", joined=Joined.with_(INT, S, S, "Grace", grace_ms)).to("out")
    return b.build()


def test_join_is_delayed_by_the_grace_period():
    with TopologyTestDriver(grace_join(2), config()) as d:
        stream = d.create_input_topic("streamTopic", INT, S)
        table = d.create_input_topic("tableTopic2", INT, S)
        out = d.create_output_topic("out", INT, S)
        for i in range(4):
            table.pipe_input(i, f"Y{i}", 0)
        assert triples(out) == []
        for i in range(4):  # stream time 3: records up to 1 are due
            stream.pipe_input(i, f"X{i}", i)
        assert triples(out) == [(0, "X0+Y0", 0), (1, "X1+Y1", 1)]
        for i in range(4):
            table.pipe_input(i, f"YY{i}", 0)
        assert triples(out) == []
        for i in range(4):  # 0 is older than stream time - grace: joined at once
            stream.pipe_input(i, f"X{i}", i)
        assert triples(out) == [(0, "X0+YY0", 0), (1, "X1+YY1", 1)]
        stream.pipe_input(5, "test", 7)  # flushes the buffer in timestamp order
        assert triples(out) == [(2, "X2+YY2", 2), (2, "X2+YY2", 2), (3, "X3+YY3", 3), (3, "X3+YY3", 3)]
        for i in range(4):
            table.pipe_input(i, f"YYY{i}", 0)
        assert triples(out) == []


def test_late_records_join_at_once_without_evicting_others():
    with TopologyTestDriver(grace_join(2), config()) as d:
        stream = d.create_input_topic("streamTopic", INT, S)
        table = d.create_input_topic("tableTopic2", INT, S)
        out = d.create_output_topic("out", INT, S)
        for i in range(4):
            table.pipe_input(i, f"Y{i}", 0)
        for i in range(4):
            stream.pipe_input(i, f"X{i}", i)
        assert triples(out) == [(0, "X0+Y0", 0), (1, "X1+Y1", 1)]
        stream.pipe_input(0, "X0", 0)
        assert triples(out) == [(0, "X0+Y0", 0)]
        assert "Grace-Buffer" in d.topology.store_names()


def versioned_join(left=False, grace=None):
    b = StreamsBuilder()
    stream = b.stream("orders", CONSUMED)
    table = b.table("customers", CONSUMED, Materialized.as_versioned("customers-store", 60_000))
    table.to_stream().to("table-changes")
    joined = Joined.with_(INT, S, S, grace=grace)
    join = stream.left_join if left else stream.join
    join(table, lambda o, c: f"{o}@{c}", joined=joined).to("enriched")
    return b.build()


def test_stream_records_join_the_table_value_valid_at_their_timestamp():
    with TopologyTestDriver(versioned_join(), config()) as d:
        orders = d.create_input_topic("orders", INT, S)
        customers = d.create_input_topic("customers", INT, S)
        out = d.create_output_topic("enriched", INT, S)
        changes = d.create_output_topic("table-changes", INT, S)
        customers.pipe_input(1, "gold", 10)
        customers.pipe_input(1, "platinum", 30)
        orders.pipe_input(1, "o-5", 5)  # before the customer existed: no match
        orders.pipe_input(1, "o-20", 20)  # a late order sees the value of its own time
        orders.pipe_input(1, "o-40", 40)
        assert triples(out) == [(1, "o-20@gold", 20), (1, "o-40@platinum", 40)]
        # an out-of-order table update: stored as history, not forwarded, the latest stays
        customers.pipe_input(1, "silver", 25)
        assert triples(changes) == [(1, "gold", 10), (1, "platinum", 30)]
        store = d.get_state_store("customers-store")
        assert store.get(1) == VersionedRecord("platinum", 30, None)
        assert store.get(1, 27) == VersionedRecord("silver", 25, 30)
        assert store.get(1, 22) == VersionedRecord("gold", 10, 25)
        # later joins see the corrected history; results already emitted are not rewritten
        orders.pipe_input(1, "o-27", 27)
        orders.pipe_input(1, "o-22", 22)
        orders.pipe_input(1, "o-50", 50)
        assert triples(out) == [(1, "o-27@silver", 27), (1, "o-22@gold", 22), (1, "o-50@platinum", 50)]
        # a delete ends the customer's validity
        customers.pipe_input(1, None, 60)
        orders.pipe_input(1, "o-61", 61)
        orders.pipe_input(1, "o-55", 55)
        assert triples(out) == [(1, "o-55@platinum", 55)]
        assert triples(changes) == [(1, None, 60)]


def test_left_join_against_a_versioned_table():
    with TopologyTestDriver(versioned_join(left=True), config()) as d:
        orders = d.create_input_topic("orders", INT, S)
        customers = d.create_input_topic("customers", INT, S)
        out = d.create_output_topic("enriched", INT, S)
        customers.pipe_input(1, "gold", 10)
        orders.pipe_input(1, "o-5", 5)
        orders.pipe_input(1, "o-15", 15)
        orders.pipe_input(2, "o-16", 16)
        orders.pipe_input(1, None, 17)  # null values are dropped
        assert triples(out) == [(1, "o-5@None", 5), (1, "o-15@gold", 15), (2, "o-16@None", 16)]


def test_grace_lets_a_slightly_late_table_update_be_seen():
    """Without grace the order at 20 would join "gold"; held back 10 ms, it sees the update at 18 that
    arrived after it."""
    with TopologyTestDriver(versioned_join(grace=10), config()) as d:
        orders = d.create_input_topic("orders", INT, S)
        customers = d.create_input_topic("customers", INT, S)
        out = d.create_output_topic("enriched", INT, S)
        customers.pipe_input(1, "gold", 10)
        orders.pipe_input(1, "o-20", 20)
        customers.pipe_input(1, "platinum", 18)
        assert triples(out) == []
        orders.pipe_input(1, "o-31", 31)  # stream time 31: the order at 20 is due
        assert triples(out) == [(1, "o-20@platinum", 20)]


def test_grace_needs_a_versioned_table_with_enough_history():
    b = StreamsBuilder()
    stream = b.stream("s", CONSUMED)
    plain = b.table("t", CONSUMED)
    with pytest.raises(TopologyError, match="KTable must be versioned to use a grace period"):
        stream.join(plain, lambda a, c: a, joined=Joined.with_(INT, S, S, grace=5))
    versioned = b.table("v", CONSUMED, Materialized.as_versioned("v-store", 300_000))
    with pytest.raises(TopologyError, match=r"History retention must be at least grace period\."):
        stream.join(versioned, lambda a, c: a, joined=Joined.with_(INT, S, S, grace=360_000))
    with pytest.raises(TopologyError, match="cannot use a versioned store"):
        b.global_table("g", CONSUMED, Materialized.as_versioned("g-store", 1000))
    with pytest.raises(TopologyError, match="must not be negative"):
        Joined.with_(INT, S, S, grace=-1)


class _AsOfLookup(Processor):
    """Processor API: writes every record into a versioned store and emits what it held before."""

    def init(self, context):
        self.context = context
        self.store = context.get_state_store("pa-versioned")

    def process(self, record):
        before = self.store.get(record.key, record.timestamp - 1)
        self.store.put(record.key, record.value, record.timestamp)
        self.context.forward(Record(record.key, None if before is None else before.value, record.timestamp))


def test_processor_api_with_a_versioned_store_builder():
    b = StreamsBuilder()
    supplier = Stores.persistent_versioned_key_value_store("pa-versioned", 1000)
    b.add_state_store(Stores.versioned_key_value_store_builder(supplier, INT, S))
    b.stream("in", CONSUMED).process(_AsOfLookup, "pa-versioned").to("out", None)
    with TopologyTestDriver(b.build(), config()) as d:
        tin = d.create_input_topic("in", INT, S)
        out = d.create_output_topic("out", INT, S)
        tin.pipe_input(1, "a", 10)
        tin.pipe_input(1, "b", 20)
        tin.pipe_input(1, "x", 15)  # out of order: sees "a", which was valid at 14
        assert triples(out) == [(1, None, 10), (1, "a", 20), (1, "a", 15)]
        store = d.get_state_store("pa-versioned")
        assert store.get(1) == VersionedRecord("b", 20, None)
        assert store.get(1, 17) == VersionedRecord("x", 15, 20)

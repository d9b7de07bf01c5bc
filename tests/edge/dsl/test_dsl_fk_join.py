"""Foreign-key table-table joins (KIP-213), ported from Kafka's KTableKTableForeignKeyJoinScenarioTest
and KTableKTableForeignKeyJoinIntegrationTest (same inputs, same expected outputs and stores), plus the
internal topic / store names and the stale-response hash check."""

import struct

import pytest

from edge.dsl import Consumed, Materialized, Produced, StreamsBuilder, TableJoined
from edge.errors import TopologyError
from edge.processor import StreamsConfig
from edge.processor.ops.fk_join import (
    Instruction,
    SubscriptionResponseWrapper,
    SubscriptionResponseWrapperSerde,
    SubscriptionWrapper,
    SubscriptionWrapperSerde,
    murmur3_128,
)
from edge.serde import Serdes
from edge.testing import TopologyTestDriver

S, INT = Serdes.string(), Serdes.int()
LEFT, RIGHT, OUTPUT, REJOIN = "left_table", "right_table", "output-topic", "rejoin-output-topic"
T0 = 1_700_000_000_000


def config(app="fk-join", key=S, value=S):
    return StreamsConfig(app, default_key_serde=key, default_value_serde=value)


def kv_map(topic):
    """Kafka's ``readKeyValuesToMap``: the last value per key, a tombstone kept as ``None``."""
    return dict(topic.read_key_values_to_list())


def joiner(a, b):
    return f"({a},{b})"


def topology(materialized: bool, left_join: bool, rejoin: bool = False, extractor=None):
    """Kafka's KTableKTableForeignKeyJoinIntegrationTest.getTopology (caching off, as there)."""
    extractor = extractor or (lambda v: v.split("|")[1])
    b = StreamsBuilder()
    left = b.table(LEFT, Consumed.with_(S, S))
    right = b.table(RIGHT, Consumed.with_(S, S))
    if materialized:
        m = Materialized.as_("store").in_memory().with_value_serde(S).with_caching_disabled()
    else:
        m = Materialized.with_(None, S).with_caching_disabled()
    join = left.left_join if left_join else left.join
    fk = join(right, joiner, materialized=m, foreign_key_extractor=extractor)
    fk.to_stream().to(OUTPUT)
    if rejoin:
        rm = (
            Materialized.as_("store-rejoin").in_memory().with_value_serde(S).with_caching_disabled()
            if materialized
            else Materialized.with_(None, S)
        )
        rejoin_join = fk.left_join if left_join else fk.join
        rejoin_join(left, lambda a, b: f"rejoin({a},{b})", materialized=rm).to_stream().to(REJOIN)
    return b.build()


CASES = [(m, lj, rj) for m in (True, False) for lj in (True, False) for rj in (True, False)]


def _run(materialized, left_join, rejoin=False, extractor=None):
    d = TopologyTestDriver(topology(materialized, left_join, rejoin, extractor), config())
    return (
        d,
        d.create_input_topic(RIGHT, S, S),
        d.create_input_topic(LEFT, S, S),
        d.create_output_topic(OUTPUT, S, S),
        d.create_output_topic(REJOIN, S, S) if rejoin else None,
    )


@pytest.mark.parametrize("materialized,left_join,rejoin", CASES)
def test_join_from_left_then_delete_left_entity(materialized, left_join, rejoin):
    d, right, left, out, rejoin_out = _run(materialized, left_join, rejoin)
    with d:
        right.pipe_input("rhs1", "rhsValue1", T0)
        right.pipe_input("rhs2", "rhsValue2", T0 + 1)
        right.pipe_input("rhs3", "rhsValue3", T0 + 2)  # unreferenced: never in any result
        assert kv_map(out) == {}
        if materialized:
            assert d.get_key_value_store("store").to_dict() == {}

        left.pipe_input("lhs1", "lhsValue1|rhs1", T0 + 3)
        left.pipe_input("lhs2", "lhsValue2|rhs2", T0 + 4)
        expected = {"lhs1": "(lhsValue1|rhs1,rhsValue1)", "lhs2": "(lhsValue2|rhs2,rhsValue2)"}
        assert kv_map(out) == expected
        if rejoin:
            assert kv_map(rejoin_out) == {
                "lhs1": "rejoin((lhsValue1|rhs1,rhsValue1),lhsValue1|rhs1)",
                "lhs2": "rejoin((lhsValue2|rhs2,rhsValue2),lhsValue2|rhs2)",
            }
        if materialized:
            assert d.get_key_value_store("store").to_dict() == expected

        left.pipe_input("lhs3", "lhsValue3|rhs1", T0 + 5)  # another reference to an existing FK
        assert kv_map(out) == {"lhs3": "(lhsValue3|rhs1,rhsValue1)"}
        if rejoin:
            assert kv_map(rejoin_out) == {"lhs3": "rejoin((lhsValue3|rhs1,rhsValue1),lhsValue3|rhs1)"}
        if materialized:
            assert d.get_key_value_store("store").to_dict() == {
                **expected,
                "lhs3": "(lhsValue3|rhs1,rhsValue1)",
            }

        left.pipe_input("lhs1", None, T0 + 6)  # the delete reaches the output
        assert kv_map(out) == {"lhs1": None}
        if rejoin:
            assert kv_map(rejoin_out) == {"lhs1": None}
        if materialized:
            assert d.get_key_value_store("store").to_dict() == {
                "lhs2": "(lhsValue2|rhs2,rhsValue2)",
                "lhs3": "(lhsValue3|rhs1,rhsValue1)",
            }


@pytest.mark.parametrize("materialized,left_join", [(m, lj) for m in (True, False) for lj in (True, False)])
def test_join_from_right_then_delete_right_entity(materialized, left_join):
    d, right, left, out, _ = _run(materialized, left_join)
    with d:
        left.pipe_input("lhs1", "lhsValue1|rhs1", T0)
        left.pipe_input("lhs2", "lhsValue2|rhs2", T0 + 1)
        left.pipe_input("lhs3", "lhsValue3|rhs1", T0 + 2)
        half = {
            "lhs1": "(lhsValue1|rhs1,null)",
            "lhs2": "(lhsValue2|rhs2,null)",
            "lhs3": "(lhsValue3|rhs1,null)",
        }
        half = {k: v.replace("null", "None") for k, v in half.items()}
        assert kv_map(out) == (half if left_join else {})

        right.pipe_input("rhs1", "rhsValue1", T0 + 3)
        assert kv_map(out) == {
            "lhs1": "(lhsValue1|rhs1,rhsValue1)",
            "lhs3": "(lhsValue3|rhs1,rhsValue1)",
        }
        if materialized:
            both = {"lhs1": "(lhsValue1|rhs1,rhsValue1)", "lhs3": "(lhsValue3|rhs1,rhsValue1)"}
            assert d.get_key_value_store("store").to_dict() == (
                {**both, "lhs2": "(lhsValue2|rhs2,None)"} if left_join else both
            )

        right.pipe_input("rhs2", "rhsValue2", T0 + 4)
        assert kv_map(out) == {"lhs2": "(lhsValue2|rhs2,rhsValue2)"}
        right.pipe_input("rhs3", "rhsValue3", T0 + 5)  # unreferenced
        assert kv_map(out) == {}

        right.pipe_input("rhs1", None, T0 + 6)  # every subscriber of rhs1 gets the delete
        assert kv_map(out) == {
            "lhs1": "(lhsValue1|rhs1,None)" if left_join else None,
            "lhs3": "(lhsValue3|rhs1,None)" if left_join else None,
        }
        if materialized:
            expected = {"lhs2": "(lhsValue2|rhs2,rhsValue2)"}
            if left_join:
                expected |= {"lhs1": "(lhsValue1|rhs1,None)", "lhs3": "(lhsValue3|rhs1,None)"}
            assert d.get_key_value_store("store").to_dict() == expected


@pytest.mark.parametrize("left_join", [True, False])
def test_tombstone_when_deleting_non_joining_records_and_none_for_unknown_ones(left_join):
    d, _right, left, out, _ = _run(True, left_join)
    with d:
        left.pipe_input("lhs1", None, T0)  # never existed: nothing to say
        assert kv_map(out) == {}
        left.pipe_input("lhs1", "lhsValue1|rhs1", T0)
        assert kv_map(out) == ({"lhs1": "(lhsValue1|rhs1,None)"} if left_join else {})
        # the inner join cannot know whether a result was emitted before: an unnecessary tombstone
        left.pipe_input("lhs1", None, T0 + 1)
        assert kv_map(out) == {"lhs1": None}
        assert d.get_key_value_store("store").to_dict() == {}
        left.pipe_input("lhs1", None, T0 + 2)  # idempotent
        assert kv_map(out) == {}


@pytest.mark.parametrize("left_join", [True, False])
def test_non_matching_foreign_key_then_moving_to_an_existing_one(left_join):
    d, right, left, out, _ = _run(True, left_join)
    with d:
        store = d.get_key_value_store("store")
        left.pipe_input("lhs1", "lhsValue1|rhs1", T0)
        assert kv_map(out) == ({"lhs1": "(lhsValue1|rhs1,None)"} if left_join else {})
        left.pipe_input("lhs1", "lhsValue1|rhs2", T0 + 1)  # inner: an unnecessary tombstone
        assert kv_map(out) == {"lhs1": "(lhsValue1|rhs2,None)" if left_join else None}
        left.pipe_input("lhs1", "lhsValue1|rhs3", T0 + 2)
        assert kv_map(out) == {"lhs1": "(lhsValue1|rhs3,None)" if left_join else None}
        right.pipe_input("rhs1", "rhsValue1", T0 + 3)  # no longer referenced: no change
        assert kv_map(out) == {}
        assert store.to_dict() == ({"lhs1": "(lhsValue1|rhs3,None)"} if left_join else {})
        left.pipe_input("lhs1", "lhsValue1|rhs1", T0 + 4)
        assert kv_map(out) == {"lhs1": "(lhsValue1|rhs1,rhsValue1)"}
        assert store.to_dict() == {"lhs1": "(lhsValue1|rhs1,rhsValue1)"}


@pytest.mark.parametrize("left_join", [True, False])
def test_changing_the_foreign_key_unsubscribes_the_old_one(left_join):
    d, right, left, out, _ = _run(True, left_join)
    with d:
        right.pipe_input("rhs1", "rhsValue1", T0)
        right.pipe_input("rhs2", "rhsValue2", T0 + 1)
        left.pipe_input("lhs1", "lhsValue1|rhs1", T0 + 2)
        assert out.read_records_to_list()[0].value == "(lhsValue1|rhs1,rhsValue1)"
        left.pipe_input("lhs1", "lhsValue1|rhs2", T0 + 3)
        records = out.read_records_to_list()
        # a left join first hears from the old foreign key (DELETE_KEY_AND_PROPAGATE, hashed with the
        # new value, so it is not stale): the half-joined row, then the new foreign key's answer
        expected = [("lhs1", "(lhsValue1|rhs2,rhsValue2)", T0 + 3)]
        if left_join:
            expected.insert(0, ("lhs1", "(lhsValue1|rhs2,None)", T0 + 3))
        assert [(r.key, r.value, r.timestamp) for r in records] == expected
        right.pipe_input("rhs1", "rhsValue1Delta", T0 + 4)  # the old foreign key: no longer joined
        assert kv_map(out) == {}
        right.pipe_input("rhs2", "rhsValue2Delta", T0 + 5)  # the new one: re-emitted
        assert [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()] == [
            ("lhs1", "(lhsValue1|rhs2,rhsValue2Delta)", T0 + 5)
        ]
        assert d.get_key_value_store("store").to_dict() == {"lhs1": "(lhsValue1|rhs2,rhsValue2Delta)"}


def test_left_join_emits_for_a_null_foreign_key():
    d, _right, left, out, _ = _run(True, True, extractor=lambda v: None)
    with d:
        left.pipe_input("lhs1", "lhsValue1|rhs1", T0)
        assert kv_map(out) == {"lhs1": "(lhsValue1|rhs1,None)"}


def test_inner_join_drops_a_null_foreign_key():
    d, _right, left, out, _ = _run(True, False, extractor=lambda v: None)
    with d:
        left.pipe_input("lhs1", "lhsValue1|rhs1", T0)
        assert kv_map(out) == {}


def test_left_join_emits_when_old_and_new_foreign_key_differ_and_forgets_the_subscription():
    def extractor(v):
        fk = v.split("|")[1]
        return None if fk == "returnNull" else fk

    d, _right, left, out, _ = _run(True, True, extractor=extractor)
    with d:
        sub_name = next(n for n in d.topology.store_names() if "SUBSCRIPTION-STATE-STORE" in n)
        sub_store = d.get_key_value_store(sub_name)
        key = struct.pack(">i", 4) + b"rhs1" + b"lhs1"  # Kafka's subscriptionStoreKey("lhs1", "rhs1")
        left.pipe_input("lhs1", "lhsValue1|rhs1", T0)
        assert kv_map(out) == {"lhs1": "(lhsValue1|rhs1,None)"}
        assert sub_store.get(key) is not None
        left.pipe_input("lhs1", "lhsValue1|returnNull", T0)
        assert kv_map(out) == {"lhs1": "(lhsValue1|returnNull,None)"}
        assert sub_store.get(key) is None


def test_output_timestamps_are_the_larger_of_both_sides():
    d, right, left, out, _ = _run(True, False)
    with d:
        right.pipe_input("rhs1", "r", 100)
        left.pipe_input("lhs1", "l|rhs1", 50)  # answered by the subscription: max(50, 100)
        right.pipe_input("rhs1", "r2", 70)  # answered by the right change: its own timestamp
        assert [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()] == [
            ("lhs1", "(l|rhs1,r)", 100),
            ("lhs1", "(l|rhs1,r2)", 70),
        ]


def _scenario_builder(a_consumed=None, result_materialized=None, produced=None):
    b = StreamsBuilder()
    a = b.table("A", a_consumed)
    bt = b.table("B")
    fk = a.join(
        bt,
        lambda av, bv: f"({av},{bv})",
        materialized=result_materialized or Materialized.as_("asdf"),
        foreign_key_extractor=lambda v: int(v.split("-")[0]),
    )
    final = a.join(fk, lambda av, fv: f"({av},{fv})")
    final.to_stream().to("output", produced)
    return b


@pytest.mark.parametrize(
    "builder",
    [
        _scenario_builder(),
        _scenario_builder(a_consumed=Consumed.with_(INT, S)),
        _scenario_builder(
            result_materialized=Materialized.as_("asdf").with_key_serde(INT).with_value_serde(S)
        ),
        _scenario_builder(produced=Produced.with_(INT, S)),
    ],
    ids=["default-serdes", "consumed-serdes", "result-serdes", "produced-serdes"],
)
def test_scenario_fk_join_then_primary_key_join_with_default_serdes(builder):
    """KTableKTableForeignKeyJoinScenarioTest: default serdes fill in every serde the DSL lacks."""
    with TopologyTestDriver(builder.build(), config(key=INT, value=S)) as d:
        d.create_input_topic("A", INT, S).pipe_input(1, "999-alpha")
        d.create_input_topic("B", INT, S).pipe_input(999, "beta")
        out = d.create_output_topic("output", INT, S)
        assert kv_map(out) == {1: "(999-alpha,(999-alpha,beta))"}


def test_internal_topics_and_stores_are_named_as_kafka_names_them():
    """shouldUseExpectedTopicsWithSerde: the same internal topics (and changelogs) as Kafka."""
    b = StreamsBuilder()
    left = b.table(LEFT, Consumed.with_(INT, S))
    right = b.table(RIGHT, Consumed.with_(INT, S))
    left.join(
        right,
        joiner,
        materialized=Materialized.with_(None, S),
        foreign_key_extractor=lambda v: int(v.split("|")[1]),
    ).to_stream().to(OUTPUT)
    t = b.build()
    app = "ktable-ktable-joinOnForeignKey"
    assert t.repartition_topics(app) == {
        f"{app}-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic": None,
        f"{app}-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic": None,
    }
    changelogs = t.changelog_topics(app)
    assert (
        changelogs[LEFT + "-STATE-STORE-0000000000"] == f"{app}-left_table-STATE-STORE-0000000000-changelog"
    )
    assert (
        changelogs[RIGHT + "-STATE-STORE-0000000003"] == f"{app}-right_table-STATE-STORE-0000000003-changelog"
    )
    assert "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010" in changelogs
    # as in Kafka, the unnamed result is not materialized (its store name 19 is only reserved)
    assert not any("FK-JOIN-OUTPUT" in n for n in t.store_names())
    with TopologyTestDriver(t, config(app, key=INT)) as d:
        d.create_input_topic(LEFT, INT, S).pipe_input(2, "lhsValue1|1")
        d.create_input_topic(RIGHT, INT, S).pipe_input(1, "rhsValue1")
        assert d.create_output_topic(OUTPUT, INT, S).read_key_values_to_map() == {
            2: "(lhsValue1|1,rhsValue1)"
        }
        produced = d.produced_topics()
        assert f"{app}-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic" in produced
        assert f"{app}-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic" in produced


def test_table_joined_names_every_node():
    b = StreamsBuilder()
    left = b.table(LEFT, Consumed.with_(S, S))
    right = b.table(RIGHT, Consumed.with_(S, S))
    left.join(
        right, joiner, TableJoined.as_("orders"), "joined", foreign_key_extractor=lambda v: v
    ).to_stream().to(OUTPUT)
    text = str(b.build().describe())
    for node in (
        "orders-subscription-registration-processor",
        "orders-subscription-registration-sink (topic: orders-subscription-registration-topic)",
        "orders-subscription-registration-source (topics: [orders-subscription-registration-topic])",
        "orders-subscription-receive (stores: [orders-subscription-store])",
        "orders-subscription-join-foreign",
        "orders-foreign-join-subscription (stores: [orders-subscription-store])",
        "orders-subscription-response-sink (topic: orders-subscription-response-topic)",
        "orders-subscription-response-resolver",
        "orders-result (stores: [joined])",
    ):
        assert node in text, node


def test_user_mistakes_are_clear_errors():
    b = StreamsBuilder()
    left = b.table(LEFT, Consumed.with_(S, S))
    with pytest.raises(TopologyError, match="expected a KTable"):
        left.join(b.global_table(RIGHT), joiner, foreign_key_extractor=lambda v: v)
    with pytest.raises(TopologyError, match="joiner is required"):
        left.join(left, foreign_key_extractor=lambda v: v)
    with pytest.raises(TopologyError, match="foreign-key joins"):
        left.join(left, joiner, TableJoined.as_("x"))


def test_a_stale_response_is_dropped_by_the_hash_check():
    """ResponseJoinProcessorSupplierTest: an answer computed for an older left value is discarded, so a
    quickly changing foreign key never shows a result for a value the row no longer has."""
    d, right, left, out, _ = _run(True, False)
    with d:
        right.pipe_input("rhs1", "rhsValue1", T0)
        left.pipe_input("lhs1", "lhsValue1|rhs1", T0 + 1)
        assert kv_map(out) == {"lhs1": "(lhsValue1|rhs1,rhsValue1)"}
        response_topic = next(t for t in d.topology.internal_topics if "SUBSCRIPTION-RESPONSE" in t)
        responses = d.create_input_topic(response_topic, S, SubscriptionResponseWrapperSerde(S))
        stale = SubscriptionResponseWrapper(murmur3_128(b"lhsValue0|rhs9"), "rhsValueOld")
        responses.pipe_input("lhs1", stale, T0 + 2)
        assert kv_map(out) == {}
        current = SubscriptionResponseWrapper(murmur3_128(b"lhsValue1|rhs1"), "rhsValueNew")
        responses.pipe_input("lhs1", current, T0 + 3)
        assert kv_map(out) == {"lhs1": "(lhsValue1|rhs1,rhsValueNew)"}


def test_wrapper_serdes_use_kafkas_layout():
    """SubscriptionWrapperSerdeTest / SubscriptionResponseWrapperSerdeTest byte layouts."""
    serde = SubscriptionWrapperSerde(S)
    w = SubscriptionWrapper((1, -2), Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE, "pk", 3)
    data = serde.serialize("t", w)
    assert data == b"\x01\x03" + struct.pack(">qq", 1, -2) + b"pk" + struct.pack(">i", 3)
    assert serde.deserialize("t", data) == w
    no_hash = SubscriptionWrapper(None, Instruction.DELETE_KEY_AND_PROPAGATE, "pk", 0)
    assert serde.serialize("t", no_hash)[:2] == b"\x81\x01"
    assert serde.deserialize("t", serde.serialize("t", no_hash)) == no_hash
    rs = SubscriptionResponseWrapperSerde(S)
    r = SubscriptionResponseWrapper((5, 6), "value")
    assert rs.serialize("t", r) == b"\x00" + struct.pack(">qq", 5, 6) + b"value"
    assert rs.deserialize("t", rs.serialize("t", r)) == r
    empty = SubscriptionResponseWrapper(None, None)
    assert rs.serialize("t", empty) == b"\x80"
    assert rs.deserialize("t", b"\x80") == empty


def test_murmur3_matches_kafkas_hash128():
    # reference values of MurmurHash3_x64_128 with Kafka's seed 104729 (mmh3.hash64(..., seed=104729))
    assert murmur3_128(b"hello") == (3512725192710940516, 6227047293690958278)
    assert murmur3_128(b"") == (-7122613646888064702, -8341524471658347240)
    assert murmur3_128(b"The quick brown fox jumps over the lazy dog") == (
        -1779949751512360504,
        -5190294356955732186,
    )


KAFKA_FK_DESCRIBE = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KTABLE-SOURCE-0000000016 (topics: [KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic])\n"
    "      --> KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000017\n"
    "    Source: KSTREAM-SOURCE-0000000000 (topics: [input1])\n"
    "      --> KSTREAM-TOTABLE-0000000001\n"
    "    Processor: KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000017 "
    "(stores: [KSTREAM-TOTABLE-STATE-STORE-0000000002])\n"
    "      --> KTABLE-FK-JOIN-OUTPUT-0000000018\n"
    "      <-- KTABLE-SOURCE-0000000016\n"
    "    Processor: KSTREAM-TOTABLE-0000000001 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000002])\n"
    "      --> KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000007\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    "    Processor: KTABLE-FK-JOIN-OUTPUT-0000000018 (stores: [])\n"
    "      --> KTABLE-TOSTREAM-0000000020\n"
    "      <-- KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000017\n"
    "    Processor: KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000007 (stores: [])\n"
    "      --> KTABLE-SINK-0000000008\n"
    "      <-- KSTREAM-TOTABLE-0000000001\n"
    "    Processor: KTABLE-TOSTREAM-0000000020 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000021\n"
    "      <-- KTABLE-FK-JOIN-OUTPUT-0000000018\n"
    "    Sink: KSTREAM-SINK-0000000021 (topic: output)\n"
    "      <-- KTABLE-TOSTREAM-0000000020\n"
    "    Sink: KTABLE-SINK-0000000008 (topic: KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic)\n"
    "      <-- KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000007\n"
    "\n"
    "  Sub-topology: 1\n"
    "    Source: KSTREAM-SOURCE-0000000003 (topics: [input2])\n"
    "      --> KSTREAM-TOTABLE-0000000004\n"
    "    Source: KTABLE-SOURCE-0000000009 "
    "(topics: [KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic])\n"
    "      --> KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000011\n"
    "    Processor: KSTREAM-TOTABLE-0000000004 (stores: [KSTREAM-TOTABLE-STATE-STORE-0000000005])\n"
    "      --> KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000013\n"
    "      <-- KSTREAM-SOURCE-0000000003\n"
    "    Processor: KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000011 "
    "(stores: [KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010])\n"
    "      --> KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000012\n"
    "      <-- KTABLE-SOURCE-0000000009\n"
    "    Processor: KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000012 "
    "(stores: [KSTREAM-TOTABLE-STATE-STORE-0000000005])\n"
    "      --> KTABLE-SINK-0000000015\n"
    "      <-- KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000011\n"
    "    Processor: KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000013 "
    "(stores: [KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010])\n"
    "      --> KTABLE-SINK-0000000015\n"
    "      <-- KSTREAM-TOTABLE-0000000004\n"
    "    Sink: KTABLE-SINK-0000000015 (topic: KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic)\n"
    "      <-- KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000012, "
    "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000013\n\n"
)


def test_describe_matches_kafka_for_a_fk_join_of_tables_from_streams():
    """KStreamImplTest.shouldSupportForeignKeyTableTableJoinWithKTableFromKStream."""
    b = StreamsBuilder()
    left = b.stream("input1", Consumed.with_(S, S)).to_table()
    right = b.stream("input2", Consumed.with_(S, S)).to_table()
    left.join(right, joiner, foreign_key_extractor=lambda v: v.split("|")[1]).to_stream().to("output")
    t = b.build()
    assert str(t.describe()) == KAFKA_FK_DESCRIBE
    with TopologyTestDriver(t, config()) as d:
        lin, rin = d.create_input_topic("input1", S, S), d.create_input_topic("input2", S, S)
        out = d.create_output_topic("output", S, S)
        rin.pipe_input("rhs1", "rhsValue1")
        rin.pipe_input("rhs2", "rhsValue2")
        rin.pipe_input("rhs3", "rhsValue3")
        assert kv_map(out) == {}
        lin.pipe_input("lhs1", "lhsValue1|rhs1")
        lin.pipe_input("lhs2", "lhsValue2|rhs2")
        assert kv_map(out) == {"lhs1": "(lhsValue1|rhs1,rhsValue1)", "lhs2": "(lhsValue2|rhs2,rhsValue2)"}
        lin.pipe_input("lhs3", "lhsValue3|rhs1")
        assert kv_map(out) == {"lhs3": "(lhsValue3|rhs1,rhsValue1)"}
        lin.pipe_input("lhs1", None)
        assert kv_map(out) == {"lhs1": None}

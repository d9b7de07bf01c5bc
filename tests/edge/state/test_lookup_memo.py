"""The look-up memo: a join reading the same table rows hands out what a fresh parse would, every time."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from edge.dsl import Consumed, Materialized, Produced, StreamsBuilder
from edge.errors import SerdeError
from edge.processor import StreamsConfig
from edge.serde import Serdes, ValueAndTimestamp, ValueAndTimestampSerde
from edge.state.lookup_memo import MAX_MEMOIZED_VALUE_BYTES, LookupMemo, lookup_memo_for
from edge.testing import TopologyTestDriver

S, J = Serdes.string(), Serdes.json()


def _vat(value: object, ts: int) -> bytes:
    return ValueAndTimestampSerde(J).serialize("t", ValueAndTimestamp(value, ts))  # type: ignore[return-value]


def test_each_read_gets_its_own_object_equal_to_a_fresh_parse() -> None:
    memo = LookupMemo(ValueAndTimestampSerde(J))
    data = _vat({"tier": "gold", "since": 2015, "ok": True, "x": None, "r": 1.5}, 7)
    assert memo.deserialize("t", data).value == {
        "tier": "gold",
        "since": 2015,
        "ok": True,
        "x": None,
        "r": 1.5,
    }
    assert len(memo) == 0  # a row read once is not kept
    first, second = memo.deserialize("t", data), memo.deserialize("t", data)
    assert (
        first
        == second
        == ValueAndTimestamp({"tier": "gold", "since": 2015, "ok": True, "x": None, "r": 1.5}, 7)
    )
    assert first.value is not second.value
    first.value["tier"] = "changed by a joiner"  # the parse the memo was filled from
    second.value["tier"] = "changed too"  # a read the memo answered
    assert memo.deserialize("t", data).value["tier"] == "gold"
    assert (memo.hits, memo.misses, len(memo)) == (2, 2, 1)


def test_flat_arrays_are_copied_and_scalars_shared() -> None:
    memo = LookupMemo(J)
    arr = orjson.dumps([1, "a", None])
    a, b = memo.deserialize("t", arr), memo.deserialize("t", arr)
    assert a == b == [1, "a", None] and a is not b
    a[0] = b[0] = 2
    assert memo.deserialize("t", arr) == [1, "a", None]
    assert memo.deserialize("t", b'"text"') == memo.deserialize("t", b'"text"') == "text"
    assert memo.deserialize("t", None) is None
    assert len(memo) == 2


@pytest.mark.parametrize("value", [{"user": {"tier": "gold"}}, [[1], 2], {"tags": ["a"]}])
def test_nested_values_are_parsed_on_every_read_and_never_kept(value: object) -> None:
    memo = LookupMemo(J)
    data = orjson.dumps(value)
    a, b, c = (memo.deserialize("t", data) for _ in range(3))
    assert a == b == c == value
    assert a is not b and b is not c
    assert len(memo) == 0 and memo.misses == 3


def test_long_values_are_not_kept() -> None:
    memo = LookupMemo(J)
    data = orjson.dumps({"blob": "x" * MAX_MEMOIZED_VALUE_BYTES})
    for _ in range(3):
        assert memo.deserialize("t", data) == {"blob": "x" * MAX_MEMOIZED_VALUE_BYTES}
    assert len(memo) == 0


def test_the_memo_starts_over_when_its_bytes_pass_the_budget() -> None:
    memo = LookupMemo(J, max_bytes=100)
    rows = [orjson.dumps({"n": i, "pad": "p" * 20}) for i in range(10)]
    for i, row in enumerate(rows):
        for _ in range(2):  # the second read keeps it
            assert memo.deserialize("t", row) == {"n": i, "pad": "p" * 20}
            assert memo._bytes <= 100
    assert 0 < len(memo) < len(rows)


def test_rows_read_once_are_not_kept_and_their_marks_stay_within_the_budget() -> None:
    memo = LookupMemo(J, max_bytes=100)
    for i in range(500):  # a table whose rows change before they are read again
        assert memo.deserialize("t", orjson.dumps({"n": i})) == {"n": i}
        assert memo._bytes <= 100
    assert len(memo) == 0 and memo.hits == 0


def test_a_bad_row_raises_the_serdes_error_with_its_topic() -> None:
    memo = LookupMemo(ValueAndTimestampSerde(J))
    with pytest.raises(SerdeError, match="users-changelog"):
        memo.deserialize("users-changelog", b"\x00" * 8 + b"{not json")


def test_only_the_json_serde_is_memoized_and_each_serde_has_one_memo() -> None:
    vat = ValueAndTimestampSerde(J)
    assert lookup_memo_for(vat) is lookup_memo_for(vat)
    assert lookup_memo_for(J) is not lookup_memo_for(vat)
    assert lookup_memo_for(S) is None
    assert lookup_memo_for(ValueAndTimestampSerde(S)) is None
    assert lookup_memo_for(ValueAndTimestampSerde(Serdes.long())) is None


def test_a_memo_no_reader_holds_is_let_go() -> None:
    import gc

    from edge.state import lookup_memo

    serde = ValueAndTimestampSerde(J)
    memo = lookup_memo_for(serde)
    assert memo is not None and lookup_memo._memos.get(id(serde)) is memo
    del memo
    gc.collect()
    assert lookup_memo._memos.get(id(serde)) is None


def _enrichment(joiner: Any) -> Any:
    b = StreamsBuilder()
    users = b.table("users", Consumed.with_(S, J), Materialized.as_("users"))
    b.stream("events", Consumed.with_(S, J)).left_join(users, joiner).to("out", Produced.with_(S, J))
    return b.build()


def test_a_joiner_that_changes_the_table_row_it_gets_changes_nothing_for_the_next_record() -> None:
    """Kafka Streams parses the row on every read; so does the edge, in effect: a row the joiner
    changed in place is read afresh for the next record, and an updated row is read as updated."""

    def joiner(event: dict, user: dict | None) -> dict:
        if user is None:
            return {**event, "seen": None}
        user["seen"] = user.get("seen", 0) + 1  # changes the row object it was handed
        return {**event, "tier": user["tier"], "seen": user["seen"]}

    with TopologyTestDriver(_enrichment(joiner), StreamsConfig("memo")) as d:
        users, events = d.create_input_topic("users", S, J), d.create_input_topic("events", S, J)
        out = d.create_output_topic("out", S, J)
        users.pipe_input("u1", {"tier": "gold"}, 1)
        for i in range(3):
            events.pipe_input("u1", {"n": i}, 10 + i)
        users.pipe_input("u1", {"tier": "silver"}, 20)
        events.pipe_input("u1", {"n": 3}, 21)
        users.pipe_input("u1", None, 22)
        events.pipe_input("u1", {"n": 4}, 23)
        assert [v for _, v in out.read_key_values_to_list()] == [
            {"n": 0, "tier": "gold", "seen": 1},
            {"n": 1, "tier": "gold", "seen": 1},
            {"n": 2, "tier": "gold", "seen": 1},
            {"n": 3, "tier": "silver", "seen": 1},
            {"n": 4, "seen": None},
        ]
        assert d.get_key_value_store("users").get("u1") is None

"""KeyValueStore contract on every stack combination (RocksDB/in-memory x caching x logging)."""

from __future__ import annotations

import pytest

from edge.errors import StateStoreError
from edge.serde import Serdes
from edge.state import KeyValueIterator, KeyValueStore

STACKS = [
    pytest.param(dict(persistent=True, caching=True, logging=True), id="rocks-cache-log"),
    pytest.param(dict(persistent=True, caching=False, logging=True), id="rocks-log"),
    pytest.param(dict(persistent=True, caching=True, logging=False), id="rocks-cache"),
    pytest.param(dict(persistent=True, caching=False, logging=False), id="rocks"),
    pytest.param(dict(persistent=False, caching=True, logging=True), id="mem-cache-log"),
    pytest.param(dict(persistent=False, caching=False, logging=False), id="mem"),
    pytest.param(
        dict(persistent=True, caching=True, logging=True, cache_max_bytes=200), id="rocks-tinycache"
    ),
    pytest.param(dict(persistent=False, caching=True, logging=True, cache_max_bytes=200), id="mem-tinycache"),
]


@pytest.fixture(params=STACKS)
def store(request, make_store) -> KeyValueStore:
    return make_store(**request.param)


def test_stack_satisfies_protocol(store) -> None:
    assert isinstance(store, KeyValueStore)
    assert store.is_open


def test_get_put_delete(store) -> None:
    assert store.get("a") is None
    store.put("a", "1")
    store.put("b", "2")
    assert store.get("a") == "1"
    store.put("a", "3")
    assert store.get("a") == "3"
    assert store.delete("a") == "3"
    assert store.get("a") is None
    assert store.delete("a") is None
    store.put("b", None)  # None value = delete
    assert store.get("b") is None
    assert store.get(None) is None


def test_put_if_absent(store) -> None:
    assert store.put_if_absent("k", "first") is None
    assert store.put_if_absent("k", "second") == "first"
    assert store.get("k") == "first"
    store.delete("k")
    assert store.put_if_absent("k", "third") is None
    assert store.get("k") == "third"


def test_put_all(store) -> None:
    store.put_all([("a", "1"), ("b", "2"), ("c", "3"), ("b", None), ("a", "10")])
    assert [store.get(k) for k in "abc"] == ["10", None, "3"]


def test_range_all_prefix_ordered_by_key_bytes(store) -> None:
    keys = ["b", "a", "ab", "abc", "b\x00", "ac", "c", "ba", ""]
    for k in keys:
        store.put(k, k.upper())
    store.delete("ac")
    expected = sorted(k for k in keys if k != "ac")
    with store.all() as it:
        assert [k for k, _ in it] == expected
    with store.range("ab", "b") as it:
        assert list(it) == [("ab", "AB"), ("abc", "ABC"), ("b", "B")]  # inclusive both ends
    with store.range(None, "ab") as it:
        assert [k for k, _ in it] == ["", "a", "ab"]
    with store.range("b", None) as it:
        assert [k for k, _ in it] == ["b", "b\x00", "ba", "c"]
    with store.range("c", "a") as it:  # inverted bounds: empty
        assert list(it) == []
    with store.prefix_scan("a") as it:
        assert [k for k, _ in it] == ["a", "ab", "abc"]
    with store.prefix_scan("b") as it:
        assert [k for k, _ in it] == ["b", "b\x00", "ba"]
    with store.prefix_scan("zz") as it:
        assert list(it) == []


def test_prefix_scan_with_prefix_serde_and_0xff_bytes(make_store) -> None:
    store = make_store(key_serde=Serdes.bytes(), value_serde=Serdes.bytes())
    for k in [b"\xff", b"\xff\xff", b"\xff\xff\x01", b"\xfe\xff", b"\x00"]:
        store.put(k, b"v")
    with store.prefix_scan(b"\xff\xff") as it:
        assert [k for k, _ in it] == [b"\xff\xff", b"\xff\xff\x01"]
    with store.prefix_scan(b"\xfe") as it:
        assert [k for k, _ in it] == [b"\xfe\xff"]
    # prefix serialized with another serde than the key serde: 4-byte int prefix of a composite key
    store.put(Serdes.int().serialize("t", 7) + b"x", b"1")
    store.put(Serdes.int().serialize("t", 8) + b"y", b"2")
    with store.prefix_scan(7, prefix_serde=Serdes.int()) as it:
        assert list(it) == [(b"\x00\x00\x00\x07x", b"1")]


def test_numeric_keys_order_by_serialized_bytes(make_store) -> None:
    store = make_store(key_serde=Serdes.long(), value_serde=Serdes.long())
    for k in [5, 1, 300, 2**40, 0]:
        store.put(k, k * 2)
    with store.all() as it:
        assert list(it) == [(0, 0), (1, 2), (5, 10), (300, 600), (2**40, 2**41)]
    with store.range(1, 300) as it:
        assert [k for k, _ in it] == [1, 5, 300]


def test_approximate_num_entries(store) -> None:
    assert store.approximate_num_entries() == 0
    for i in range(50):
        store.put(f"k{i:03}", "v")
    store.flush()
    n = store.approximate_num_entries()
    assert 40 <= n <= 60
    for i in range(50):
        store.delete(f"k{i:03}")
    store.flush()
    assert store.approximate_num_entries() <= 50


def test_iterator_protocol_and_peek(store) -> None:
    for k in "abc":
        store.put(k, k)
    it = store.all()
    assert isinstance(it, KeyValueIterator)
    assert it.peek_next_key() == "a"
    assert next(it) == ("a", "a")
    assert it.peek_next_key() == "b"
    assert list(it) == [("b", "b"), ("c", "c")]
    assert it.peek_next_key() is None
    it.close()
    it.close()  # idempotent
    with pytest.raises(StateStoreError):
        next(it)


def test_iteration_sees_snapshot_while_store_changes(store) -> None:
    for k in "abcd":
        store.put(k, k)
    with store.all() as it:
        assert next(it) == ("a", "a")
        store.put("e", "e")  # writes during iteration must not break it
        store.delete("a")
        rest = [k for k, _ in it]
    assert rest[:2] == ["b", "c"]


def test_closing_store_closes_open_iterators(store) -> None:
    for k in "abc":
        store.put(k, k)
    it = store.all()
    assert next(it) == ("a", "a")
    store.close()
    with pytest.raises(StateStoreError):
        next(it)
    it.close()  # still fine


def test_use_after_close_raises_state_store_error(store) -> None:
    store.put("a", "1")
    store.close()
    assert not store.is_open
    for op in (
        lambda: store.get("a"),
        lambda: store.put("a", "2"),
        lambda: store.delete("a"),
        lambda: store.put_if_absent("z", "1"),
        lambda: store.all(),
        lambda: store.range("a", "b"),
        lambda: store.prefix_scan("a"),
        lambda: store.approximate_num_entries(),
    ):
        with pytest.raises(StateStoreError):
            op()
    store.close()  # idempotent


def test_null_key_rejected(store) -> None:
    with pytest.raises(StateStoreError):
        store.put(None, "v")
    with pytest.raises(StateStoreError):
        store.put_all([(None, "v")])

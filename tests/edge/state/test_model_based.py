"""Randomised model check: every stack behaves like a sorted dict, and the changelog replays to it."""

from __future__ import annotations

import random

import pytest

from edge.serde import Serdes
from edge.state.caching import ENTRY_OVERHEAD

KEYS = [bytes([a, b]) for a in (0, 1, 0xFF) for b in (0, 7, 0xFF)] + [b"", b"\x01", b"\xff"]


@pytest.mark.parametrize("persistent", [True, False], ids=["rocksdb", "memory"])
@pytest.mark.parametrize("cache_entries", [0, 3, 1000], ids=["no-cache-budget", "tiny-cache", "big-cache"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_stack_matches_dict_model(make_store, sink, persistent, cache_entries, seed) -> None:
    rng = random.Random(seed)
    store = make_store(
        persistent=persistent,
        cache_max_bytes=cache_entries * (ENTRY_OVERHEAD + 4),
        key_serde=Serdes.bytes(),
        value_serde=Serdes.bytes(),
    )
    listener_view: dict[bytes, bytes | None] = {}

    def listener(key, new, old, ts):
        # old must be what the listener saw last for this key (Change(new, old) consistency)
        assert old == listener_view.get(key)
        listener_view[key] = new

    store.set_flush_listener(listener)
    model: dict[bytes, bytes] = {}
    for step in range(600):
        op = rng.random()
        k = rng.choice(KEYS)
        if op < 0.35:
            v = b"v%d" % step
            store.put(k, v, timestamp=step)
            model[k] = v
        elif op < 0.5:
            assert store.delete(k, timestamp=step) == model.pop(k, None)
        elif op < 0.6:
            v = b"p%d" % step
            assert store.put_if_absent(k, v, timestamp=step) == model.get(k)
            model.setdefault(k, v)
        elif op < 0.75:
            assert store.get(k) == model.get(k)
        elif op < 0.85:
            a, b = sorted(rng.sample(KEYS, 2))
            with store.range(a, b) as it:
                assert list(it) == sorted((x, y) for x, y in model.items() if a <= x <= b)
        elif op < 0.92:
            p = k[:1]
            with store.prefix_scan(p) as it:
                assert list(it) == sorted((x, y) for x, y in model.items() if x.startswith(p))
        elif op < 0.97:
            with store.all() as it:
                assert list(it) == sorted(model.items())
        else:
            store.flush()
    store.flush()
    with store.all() as it:
        assert list(it) == sorted(model.items())
    replay = {k: v for k, v in sink.latest().items() if v is not None}
    assert replay == model
    assert {k: v for k, v in listener_view.items() if v is not None} == model

"""Window stores in the runtime: changelog topics, restore after kill -9, interactive queries over HTTP."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest
from confluent_kafka import Producer

from tests.edge.runtime.harness import OutputReader, wait_assignment

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(180)]

APP_ATTR = "tests.edge.runtime.apps.window_app:windowed_counts"
BASE = 1_800_000_000_000  # a multiple of the 10 s window size
SIZE = 10_000


def _produce_timed(client, topic: str, records: list[tuple[str, int]]) -> None:
    p = Producer(client.producer(partitioner="murmur2_random"))
    for key, ts in records:
        p.produce(topic, b"{}", key.encode(), timestamp=ts)
    assert p.flush(30) == 0


def _truth(records: list[tuple[str, int]]) -> dict[str, list[tuple[int, int]]]:
    counts = Counter((k, ts - ts % SIZE) for k, ts in records)
    out: dict[str, list[tuple[int, int]]] = {}
    for (k, start), n in sorted(counts.items()):
        out.setdefault(k, []).append((start, n))
    return out


def _windows(inst, key: str, query: str = "") -> list[tuple[int, int]]:
    status, body = inst.get(f"/v1/stores/window-counts/keys/{key}{query}")
    assert status == 200, body
    assert all(w["window"]["end"] == w["window"]["start"] + SIZE for w in body["windows"])
    return [(w["window"]["start"], w["value"]) for w in body["windows"]]


def test_window_store_restored_after_kill9_and_queried_over_http(
    kafka_broker, make_topic, unique_name, spawn, tmp_path
):
    src, out = make_topic("in", 2), make_topic("out", 2)
    app = unique_name("app")
    a = spawn(app, src, out, name="a", attr=APP_ATTR, state_dir=tmp_path / "a")
    b = spawn(app, src, out, name="b", attr=APP_ATTR, state_dir=tmp_path / "b")
    wait_assignment([a, b], 2)
    records = [(f"k{i % 7}", BASE + (i * 997) % (3 * SIZE)) for i in range(300)]
    _produce_timed(kafka_broker, src, records)
    reader = OutputReader(kafka_broker, out, unique_name("reader"))
    reader.wait_for(lambda r: len(r.records) >= len(records))
    truth = _truth(records)

    # every key answered by both instances (one of them forwards to the owner)
    for key, windows in truth.items():
        assert _windows(a, key) == windows
        assert _windows(b, key) == windows
    first, second = truth["k1"][0][0], truth["k1"][1][0]
    assert _windows(a, "k1", f"?from={second}&to={second}") == [truth["k1"][1]]
    assert _windows(a, "k1", f"?to={first}") == [truth["k1"][0]]
    status, body = a.get("/v1/stores/window-counts/all")
    assert status == 200 and body["count"] == sum(len(w) for w in truth.values())
    status, body = a.get(f"/v1/stores/window-counts/range?from=k1&to=k2&time_from={second}")
    assert status == 200
    got = sorted((e["key"], e["window"]["start"], e["value"]) for e in body["entries"])
    want = sorted((k, s, n) for k in ("k1", "k2") for s, n in truth[k] if s >= second)
    assert got == want
    status, body = a.get("/v1/stores/window-counts/keys/k1?from=yesterday")
    assert status == 400 and "ISO-8601" in body["error"]
    status, body = a.get("/v1/stores/window-counts/keys/k1?since=1")
    assert status == 400
    status, body = a.get(f"/v1/stores/window-counts/keys/k1?from={BASE + 10 * SIZE}")
    assert status == 404

    # kill -9 one instance, wipe its state: the other restores both partitions from the changelog
    a.kill9()
    shutil.rmtree(tmp_path / "a")
    wait_assignment([b], 2, timeout=90)
    for key, windows in truth.items():
        assert _windows(b, key) == windows
    more = [(f"k{i % 7}", BASE + 2 * SIZE + i) for i in range(70)]
    _produce_timed(kafka_broker, src, more)
    reader.wait_for(lambda r: len(r.records) >= len(records) + len(more))
    truth = _truth(records + more)
    for key, windows in truth.items():
        assert _windows(b, key) == windows
    reader.close()

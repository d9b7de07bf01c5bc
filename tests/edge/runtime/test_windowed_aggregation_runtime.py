"""DSL windowed aggregations in the runtime: the window store and the emit-final metadata store are
restored from their changelogs after kill -9 (state directory wiped), and results after the restart are
exact: every window's count equals the truth, and emit-final sends each window exactly once."""

from __future__ import annotations

import shutil
import time
from collections import Counter

import pytest
from confluent_kafka import Producer

from tests.edge.runtime.harness import OutputReader

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(180)]

APP = "tests.edge.runtime.apps.windowed_agg_app"
BASE = 1_800_000_000_000  # a multiple of the 10 s window size
SIZE = 10_000


def _produce(client, topic: str, records: list[tuple[str, int]]) -> None:
    p = Producer(client.producer(partitioner="murmur2_random"))
    for key, ts in records:
        p.produce(topic, b"{}", key.encode(), timestamp=ts)
    assert p.flush(30) == 0


def _truth(records: list[tuple[str, int]]) -> dict[str, int]:
    return dict(Counter(f"{k}@{ts - ts % SIZE}" for k, ts in records))


def test_windowed_count_restored_after_kill9_exact_counts(
    kafka_broker, make_topic, unique_name, spawn, tmp_path
):
    src, out = make_topic("in", 2), make_topic("out", 2)
    app = unique_name("app")
    a = spawn(app, src, out, name="a", attr=f"{APP}:windowed_counts", state_dir=tmp_path / "a")
    a.wait_running()
    first = [(f"k{i % 5}", BASE + (i * 331) % (3 * SIZE)) for i in range(200)]
    _produce(kafka_broker, src, first)
    reader = OutputReader(kafka_broker, out, unique_name("reader"))
    reader.wait_for(lambda r: r.latest() == _truth(first), what="windowed counts before the kill")
    time.sleep(1.0)  # let the commit after the last flush complete (commit.interval.ms=200)
    a.kill9()
    shutil.rmtree(tmp_path / "a")
    b = spawn(app, src, out, name="b", attr=f"{APP}:windowed_counts", state_dir=tmp_path / "b")
    b.wait_running()
    second = [(f"k{i % 5}", BASE + SIZE + (i * 97) % (3 * SIZE)) for i in range(150)]
    _produce(kafka_broker, src, second)
    want = _truth(first + second)
    # the windows the second batch touched continue from the restored counts; the others keep theirs
    reader.wait_for(lambda r: r.latest() == want, what="windowed counts after the restore")
    assert b.metric("streamhouse_edge_restored_records_total") > 0
    reader.close()


def test_emit_final_once_per_window_across_kill9(kafka_broker, make_topic, unique_name, spawn, tmp_path):
    src, out = make_topic("in", 1), make_topic("out", 1)
    app = unique_name("app")
    a = spawn(app, src, out, name="a", attr=f"{APP}:final_counts", state_dir=tmp_path / "a")
    a.wait_running()
    first = [(f"k{i % 3}", BASE + i * 150) for i in range(200)]  # windows 0..2 of BASE, in order
    first.append(("k0", BASE + 3 * SIZE))  # stream time reaches the end of window 2: 0..2 close
    _produce(kafka_broker, src, first)
    reader = OutputReader(kafka_broker, out, unique_name("reader"))
    closed_first = _truth(first[:-1])
    reader.wait_for(lambda r: r.latest() == closed_first, what="final counts of windows 0..2")
    time.sleep(1.0)
    a.kill9()
    shutil.rmtree(tmp_path / "a")
    b = spawn(app, src, out, name="b", attr=f"{APP}:final_counts", state_dir=tmp_path / "b")
    b.wait_running()
    second = [(f"k{i % 3}", BASE + 3 * SIZE + 1 + i * 90) for i in range(200)]  # windows 3..4
    second.append(("k1", BASE + 6 * SIZE))  # closes windows 3..5
    _produce(kafka_broker, src, second)
    want = _truth(first + second[:-1])
    reader.wait_for(lambda r: r.latest() == want, what="final counts of windows 0..4")
    reader.poll(1.0)
    keys = [k for k, *_ in reader.records]
    assert sorted(keys) == sorted(want)  # exactly one result per window: none repeated after the restart
    assert dict((k, v) for k, v, *_ in reader.records) == want
    reader.close()

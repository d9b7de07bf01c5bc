"""Suppression on the real runtime: the buffer is restored from its changelog after a crash (SIGKILL
under exactly-once), so results buffered before the crash are emitted after it, and results emitted
before it are not emitted again."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from edge.kafka import KafkaClientConfig
from tests.edge.runtime.harness import OutputReader

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(150)]

APP = "tests.edge.runtime.apps.suppress_app:"
EOS = {"processing_guarantee": "exactly_once_v2", "commit_interval_ms": 100}


def produce_at(client: KafkaClientConfig, topic: str, records: list[tuple[str, int]]) -> None:
    """``(key, event time ms)`` records with those record timestamps (the suppression's clock)."""
    p = Producer(client.producer(partitioner="murmur2_random"))
    for key, ts in records:
        p.produce(topic, b"v", key.encode(), timestamp=ts)
    assert p.flush(30) == 0


def outputs(reader: OutputReader) -> list[tuple[str, int]]:
    return [(key, value) for key, value, _, _ in reader.records]


@pytest.mark.parametrize("logged", [True, False], ids=["changelogged", "logging-disabled"])
def test_suppression_buffer_survives_a_crash(kafka_broker, make_topic, unique_name, spawn, tmp_path, logged):
    """Without the changelog (``with_logging_disabled()``) the buffered c and d are lost, as Kafka warns."""
    attr = APP + ("rate_limited_counts" if logged else "unlogged_rate_limited_counts")
    src, out = make_topic("in", 1), make_topic("out", 1)
    app = unique_name("app")
    state = tmp_path / "state"
    t0 = (time.time_ns() // 1_000_000) - 60_000
    first = spawn(app, src, out, name="a", attr=attr, state_dir=state, **EOS)
    first.wait_running()
    # a, b and a again are buffered; c (t0+101) makes stream time pass t0 + 1 + 100: a and b are due
    # (in buffer-time order). c and d stay buffered.
    produce_at(kafka_broker, src, [("a", t0), ("b", t0 + 1), ("a", t0 + 2), ("c", t0 + 101), ("d", t0 + 150)])
    reader = OutputReader(kafka_broker, out, unique_name("reader"))
    reader.wait_for(lambda r: len(r.records) >= 2, what="a and b")
    reader.poll(1.0)  # idle: the transaction holding c's and d's buffer entries is committed
    assert outputs(reader) == [("a", 2), ("b", 1)]
    first.kill9()
    # same state dir -> same transactional.id; under exactly-once the stores are rebuilt from changelogs
    second = spawn(app, src, out, name="b", attr=attr, state_dir=state, **EOS)
    second.wait_running()
    # stream time t0 + 300 releases c and d, restored from the buffer's changelog; e stays buffered
    produce_at(kafka_broker, src, [("e", t0 + 300)])
    if not logged:
        reader.poll(3.0)
        assert outputs(reader) == [("a", 2), ("b", 1)]
        reader.close()
        return
    reader.wait_for(lambda r: len(r.records) >= 4, what="c and d after the restart")
    reader.poll(1.0)
    assert outputs(reader) == [("a", 2), ("b", 1), ("c", 1), ("d", 1)]  # nothing lost, nothing twice
    assert second.metric("streamhouse_edge_restored_records_total") > 0
    reader.close()

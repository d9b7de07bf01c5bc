"""Exactly-once v2 end to end: transactions, crash recovery without duplicates, zombie fencing."""

from __future__ import annotations

import time
import uuid
from collections import Counter

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from edge.state.checkpoint import read_checkpoint
from tests.edge.runtime.harness import OutputReader, expected_counts, keyed, produce, wait_assignment

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(150)]

EOS = {"processing_guarantee": "exactly_once_v2", "commit_interval_ms": 100}


def broker_hides_aborted_records(client: KafkaClientConfig) -> bool:
    """Capability probe: produce a record in a transaction, abort it, and look for it read_committed."""
    topic = f"eos-probe-{uuid.uuid4().hex[:8]}"
    create_topics(client, [TopicSpec(topic, 1)])
    p = Producer(client.producer(**{"transactional.id": f"probe-{uuid.uuid4().hex[:8]}"}))
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"aborted", b"k")
    p.flush(10)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce(topic, b"committed", b"k")
    p.commit_transaction(30)
    c = Consumer(
        client.consumer(
            f"probe-{uuid.uuid4().hex[:8]}",
            **{
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.partition.eof": True,
            },
        )
    )
    c.subscribe([topic])
    seen = []
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF and b"committed" in seen:
                    break
                continue
            seen.append(m.value())
    finally:
        c.close()
    return b"aborted" not in seen


def assert_exactly_once(reader: OutputReader, want: dict[str, int]) -> None:
    """Every key's outputs are exactly 1..count, each once: nothing lost, nothing duplicated."""
    per_key: dict[str, list[int]] = {}
    for key, value, _, _ in reader.records:
        per_key.setdefault(key, []).append(value)
    dupes = {k: [v for v, c in Counter(vs).items() if c > 1] for k, vs in per_key.items()}
    dupes = {k: v for k, v in dupes.items() if v}
    assert not dupes, f"duplicated outputs: {dupes}"
    assert {k: sorted(vs) for k, vs in per_key.items()} == {k: list(range(1, n + 1)) for k, n in want.items()}


def test_eos_happy_path_with_crash_between_transactions(
    kafka_broker, make_topic, unique_name, spawn, tmp_path
):
    src, out = make_topic("in", 4), make_topic("out", 4)
    app = unique_name("app")
    state = tmp_path / "state"
    a = spawn(app, src, out, name="a", state_dir=state, **EOS)
    a.wait_running()
    first = keyed(1500, 15)
    produce(kafka_broker, src, first)
    reader = OutputReader(kafka_broker, out, unique_name("reader"))
    reader.wait_for(lambda r: len(r.records) >= len(first))
    time.sleep(0.5)  # idle: the last transaction is committed, none is open
    a.kill9()
    # the stores write only committed data (deferred to the commit), so the tasks kept checkpoints while
    # running: the restart resumes from them instead of restoring every changelog from offset 0
    checkpoints = {d.name: read_checkpoint(d / ".checkpoint") for d in (state / app).glob("0_*")}
    assert checkpoints and all(cp and min(cp.values()) >= 0 for cp in checkpoints.values()), checkpoints
    # same state dir -> same instance id -> same transactional.id (fences/aborts the old incarnation)
    b = spawn(app, src, out, name="b", state_dir=state, **EOS)
    b.wait_running()
    second = keyed(1500, 15, start=1500)
    produce(kafka_broker, src, second)
    want = expected_counts(first, second)
    reader.wait_for(lambda r: len(r.records) >= len(first) + len(second), what="all outputs")
    reader.poll(0.5)
    assert len(reader.records) == len(first) + len(second)  # N in, N out
    assert_exactly_once(reader, want)
    reader.close()


def test_zombie_is_fenced_and_shuts_down(kafka_broker, make_topic, unique_name, spawn):
    src, out = make_topic("in", 4), make_topic("out", 4)
    app = unique_name("app")
    a = spawn(app, src, out, name="a", instance_id="same", **EOS)
    a.wait_running()
    first = keyed(800, 8)
    produce(kafka_broker, src, first)
    reader = OutputReader(kafka_broker, out, unique_name("reader"))
    reader.wait_for(lambda r: len(r.records) >= len(first))
    # a second incarnation with the same transactional.id (e.g. a restarted pod while the old one hangs)
    b = spawn(app, src, out, name="b", instance_id="same", **EOS)
    assert a.proc.wait(60) == 3, a.log_tail()
    assert "fenced" in a.log_tail(200)
    wait_assignment([b], 4)
    second = keyed(800, 8, start=800)
    produce(kafka_broker, src, second)
    want = expected_counts(first, second)
    reader.wait_for(lambda r: len(r.records) >= len(first) + len(second), what="all outputs")
    reader.poll(0.5)
    assert_exactly_once(reader, want)
    reader.close()


def test_eos_crash_mid_transaction_no_duplicates(kafka_broker, make_topic, unique_name, spawn):
    if not broker_hides_aborted_records(kafka_broker):
        pytest.skip(
            "this broker shows aborted transactional records to read_committed consumers (the embedded "
            "Tansu broker does); a crash mid-transaction cannot be verified here -- run with "
            "STREAMHOUSE_BROKER_KIND=kafka (make test-kafka) or STREAMHOUSE_TEST_BOOTSTRAP_SERVERS"
        )
    src, out = make_topic("in", 4), make_topic("out", 4)
    app = unique_name("app")
    fast_failover = {"consumer.session.timeout.ms": 6000, "consumer.heartbeat.interval.ms": 1000}
    a = spawn(app, src, out, name="a", **EOS, **fast_failover)
    b = spawn(app, src, out, name="b", **EOS, **fast_failover)
    wait_assignment([a, b], 4)
    reader = OutputReader(kafka_broker, out, unique_name("reader"))
    batches = []
    for i in range(10):
        batch = keyed(300, 12, start=i * 300)
        batches.append(batch)
        produce(kafka_broker, src, batch)
        if i == 4:
            a.kill9()  # transactions are in flight: the survivor must not duplicate them
    want = expected_counts(*batches)
    total = sum(len(b) for b in batches)
    reader.wait_for(lambda r: len(r.records) >= total, timeout=90, what="all outputs")
    reader.poll(1.0)
    assert_exactly_once(reader, want)
    reader.close()

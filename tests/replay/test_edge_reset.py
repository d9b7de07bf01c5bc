"""Edge reset (Kafka's streams application reset tool) on the real broker: plan, refusal, rerun.

A reset must make a rerun of the app reproduce its first run exactly, so the app here emits every
update (no record cache) from a single input partition: its outputs are then a pure function of the
input, and the second run's must equal the first's record for record, partition by partition.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from edge.kafka import KafkaClientConfig
from edge.runtime import State, StreamsApp
from edge.tools import ActiveMembersError, ResetError, ResetTarget, apply_reset, plan_reset
from edge.tools.reset import committed_offsets, parse_offsets, scan_partitions
from orchestration.cli.main import cli
from tests.edge.runtime.harness import OutputReader
from tests.replay.apps import WORD
from tests.replay.apps import wordcount as _wordcount

pytestmark = [pytest.mark.broker, pytest.mark.timeout(120)]

LINES = [
    "Kafka streams and Kafka tables",
    "streams of events",
    "tables of state",
    "replay the streams",
    "reset then replay",
]


def _config(client: KafkaClientConfig, app_id: str, state_dir: Path) -> dict[str, Any]:
    return {
        "application.id": app_id,
        "bootstrap.servers": client.bootstrap_servers,
        "broker.profile": client.profile.value,
        "state.dir": str(state_dir),
        "commit.interval.ms": 100,
        "cache.max.bytes.buffering": 0,
        "http.enabled": False,
    }


def _produce(client: KafkaClientConfig, topic: str, items: list[tuple[int, str, int]]) -> None:
    """(partition, value, timestamp ms) records, in order."""
    producer = Producer(client.producer(**{"linger.ms": 0}))
    for partition, value, ts in items:
        producer.produce(topic, value.encode(), b"k", partition=partition, timestamp=ts)
        producer.flush(10)
    assert producer.flush(10) == 0


def _run_until(app: StreamsApp, reader: OutputReader, total: int) -> None:
    app.start()
    try:
        reader.wait_for(lambda r: len(r.records) >= total, timeout=60, what=f"{total} outputs")
        reader.poll(1.0)  # nothing more may arrive
    finally:
        app.close(30)
    assert app.state is State.NOT_RUNNING


def _topics(client: KafkaClientConfig) -> set[str]:
    return set(AdminClient(client.admin()).list_topics(timeout=10).topics)


def _per_partition(records: list[tuple[Any, ...]]) -> dict[int, list[tuple[Any, Any]]]:
    out: dict[int, list[tuple[Any, Any]]] = {}
    for key, value, _, partition in records:
        out.setdefault(partition, []).append((key, value))
    return out


@pytest.mark.slow
def test_reset_and_rerun_reproduces_outputs(kafka_broker, make_topic, unique_name, tmp_path, monkeypatch):
    src, out = make_topic("lines", 1), make_topic("counts", 2)
    app_id = unique_name("wc")
    _produce(kafka_broker, src, [(0, line, 1_000 * (i + 1)) for i, line in enumerate(LINES)])
    words = sum(len(WORD.findall(line)) for line in LINES)
    reader = OutputReader(kafka_broker, out, unique_name("reader"), committed=False)
    config = _config(kafka_broker, app_id, tmp_path / "state")
    _run_until(StreamsApp(_wordcount(src, out), config), reader, words)
    first = _per_partition(reader.records)
    assert sum(len(v) for v in first.values()) == words

    internal = {f"{app_id}-counts-store-changelog", f"{app_id}-instances"}
    repartition = {t for t in _topics(kafka_broker) if t.startswith(app_id) and t.endswith("-repartition")}
    assert repartition and internal <= _topics(kafka_broker)
    state_dir = tmp_path / "state" / app_id
    assert state_dir.exists()

    target = ResetTarget.earliest()
    plan = plan_reset(
        kafka_broker, app_id, target, topology=_wordcount(src, out), state_dir=tmp_path / "state"
    )
    # The plan: the input partition rewinds from its end to 0; every internal topic, no user topic.
    assert [(p.topic, p.partition, p.current, p.new) for p in plan.partitions] == [(src, 0, 5, 0)]
    assert set(plan.internal_topics) == internal | repartition
    assert src not in plan.internal_topics and out not in plan.internal_topics
    assert plan.state_dir == state_dir and plan.state_dir_exists
    summary = plan.summary()
    assert f"{src}[0]: 5 -> 0" in summary and f"delete internal topic {app_id}-instances" in summary
    # The CLI's dry run prints the same plan.
    monkeypatch.setenv("REPLAY_IN", src)
    monkeypatch.setenv("REPLAY_OUT", out)
    monkeypatch.setenv("STREAMHOUSE_BROKER_PROFILE", kafka_broker.profile.value)
    args = ["replay", "edge", "tests.replay.apps:wordcount", "--application-id", app_id, "--to-earliest"]
    args += ["--bootstrap-servers", kafka_broker.bootstrap_servers, "--state-dir", str(tmp_path / "state")]
    printed = CliRunner().invoke(cli, [*args, "--dry-run"], catch_exceptions=False)
    assert printed.exit_code == 0, printed.output
    assert (
        "dry run, nothing changed" in printed.stdout and f"{app_id}-counts-store-changelog" in printed.stdout
    )
    assert f"{src}[0]" in printed.stdout and str(state_dir) in printed.stdout
    usage = CliRunner().invoke(cli, [*args, "--to-datetime", "2026-01-01"])
    assert usage.exit_code == 2 and "exactly one of" in usage.output
    # Planning (the dry runs) changed nothing.
    admin = AdminClient(kafka_broker.admin())
    assert committed_offsets(admin, app_id)[(src, 0)] == 5
    assert internal | repartition <= _topics(kafka_broker) and state_dir.exists()

    result = apply_reset(kafka_broker, plan)
    assert set(result.deleted_topics) == internal | repartition and result.state_dir_deleted
    assert not (internal | repartition) & _topics(kafka_broker)
    assert {src, out} <= _topics(kafka_broker)
    assert committed_offsets(admin, app_id) == {(src, 0): 0}
    assert not state_dir.exists()

    before = len(reader.records)
    _run_until(StreamsApp(_wordcount(src, out), config), reader, before + words)
    second = _per_partition(reader.records[before:])
    assert second == first
    assert internal <= _topics(kafka_broker)
    reader.close()


@pytest.mark.slow
def test_timestamp_scan_finds_the_first_record_at_or_after_the_time(kafka_broker, make_topic):
    topic = make_topic("times", 3)
    # Partition 0 is out of order in time: the answer is the first record in *offset* order.
    _produce(
        kafka_broker,
        topic,
        [(0, "a", 1_000), (0, "b", 3_000), (0, "c", 2_000), (1, "d", 1_500), (1, "e", 2_500)],
    )

    def offsets(ts: int) -> dict[int, tuple[int, int | None]]:
        preds = {(topic, p): (lambda _o, t, ts=ts: t >= ts) for p in range(3)}
        found = scan_partitions(kafka_broker, preds, timeout_s=30)
        return {tp[1]: (scan.position, scan.match) for tp, scan in found.items()}

    assert offsets(0) == {0: (0, 0), 1: (0, 0), 2: (0, None)}
    assert offsets(1_000) == {0: (0, 0), 1: (0, 0), 2: (0, None)}  # exactly at the first record
    assert offsets(1_001) == {0: (1, 1), 1: (0, 0), 2: (0, None)}
    assert offsets(2_000) == {0: (1, 1), 1: (1, 1), 2: (0, None)}
    assert offsets(2_500) == {0: (1, 1), 1: (1, 1), 2: (0, None)}  # exactly at partition 1's last
    assert offsets(2_501) == {0: (1, 1), 1: (2, None), 2: (0, None)}
    assert offsets(3_000) == {0: (1, 1), 1: (2, None), 2: (0, None)}
    assert offsets(3_001) == {0: (3, None), 1: (2, None), 2: (0, None)}  # past every record: the end


def _wait_joined(consumer: Consumer, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not consumer.assignment():
        assert time.monotonic() < deadline, "consumer never got an assignment"
        consumer.poll(0.2)


def test_reset_refuses_while_the_group_has_active_members(kafka_broker, make_topic, unique_name, tmp_path):
    topic = make_topic("in", 2)
    app_id = unique_name("busy")
    _produce(kafka_broker, topic, [(0, "x", 1_000), (1, "y", 2_000), (1, "z", 3_000)])
    # A member that commits nothing: if it auto-committed what it polled while joining, partition 0
    # would have a committed offset below and "kept" it (a race that failed CI once).
    member = Consumer(
        kafka_broker.consumer(app_id, **{"auto.offset.reset": "earliest", "enable.auto.commit": False})
    )
    member.subscribe([topic])
    try:
        _wait_joined(member)
        with pytest.raises(ActiveMembersError, match="active members"):
            plan_reset(kafka_broker, app_id, ResetTarget.earliest(), input_topics=[topic])
    finally:
        member.close()
    # Once the member left: timestamps and explicit offsets are planned, unlisted partitions kept.
    plan = plan_reset(kafka_broker, app_id, ResetTarget.at_timestamp(2_500), input_topics=[topic])
    assert {(p.partition, p.new) for p in plan.partitions} == {(0, 1), (1, 1)}
    explicit = ResetTarget.at_offsets(parse_offsets(["1:1"], [topic]))
    plan = plan_reset(kafka_broker, app_id, explicit, input_topics=[topic])
    assert {(p.partition, p.new, p.reason) for p in plan.partitions} == {
        (0, 0, "earliest"),
        (1, 1, "offset 1"),
    }
    apply_reset(kafka_broker, plan)
    admin = AdminClient(kafka_broker.admin())
    assert committed_offsets(admin, app_id) == {(topic, 0): 0, (topic, 1): 1}
    # Now partition 0 has a committed offset, so a partial list keeps it; offsets past the end clamp.
    plan = plan_reset(kafka_broker, app_id, ResetTarget.at_offsets({(topic, 1): 9}), input_topics=[topic])
    assert {(p.partition, p.current, p.new, p.reason) for p in plan.partitions} == {
        (0, 0, 0, "kept"),
        (1, 1, 2, "offset 9 is past the end: clamped"),
    }
    apply_reset(kafka_broker, plan)
    assert committed_offsets(admin, app_id) == {(topic, 0): 0, (topic, 1): 2}
    # An intermediate topic (written and read back by the app) is moved to its end, as Kafka's tool does.
    through = make_topic("through", 1)
    _produce(kafka_broker, through, [(0, "p", 1_000), (0, "q", 2_000)])
    plan = plan_reset(
        kafka_broker, app_id, ResetTarget.earliest(), input_topics=[topic], intermediate_topics=[through]
    )
    assert [(p.topic, p.new, p.role) for p in plan.partitions if p.topic == through] == [
        (through, 2, "intermediate")
    ]
    assert through not in plan.internal_topics
    with pytest.raises(ResetError, match="not partitions of the input topics"):
        plan_reset(kafka_broker, app_id, ResetTarget.at_offsets({(topic, 5): 0}), input_topics=[topic])
    with pytest.raises(ResetError, match="TOPIC:PARTITION:OFFSET"):
        parse_offsets(["1:2"], [topic, "other"])

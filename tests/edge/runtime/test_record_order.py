"""The time model in the Kafka runtime (embedded broker): timestamp order across a task's partitions,
wall-clock punctuation with no input, the idle stream-time advance, timestamp extractors."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from edge.dsl import Consumed, StreamsBuilder
from edge.processor.api import Processor, PunctuationType
from edge.processor.record import Record
from edge.processor.timestamps import PayloadFieldTimestampExtractor
from edge.runtime import StreamsApp
from edge.serde import Serdes
from edge.topology import Topology

pytestmark = [pytest.mark.broker, pytest.mark.timeout(90)]

S = Serdes.string()


def _config(client, app_id: str, state_dir: Path, **extra) -> dict:
    return {
        "application.id": app_id,
        "bootstrap.servers": client.bootstrap_servers,
        "broker.profile": client.profile.value,
        "state.dir": str(state_dir),
        "commit.interval.ms": 100,
        "http.enabled": False,
        **extra,
    }


def _produce(client, topic: str, records: list[tuple[str, bytes, int]]) -> None:
    p = Producer(client.producer(partitioner="murmur2_random", **{"linger.ms": 0}))
    for key, value, ts in records:
        p.produce(topic, value, key.encode(), timestamp=ts)
    assert p.flush(30) == 0


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class _Recorder(Processor):
    """Records (value, timestamp, stream time) of every record, stream-time listener call and
    punctuation; shared through ``log`` (processors run on the app's stream thread)."""

    def __init__(self, log: list, wall_ms: int = 0, stream_ms: int = 0) -> None:
        self.log = log
        self.wall_ms = wall_ms
        self.stream_ms = stream_ms
        self.lock = threading.Lock()

    def init(self, context) -> None:  # type: ignore[no-untyped-def]
        super().init(context)
        context.register_stream_time_listener(lambda ts: self.log.append(("listener", ts)))
        if self.wall_ms:
            context.schedule(
                self.wall_ms, PunctuationType.WALL_CLOCK_TIME, lambda ts: self.log.append(("wall", ts))
            )
        if self.stream_ms:
            context.schedule(
                self.stream_ms, PunctuationType.STREAM_TIME, lambda ts: self.log.append(("stream", ts))
            )

    def process(self, record: Record) -> None:
        self.log.append(("record", record.value, record.timestamp))


def _recording_app(kafka_broker, unique_name, tmp_path, topics, log, *, wall_ms=0, stream_ms=0, **config):
    t = Topology()
    for i, topic in enumerate(topics):
        t.add_source(f"src-{i}", topic, key_serde=S, value_serde=S)
    t.add_processor(
        "rec", lambda: _Recorder(log, wall_ms, stream_ms), *[f"src-{i}" for i in range(len(topics))]
    )
    return StreamsApp(t, _config(kafka_broker, unique_name("app"), tmp_path, **config))


def test_two_topics_of_one_task_are_processed_in_timestamp_order(
    kafka_broker, make_topic, unique_name, tmp_path
):
    """All of one topic is produced before the other: arrival order is "every left, then every right",
    yet the task interleaves them by timestamp (Kafka's PartitionGroup)."""
    left, right = make_topic("left", 1), make_topic("right", 1)
    _produce(kafka_broker, left, [("k", f"L{ts}".encode(), ts) for ts in (1002, 1004, 1006, 1008)])
    _produce(kafka_broker, right, [("k", f"R{ts}".encode(), ts) for ts in (1001, 1003, 1005, 1007)])
    log: list = []
    app = _recording_app(kafka_broker, unique_name, tmp_path, [left, right], log)
    app.start()
    try:
        _wait(lambda: len([e for e in log if e[0] == "record"]) >= 8, 30, "8 records")
        records = [e for e in log if e[0] == "record"]
        assert [ts for _, _, ts in records] == [1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008]
        assert [v for _, v, _ in records] == [
            "R1001",
            "L1002",
            "R1003",
            "L1004",
            "R1005",
            "L1006",
            "R1007",
            "L1008",
        ]
        # later records still flow (the caught-up partition does not block with max.task.idle.ms=0)
        _produce(kafka_broker, left, [("k", b"L2000", 2000)])
        _wait(lambda: ("record", "L2000", 2000) in log, 30, "a record on one topic only")
        assert app.registry.grouped, "the task reads two partitions: it has a partition group"
    finally:
        app.close(20)


@pytest.mark.parametrize("fetch_bytes", [2_000, None])
def test_a_partition_buffering_past_the_limit_is_paused_and_resumed_without_losing_order(
    kafka_broker, make_topic, unique_name, tmp_path, fetch_bytes
):
    """A partition whose task cannot take its records yet (they are later than the other partition's) is
    paused once it holds more than ``buffered.records.per.partition`` records and more than
    ``max.partition.fetch.bytes`` (what Kafka's consumer would still hold for it), resumed as the task
    catches up, and every record is still processed once, in timestamp order. Under the byte limit
    (1 MiB by default) nothing is paused: librdkafka would only fetch those records again."""
    left, right = make_topic("left", 1), make_topic("right", 1)
    n = 3000
    pad = "x" * 100
    _produce(kafka_broker, left, [("k", f"L{ts}{pad}".encode(), ts) for ts in range(2, 2 * n + 1, 2)])
    _produce(kafka_broker, right, [("k", f"R{ts}{pad}".encode(), ts) for ts in range(1, 2 * n, 2)])
    log: list = []
    config = {"buffered.records.per.partition": 50}
    if fetch_bytes is not None:
        config["main.consumer.max.partition.fetch.bytes"] = fetch_bytes
    app = _recording_app(kafka_broker, unique_name, tmp_path, [left, right], log, **config)
    app.start()
    try:
        _wait(lambda: len(log) >= 2 * n, 60, f"{2 * n} records")
        assert [ts for _, _, ts in log] == list(range(1, 2 * n + 1))
        router = app._stream.router
        if fetch_bytes is None:
            assert router.pauses == 0, "about 315 KB per partition at most: under the 1 MiB limit"
        else:
            assert router.pauses > 0, "more than 50 records and 2,000 bytes buffered: paused"
            _wait(lambda: not router.paused, 10, "every partition resumed")
    finally:
        app.close(20)


def test_wall_clock_punctuator_fires_with_no_input(kafka_broker, make_topic, unique_name, tmp_path):
    src = make_topic("in", 1)
    log: list = []
    app = _recording_app(kafka_broker, unique_name, tmp_path, [src], log, wall_ms=100)
    app.start()
    try:
        assert app.wait_until_running(30)
        _wait(lambda: len([e for e in log if e[0] == "wall"]) >= 3, 30, "3 wall-clock punctuations")
        ticks = [ts for kind, ts, *_ in log if kind == "wall"]
        assert ticks == sorted(ticks) and ticks[-1] - ticks[0] >= 150  # every ~100 ms
        assert not [e for e in log if e[0] == "record"]
    finally:
        app.close(20)


def test_idle_stream_time_advance_fires_listeners_and_stream_time_punctuators(
    kafka_broker, make_topic, unique_name, tmp_path
):
    src = make_topic("in", 1)
    log: list = []
    app = _recording_app(
        kafka_broker,
        unique_name,
        tmp_path,
        [src],
        log,
        stream_ms=1000,
        **{"idle.stream.time.advance.ms": 300},
    )
    app.start()
    try:
        assert app.wait_until_running(30)
        _produce(kafka_broker, src, [("k", b"v", 10_000)])
        _wait(lambda: any(e[0] == "listener" and e[1] >= 11_000 for e in log), 30, "idle advance past 11000")
        listened = [e[1] for e in log if e[0] == "listener"]
        assert listened[0] >= 10_300 and listened == sorted(listened)
        stream = [e[1] for e in log if e[0] == "stream"]
        assert stream[0] == 10_000  # from the record
        assert any(ts >= 11_000 for ts in stream[1:])  # from the idle advance (punctuators get stream time)
    finally:
        app.close(20)


def test_stream_time_stays_put_without_records_by_default(kafka_broker, make_topic, unique_name, tmp_path):
    src = make_topic("in", 1)
    log: list = []
    app = _recording_app(kafka_broker, unique_name, tmp_path, [src], log, wall_ms=50)
    app.start()
    try:
        assert app.wait_until_running(30)
        _produce(kafka_broker, src, [("k", b"v", 10_000)])
        _wait(lambda: ("record", "v", 10_000) in log, 30, "the record")
        n = len([e for e in log if e[0] == "wall"])
        _wait(lambda: len([e for e in log if e[0] == "wall"]) >= n + 10, 30, "500 ms of wall-clock ticks")
        assert not [e for e in log if e[0] == "listener"]
        task = next(iter(app.registry.tasks.values())).task
        assert task.stream_time == 10_000
    finally:
        app.close(20)


def test_payload_timestamp_extractor_in_the_runtime(kafka_broker, make_topic, unique_name, tmp_path):
    src = make_topic("in", 1)
    seen: list = []
    b = StreamsBuilder()
    b.stream(src, Consumed.with_(S, Serdes.json(), PayloadFieldTimestampExtractor("at"))).peek(
        lambda k, v: seen.append(v)
    ).process(lambda: _Recorder(seen))
    app = StreamsApp(
        b,
        _config(
            kafka_broker,
            unique_name("app"),
            tmp_path,
            **{"default.deserialization.exception.handler": "continue"},
        ),
    )
    app.start()
    try:
        _produce(
            kafka_broker,
            src,
            [("k", b'{"at": 5}', 1), ("k", b'{"x": 1}', 2), ("k", b'{"at": "1970-01-01T00:00:01Z"}', 3)],
        )
        _wait(
            lambda: len([e for e in seen if isinstance(e, tuple) and e[0] == "record"]) >= 2, 30, "2 records"
        )
        assert [e[2] for e in seen if isinstance(e, tuple) and e[0] == "record"] == [5, 1000]
        assert app.stats.errors.get("deserialization_errors") == 1
    finally:
        app.close(20)

"""``topology.optimization=all`` on a real broker: a ``builder.table()`` store gets no ``-changelog`` topic,
and after its local state is lost it is restored from the table's source topic (Kafka's
reuse.ktable.source.topics)."""

from __future__ import annotations

import json
import shutil
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from edge.dsl import Consumed, StreamsBuilder
from edge.kafka.admin import topic_partitions
from edge.runtime import StreamsApp
from edge.serde import Serdes
from tests.edge.runtime.harness import produce

pytestmark = [pytest.mark.broker, pytest.mark.timeout(120)]


def _program(topic: str) -> StreamsBuilder:
    builder = StreamsBuilder()
    builder.table(topic, Consumed.with_(Serdes.string(), Serdes.json()), "users")
    return builder


def _value(app: StreamsApp, key: str) -> Any:
    with urllib.request.urlopen(f"http://{app.advertised_server}/v1/stores/users/keys/{key}") as resp:
        return json.loads(resp.read())["value"]


def _wait_value(app: StreamsApp, key: str, want: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = _value(app, key)
        except Exception as exc:  # 404 until the record is processed, 503 while restoring
            last = exc
        if last == want:
            return
        time.sleep(0.2)
    raise AssertionError(f"store 'users' key {key!r}: wanted {want!r}, last saw {last!r}")


def test_source_table_is_restored_from_its_source_topic(kafka_broker, make_topic, unique_name, tmp_path):
    src = make_topic("users", 2)
    app_id = unique_name("app")
    state = Path(tmp_path) / "state"
    config = {
        "application.id": app_id,
        "bootstrap.servers": kafka_broker.bootstrap_servers,
        "broker.profile": kafka_broker.profile.value,
        "state.dir": str(state),
        "commit.interval.ms": 100,
        "topology.optimization": "all",
    }
    produce(kafka_broker, src, [(f"u{i}", {"n": i}) for i in range(50)])
    produce(kafka_broker, src, [("u0", {"n": 100})])  # an update: the restore must end on it

    first = StreamsApp(lambda: _program(src), config)
    assert first.topology.source_changelogs() == {"users": src}
    first.start()
    try:
        assert first.wait_until_running(30)
        _wait_value(first, "u0", {"n": 100})
        _wait_value(first, "u49", {"n": 49})
    finally:
        first.close(20)
    admin = AdminClient(kafka_broker.admin())
    assert topic_partitions(admin, f"{app_id}-users-changelog") is None, "no changelog topic with reuse"

    shutil.rmtree(state)  # local state lost: only the source topic can bring it back
    second = StreamsApp(lambda: _program(src), config)
    second.start()
    try:
        assert second.wait_until_running(30)
        assert second.stats.restored_records >= 50
        assert _value(second, "u0") == {"n": 100}
        assert _value(second, "u17") == {"n": 17}
    finally:
        second.close(20)


def test_source_table_restore_ends_at_the_committed_offset(kafka_broker, make_topic, unique_name, tmp_path):
    """Kafka's StoreChangelogReader restores a source-topic store only up to the group's committed offset
    (the task processes the rest, with the old values it needs), and checkpoints it at that offset."""
    src = make_topic("users", 2)
    state = Path(tmp_path) / "state"
    config = {
        "application.id": unique_name("app"),
        "bootstrap.servers": kafka_broker.bootstrap_servers,
        "broker.profile": kafka_broker.profile.value,
        "state.dir": str(state),
        "commit.interval.ms": 100,
        "topology.optimization": "all",
    }
    produce(kafka_broker, src, [(f"u{i}", {"n": i}) for i in range(50)])
    first = StreamsApp(lambda: _program(src), config)
    first.start()
    try:
        assert first.wait_until_running(30)
        _wait_value(first, "u49", {"n": 49})
    finally:
        first.close(20)

    # the checkpoint is at the committed offset: a restart with its local state restores nothing
    again = StreamsApp(lambda: _program(src), config)
    again.start()
    try:
        assert again.wait_until_running(30)
        assert again.stats.restored_records == 0
    finally:
        again.close(20)

    # updates produced while no instance runs are after the committed offset: processed, not restored
    produce(kafka_broker, src, [("u0", {"n": 200}), ("u1", {"n": 201})])
    shutil.rmtree(state)
    second = StreamsApp(lambda: _program(src), config)
    second.start()
    try:
        assert second.wait_until_running(30)
        assert second.stats.restored_records == 50
        _wait_value(second, "u0", {"n": 200})
        _wait_value(second, "u1", {"n": 201})
        assert _value(second, "u17") == {"n": 17}
    finally:
        second.close(20)

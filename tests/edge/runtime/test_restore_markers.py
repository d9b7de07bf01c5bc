"""Restoring an at-least-once changelog over a former standby's state, on the real broker.

A standby applies every changelog record it reads and checkpoints at the last commit marker it saw,
without knowing whether that marker's input offsets were ever committed (the writer may have died
between acknowledging the marker and committing). A restore over such a directory reads the
checkpointed marker itself first: committed, the state is restored on from there; not committed (or
not there), the store must be rebuilt from scratch. Otherwise a promoted standby trusted on an
uncommitted marker, or on a checkpoint without any marker (start offset 0), ends with counts above the
truth on some keys (the kill storms of docs/reliability.md saw +30).
"""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from edge.kafka import KafkaClientConfig
from edge.runtime.markers import MARKER_KEYS, encode_marker
from edge.runtime.restore import ChangelogReader, RestoreProgress, RestoreTarget

pytestmark = [pytest.mark.broker]
IN = ("in", 0)


def _changelog(client: KafkaClientConfig, topic: str) -> None:
    """offset 0: k=1, 1: marker (input 5, committed), 2: k=2, 3: marker (input 9, never committed)."""
    records = [
        (b"k", b"1"),
        (MARKER_KEYS[0], encode_marker({IN: 5})),
        (b"k", b"2"),
        (MARKER_KEYS[1], encode_marker({IN: 9})),
    ]
    producer = Producer(client.producer(**{"enable.idempotence": True}))
    for key, value in records:
        producer.produce(topic, value, key, partition=0)
    assert producer.flush(30) == 0


def _target(
    topic: str, applied: list, start: int, *, standby: bool, verify: int | None = None
) -> RestoreTarget:
    target = RestoreTarget(applied.extend, RestoreProgress("counts", "0_0", topic, 0, start))
    target.committed = {IN: 5}
    target.may_hold_orphans = standby
    target.verify_offset = verify
    return target


def test_restores_over_a_standby_checkpoint_check_its_marker(
    kafka_broker: KafkaClientConfig, make_topic, unique_name
) -> None:
    topic = make_topic("changelog", 1)
    _changelog(kafka_broker, topic)
    reader = ChangelogReader(kafka_broker.consumer(unique_name("restore")), timeout_ms=20_000)
    try:
        # the standby checkpointed at the uncommitted marker (offset 3): it holds k=2 -> rebuild
        applied: list = []
        on_uncommitted = _target(topic, applied, 4, standby=True, verify=3)
        reader.restore([on_uncommitted])
        assert on_uncommitted.ahead_of_changelog
        assert "never committed" in on_uncommitted.rebuild_reason
        assert applied == []

        # checkpointed at the committed marker (offset 1), and k=2 after it is an orphan it may hold
        applied = []
        on_committed = _target(topic, applied, 2, standby=True, verify=1)
        reader.restore([on_committed])
        assert on_committed.marker_index == 0
        assert on_committed.orphans == {b"k"}
        assert on_committed.ahead_of_changelog and "orphan" in on_committed.rebuild_reason
        assert applied == []

        # a standby that saw no marker at all checkpoints nothing: start 0, and it may hold orphans
        applied = []
        no_marker = _target(topic, applied, 0, standby=True)
        reader.restore([no_marker])
        assert applied == [(b"k", b"1")]
        assert no_marker.ahead_of_changelog

        # an active task's own checkpoint is trusted: restored on, the orphan compensated later
        applied = []
        active = _target(topic, applied, 2, standby=False)
        reader.restore([active])
        assert not active.ahead_of_changelog
        assert active.orphans == {b"k"} and applied == []
        assert active.progress.last_offset == -1  # no committed marker after the checkpoint

        # a checkpoint beyond the changelog's end is no marker either
        applied = []
        beyond = _target(topic, applied, 10, standby=True, verify=9)
        reader.silent_ahead_s = 2.0  # the embedded broker answers nothing there
        reader.restore([beyond])
        assert beyond.ahead_of_changelog
    finally:
        reader.close()

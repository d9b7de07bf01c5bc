"""The restore's apply thread and collector pause, on the real broker: the reader hands ``apply`` calls
to one thread (so a store's write overlaps consuming), which must apply exactly what a synchronous
apply would, per partition in changelog order, and everything before ``restore()`` returns or a target
is reported done; a failing apply must fail the restore; the garbage collector is paused only while a
restore runs."""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

import pytest
from confluent_kafka import Producer

from edge.runtime.markers import MARKER_KEYS, encode_marker
from edge.runtime.restore import ChangelogReader, RestoreProgress, RestoreTarget, gc_paused

pytestmark = [pytest.mark.broker, pytest.mark.timeout(120)]
IN = ("in", 0)


def _fill(kafka_broker, topic: str) -> dict[int, list[tuple[bytes, bytes | None]]]:
    """Two partitions of 3000 records (repeated keys, tombstones); partition 0 ends with a committed
    marker (at-least-once), partition 1 is read as exactly-once. Returns what each should apply."""
    p = Producer(kafka_broker.producer(**{"linger.ms": 20}))
    expected: dict[int, list[tuple[bytes, bytes | None]]] = {0: [], 1: []}
    for part in (0, 1):
        for i in range(3000):
            key = b"k%d-%03d" % (part, i % 250)
            value = None if i % 41 == 0 else b"v%d" % i
            p.produce(topic, value, key, partition=part)
            expected[part].append((key, value))
    p.produce(topic, encode_marker({IN: 1}), MARKER_KEYS[0], partition=0)
    assert p.flush(30) == 0
    return expected


def _targets(topic: str, apply: Any) -> dict[int, RestoreTarget]:
    targets = {
        part: RestoreTarget(apply(part), RestoreProgress("s", f"0_{part}", topic, part, 0)) for part in (0, 1)
    }
    targets[0].committed = {IN: 1}
    return targets


def _apply_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "restore-apply"]


def test_applies_what_was_read_in_order_before_a_target_is_done(kafka_broker, make_topic, unique_name):
    topic = make_topic("changelog", 2)
    expected = _fill(kafka_broker, topic)
    applied: dict[int, list[tuple[bytes, bytes | None]]] = {0: [], 1: []}
    seen: dict[str, Any] = {"threads": set(), "done_at_apply": 0, "gc_on": 0}
    targets: dict[int, RestoreTarget] = {}

    def apply(part: int):
        def _apply(batch: list[tuple[bytes, bytes | None]]) -> None:
            seen["threads"].add(threading.get_ident())
            seen["done_at_apply"] += targets[part].progress.done
            seen["gc_on"] += gc.isenabled()
            time.sleep(0.002)  # a slow store: the queue fills and the reader waits for it
            applied[part].extend(batch)

        return _apply

    targets.update(_targets(topic, apply))
    reader = ChangelogReader(kafka_broker.consumer(unique_name("restore")), batch_records=100)
    assert gc.isenabled()
    try:
        reader.restore(list(targets.values()))
    finally:
        reader.close()
    assert gc.isenabled(), "the collector is on again after the restore"
    assert applied == expected, "every record, per partition in changelog order"
    for part, target in targets.items():
        assert target.progress.done and target.progress.restored == 3000
        assert target.progress.last_offset == (3000 if part == 0 else 2999)
    assert threading.get_ident() not in seen["threads"], "applied on the apply thread"
    assert seen["done_at_apply"] == 0, "no batch was applied after its target was reported done"
    assert seen["gc_on"] == 0, "the collector is paused while the restore applies"
    assert not _apply_threads(), "the apply thread ends with the restore"


def test_a_failing_apply_fails_the_restore(kafka_broker, make_topic, unique_name):
    topic = make_topic("changelog", 2)
    _fill(kafka_broker, topic)
    calls: list[int] = []

    def apply(part: int):
        def _apply(batch: list[tuple[bytes, bytes | None]]) -> None:
            calls.append(part)
            if len(calls) == 3:
                raise ValueError("store full")

        return _apply

    targets = _targets(topic, apply)
    reader = ChangelogReader(kafka_broker.consumer(unique_name("restore")), batch_records=100)
    gc.disable()
    try:
        with pytest.raises(ValueError, match="store full"):
            reader.restore(list(targets.values()))
        assert not gc.isenabled(), "a collector the caller had switched off stays off"
    finally:
        gc.enable()
        reader.close()
    assert len(calls) == 3, "nothing is applied after the failure"
    assert not _apply_threads()
    assert not any(t.progress.done for t in targets.values())


def test_gc_pauses_nest_across_threads() -> None:
    """Two restores on two stream threads: the collector comes back only when the last one ends."""
    assert gc.isenabled()
    inner_started, outer_may_end = threading.Event(), threading.Event()
    states: list[bool] = []

    def other() -> None:
        with gc_paused():
            inner_started.set()
            outer_may_end.wait(10)
        states.append(gc.isenabled())

    with gc_paused():
        t = threading.Thread(target=other)
        t.start()
        assert inner_started.wait(10)
    states.append(gc.isenabled())  # this restore ended, the other one runs
    outer_may_end.set()
    t.join(10)
    assert states == [False, True]
    assert gc.isenabled()

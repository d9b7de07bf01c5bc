"""The restore reader's batch path (runs of records applied column-wise) on a real broker: it must apply
exactly what the per-record loop applies, in the same order, with the same markers, orphans, offsets and
source-topic handling (timestamp prefix, end at the committed offset)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Producer

import edge.runtime.restore as restore_mod
from edge.runtime.markers import MARKER_KEYS, encode_marker
from edge.runtime.restore import ChangelogReader, RestoreProgress, RestoreTarget

pytestmark = [pytest.mark.broker, pytest.mark.timeout(120)]


def _fill(kafka_broker, changelog: str, source: str) -> None:
    p = Producer(kafka_broker.producer(**{"linger.ms": 20}))
    # partition 0: a committed marker, an uncommitted one, then orphans; tombstones on the way
    for i in range(600):
        if i == 200:
            p.produce(changelog, encode_marker({("in", 0): 10}), MARKER_KEYS[0], partition=0)
        elif i == 400:
            p.produce(changelog, encode_marker({("in", 0): 20}), MARKER_KEYS[1], partition=0)
        else:
            value = None if i % 37 == 0 else b"v%d" % i
            p.produce(changelog, value, b"k%03d" % (i % 120), partition=0)
    # partition 1: restored without markers' meaning (exactly-once); a marker is skipped
    for i in range(300):
        if i == 150:
            p.produce(changelog, encode_marker({}), MARKER_KEYS[0], partition=1)
        else:
            p.produce(changelog, b"w%d" % i, b"j%03d" % (i % 90), partition=1)
    # a table's source topic: plain values with their timestamps
    for i in range(400):
        p.produce(source, None if i % 50 == 7 else b"s%d" % i, b"u%03d" % (i % 70), partition=0,
                  timestamp=1_700_000_000_000 + i)  # fmt: skip
    assert p.flush(30) == 0


def _restore(kafka_broker, changelog: str, source: str, min_run: int, monkeypatch) -> dict[str, Any]:
    monkeypatch.setattr(restore_mod, "_MIN_RUN", min_run)
    runs: list[int] = []
    apply_run = ChangelogReader._apply_run

    def counting(target: RestoreTarget, run: list[Any]) -> None:
        runs.append(len(run))
        apply_run(target, run)

    monkeypatch.setattr(ChangelogReader, "_apply_run", staticmethod(counting))
    applied: dict[str, list[tuple[bytes, bytes | None]]] = {"c0": [], "c1": [], "src": []}
    targets = {
        "c0": RestoreTarget(applied["c0"].extend, RestoreProgress("s", "0_0", changelog, 0, 0)),
        "c1": RestoreTarget(applied["c1"].extend, RestoreProgress("s", "0_1", changelog, 1, 0)),
        "src": RestoreTarget(applied["src"].extend, RestoreProgress("t", "0_0", source, 0, 0)),
    }
    targets["c0"].committed = {("in", 0): 15}
    targets["src"].source_topic = True
    targets["src"].stop_offset = 333
    # small batches: runs end before the source topic's stop offset, and markers fall inside runs
    reader = ChangelogReader(kafka_broker.consumer("restore-batch-test"), batch_records=100)
    try:
        reader.restore(list(targets.values()))
    finally:
        reader.close()
    return {
        "batch_path_records": sum(runs),
        "applied": applied,
        "state": {
            name: (t.progress.restored, t.progress.last_offset, sorted(t.orphans), t.marker_index, t.held)
            for name, t in targets.items()
        },
    }


def test_batch_path_applies_what_the_per_record_loop_applies(kafka_broker, make_topic, monkeypatch):
    changelog = make_topic("changelog", 2)
    source = make_topic("users", 1)
    _fill(kafka_broker, changelog, source)
    per_record = _restore(kafka_broker, changelog, source, 10**9, monkeypatch)
    batched = _restore(kafka_broker, changelog, source, 1, monkeypatch)
    assert per_record.pop("batch_path_records") == 0
    assert batched.pop("batch_path_records") > 900, "most records went through the batch path"
    assert batched == per_record

    applied, state = batched["applied"], batched["state"]
    # partition 0: the 200 records before the committed marker; the rest are orphans
    assert len(applied["c0"]) == 200 and state["c0"][1] == 200 and state["c0"][3] == 0
    assert (b"k000", None) in applied["c0"] and len(state["c0"][2]) == 120
    # partition 1: every record but the marker
    assert len(applied["c1"]) == 299 and state["c1"][1] == 299
    assert all(k != MARKER_KEYS[0] for k, _ in applied["c1"])
    # the source topic: up to its stop offset, values prefixed with the record timestamp
    assert len(applied["src"]) == 333 and state["src"][1] == 332
    key, value = applied["src"][1]
    assert key == b"u001" and value == (1_700_000_000_001).to_bytes(8, "big") + b"s1"
    assert applied["src"][7] == (b"u007", None)

"""The windowed-count and stream-stream join benchmark hooks at tiny sizes, on the shared broker: the
event-time inputs, their expected results under both lateness rules, and checks that catch wrong output.

Quix Streams runs only if its benchmark venv already exists (it is never installed by the tests).
"""

from __future__ import annotations

from types import SimpleNamespace

import orjson
import pytest
from confluent_kafka import Producer

from benchmarks.common import REQUIRED_FIELDS, ensure_topics
from benchmarks.event_time import (
    WINDOW_MS,
    generate_join,
    generate_windowed,
    prepare_windowed_input,
    verify_windowed,
)
from benchmarks.quix_venv import QUIX_PYTHON, STAMP
from benchmarks.systems import edge_join, edge_windowed, streamhouse_windowed

QUIX_READY = STAMP.exists() and QUIX_PYTHON.exists()


def test_windowed_truth_follows_both_lateness_rules() -> None:
    records, truth = generate_windowed(20_000, keys=50)
    assert [ts for _, _, ts in records] != sorted(ts for _, _, ts in records)  # a little disorder
    assert truth.all.sum() == 20_000 and truth.all.shape[1] == 20  # 1,000 events per minute
    # per partition, a record whose window ended before the largest timestamp so far is late
    stream_time, late = -1, 0
    for _, _, ts in records:
        stream_time = max(stream_time, ts)
        late += (ts // WINDOW_MS + 1) * WINDOW_MS <= stream_time
    assert late == len(truth.late["partition"]) > 0
    assert len(truth.late["key"]) <= late  # a key's own time never runs ahead of the partition's
    assert truth.expected("partition").sum() == truth.outputs("partition", 20_000) == 20_000 - late


def test_join_truth_counts_pairs_within_five_minutes() -> None:
    orders, payments, joins = generate_join(4_000)
    assert len(orders) == 2_000 and [p[2] for p in payments] == sorted(p[2] for p in payments)
    by_key: dict[bytes, list[int]] = {}
    for key, _, ts in payments:
        by_key.setdefault(key, []).append(ts)
    expected = [sum(abs(p - ts) <= 300_000 for p in by_key.get(key, [])) for key, _, ts in orders]
    assert expected == joins.tolist()
    assert 0 < joins.sum() < len(payments)  # some payments miss the window, some orders have none


@pytest.mark.broker
def test_windowed_verification_catches_a_wrong_count(kafka_broker, unique_name) -> None:
    _, truth = prepare_windowed_input(kafka_broker, unique_name("w-in"), 3_000, keys=20)
    out = unique_name("w-out")
    ensure_topics(kafka_broker, [out])
    expected = truth.expected("partition")
    producer = Producer(kafka_broker.producer())
    for k, col in zip(*expected.nonzero(), strict=True):
        start = (truth.first_window + int(col)) * WINDOW_MS
        value = {"start": start, "count": int(expected[k, col])}
        producer.produce(out, orjson.dumps(value), b"user-%05d" % k)
    producer.flush(30)
    args = (kafka_broker, out, truth, "partition", 3_000)
    ok = verify_windowed(*args, start_field="start", count_field="count")
    assert ok["key_windows_wrong"] == 0 and ok["sum_of_final_counts"] == ok["expected_sum"]
    assert not ok["correct"]  # only final counts were written: fewer records than one per update
    producer.produce(out, orjson.dumps({"start": start, "count": value["count"] + 1}), b"user-%05d" % k)
    producer.flush(30)
    wrong = verify_windowed(*args, start_field="start", count_field="count")
    assert wrong["key_windows_wrong"] == 1 and not wrong["correct"]


@pytest.mark.broker
@pytest.mark.slow
def test_windowed_and_join_hooks_measure_verified_figures(kafka_broker, unique_name, tmp_path) -> None:
    ctx = SimpleNamespace(client=kafka_broker, workdir=tmp_path, run_id=unique_name("run"), events=4_000,
                          keys=100, skip_quix=not QUIX_READY, windowed_retention_variant=False)  # fmt: skip
    windowed = edge_windowed.bench(ctx)
    joined = edge_join.bench(ctx)
    for r in windowed + joined:
        assert all(f in r for f in REQUIRED_FIELDS), r
    sh_w, raw_w, quix = windowed
    assert quix["system"] == "quix-streams"
    if streamhouse_windowed.availability_windowed() is None:
        assert sh_w["status"] == "ok" and sh_w["verification"]["correct"], sh_w
        assert sh_w["verification"]["output_records"] == sh_w["input"]["expected_outputs_partition_rule"]
        # the raw loop on the same input, checked against the same truth
        assert raw_w["system"] == "raw-confluent-kafka" and raw_w["verification"]["correct"], raw_w
        assert sh_w["vs_raw"] > 0
    else:
        assert sh_w["status"] == "not_available" and sh_w["reason"]
    if QUIX_READY:
        assert quix["status"] == "ok" and quix["verification"]["correct"], quix
    sh_j, raw = joined
    assert raw["status"] == "ok" and raw["verification"]["correct"], raw
    assert raw["verification"]["output_records"] == raw["input"]["expected_joins"] > 0
    if streamhouse_windowed.availability_join() is None:
        assert sh_j["status"] == "ok" and sh_j["verification"]["correct"], sh_j
        assert sh_j["vs_raw"] > 0

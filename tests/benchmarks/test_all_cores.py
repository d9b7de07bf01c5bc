"""``benchmarks/all_cores.py``: Kafka Streams with ``num.stream.threads=P`` against ``edge run --workers
P`` on P-partition inputs. The truths of the partitioned inputs, the summary, the edge's app, and (slow)
both systems on the shared broker at a tiny size, every output checked. No figure is asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from benchmarks import all_cores
from benchmarks.edge_workers import CpuSnapshot, ProcessCpu, Sampler
from benchmarks.event_time import WINDOW_MS, generate_join, generate_windowed, key_partition
from benchmarks.systems import kafka_streams


def test_the_windowed_truth_keeps_stream_time_per_partition() -> None:
    records, truth = generate_windowed(20_000, keys=50, partitions=2)
    stream_time, late = [-1, -1], 0
    for key, _, ts in records:
        p = key_partition(key, 2)
        stream_time[p] = max(stream_time[p], ts)
        late += (ts // WINDOW_MS + 1) * WINDOW_MS <= stream_time[p]
    assert late == len(truth.late["partition"]) > 0
    _, one_partition = generate_windowed(20_000, keys=50)
    # a partition's time never runs ahead of the whole input's: a record late in its partition is late
    # in one partition too, not the other way round
    assert set(truth.late["partition"]) <= set(one_partition.late["partition"])
    assert truth.all.tolist() == one_partition.all.tolist()  # the same events, only partitioned


def test_an_order_and_its_payments_share_a_partition() -> None:
    orders, payments, _ = generate_join(2_000)
    order_partition = {key: key_partition(key, 3) for key, _, _ in orders}
    assert {key_partition(key, 3) for key, _, _ in payments} == {0, 1, 2}
    assert all(key_partition(key, 3) == order_partition[key] for key, _, _ in payments)
    assert key_partition(b"user-00042", 2) == 0 and key_partition(b"user-00043", 2) == 1


def test_the_summary_gives_medians_of_correct_runs_and_both_ratios() -> None:
    def run(system: str, rate: int, cpu: float, status: str = "ok") -> dict:
        return {"system": system, "status": status, "events_per_s": rate, "cpu_s_per_1m_events": cpu,
                "cpu": {"machine_idle_cores": 0.1},
                "second_half": {"events_per_s": 2 * rate, "cpu_s_per_1m_events": cpu / 2}}  # fmt: skip

    s = all_cores.summary([
        run(all_cores.PEER, 100, 12.0), run(all_cores.EDGE, 150, 8.0),
        run(all_cores.PEER, 120, 10.0), run(all_cores.EDGE, 170, 6.0),
        run(all_cores.EDGE, 999_999, 0.1, status="failed"),
    ])  # fmt: skip
    assert s[all_cores.EDGE]["runs"] == 2 and s[all_cores.EDGE]["events_per_s_median"] == 160
    assert s["edge_vs_peer"] == round(160 / 110, 3)
    assert s["edge_vs_peer_per_cpu_s"] == round(11.0 / 7.0, 3)
    assert s[all_cores.PEER]["second_half_events_per_s_median"] == 220
    assert s["edge_vs_peer_second_half"] == round(320 / 220, 3)
    assert s["edge_vs_peer_per_cpu_s_second_half"] == round(5.5 / 3.5, 3)
    assert "edge_vs_peer" not in all_cores.summary([run(all_cores.EDGE, 1, 1.0)])
    assert all_cores.variant_name(["linger.ms=100", "batch.size=1M"]) == "lingerms100-batchsize1m"


def test_the_second_half_is_the_steady_rate_and_cpu_of_the_later_outputs() -> None:
    """A JVM-like run: slow while it warms up, then fast; the second half sees only the fast part."""
    sampler = Sampler({}, lambda: 0)
    # (seconds, outputs so far, CPU-seconds of the system's two processes)
    samples = [(0, 0, 0.0), (1, 100, 1.5), (2, 250, 3.0), (3, 550, 4.5), (4, 850, 6.0), (5, 1_000, 6.75)]
    for at, outputs, cpu in samples:
        procs = {"worker-0": ProcessCpu(10, cpu / 2, {}), "worker-1": ProcessCpu(11, cpu / 2, {})}
        sampler.snapshots.append(CpuSnapshot(float(at), {}, procs))
        sampler.outputs.append(outputs)
    half = all_cores.second_half(sampler, ["worker-0", "worker-1"], 1_000, inputs_per_output=2.0)
    assert half is not None
    # from the 3 s sample (550 outputs, the first past 500) to the last: 450 outputs = 900 inputs in 2 s
    assert half["from_s"] == 3.0 and half["events_per_s"] == 450 and half["seconds"] == 2.0
    assert half["cpu_s_per_1m_events"] == round(2.25 / 900 * 1e6, 2)
    assert all_cores.second_half(sampler, ["worker-0"], 10_000, inputs_per_output=1.0) is None


@pytest.mark.parametrize("workload", all_cores.WORKLOADS)
def test_the_edge_app_builds_each_workload_from_the_environment(workload, monkeypatch) -> None:
    monkeypatch.setenv("BENCH_WORKLOAD", workload)
    monkeypatch.setenv("BENCH_IN", "in-a,in-b")
    monkeypatch.setenv("BENCH_OUT", "out")
    text = str(all_cores.topology().describe())
    assert "in-a" in text and "out" in text
    assert ("in-b" in text) == (workload in ("enrichment", "stream-stream-join"))


def test_the_edge_app_refuses_an_unknown_workload(monkeypatch) -> None:
    monkeypatch.setenv("BENCH_WORKLOAD", "wordcount")
    monkeypatch.setenv("BENCH_IN", "in")
    monkeypatch.setenv("BENCH_OUT", "out")
    with pytest.raises(ValueError, match="BENCH_WORKLOAD='wordcount'"):
        all_cores.topology()


def test_bad_arguments_are_refused_with_a_message(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        all_cores.main(["--workload", "enrichment", "-c", "linger.ms"])
    assert exc.value.code == 2 and "-c takes KEY=VALUE, got linger.ms" in capsys.readouterr().err


@pytest.mark.broker
def test_a_system_that_exits_before_its_first_output_is_a_failed_run_with_its_log(
    kafka_broker, unique_name, tmp_path: Path
) -> None:
    output = unique_name("ac-out")
    all_cores.ready_topic(kafka_broker, output, partitions=1)
    prepared = all_cores.Prepared({}, ["in"], 10, 10, lambda _topic: {"correct": True})
    launch = all_cores.Launch(
        all_cores.EDGE, [sys.executable, "-c", "print('bad setting: linger.ms'); raise SystemExit(1)"], {}, {}
    )
    r = all_cores.timed_run(kafka_broker, launch, prepared, "count", output, 1, None, tmp_path, "t", 30.0)
    assert r["status"] == "failed" and r["events_per_s"] is None
    assert "exited before its first output" in r["reason"] and "bad setting: linger.ms" in r["reason"]


@pytest.mark.broker
@pytest.mark.slow
# the two whose truths know each record's partition; the count's and the enrichment's inputs are the
# one-partition benchmarks' own, on more partitions
@pytest.mark.parametrize("workload", ["windowed-count", "stream-stream-join"])
def test_both_systems_use_two_partitions_and_every_output_is_checked(
    workload, kafka_broker, unique_name, tmp_path: Path
) -> None:
    if kafka_streams.availability() is not None:
        pytest.skip(f"Kafka Streams is not available: {kafka_streams.availability()}")
    prepared, runs = all_cores.compare(
        kafka_broker, workload, 3_000, 2, 1, [], tmp_path, 120.0, prefix=unique_name("ac") + "-"
    )
    meta = AdminClient(kafka_broker.admin()).list_topics(timeout=10).topics
    assert all(len(meta[topic].partitions) == 2 for topic in prepared.inputs)
    assert [r["system"] for r in runs] == [all_cores.PEER, all_cores.EDGE]
    for r in runs:
        assert r["status"] == "ok", r.get("reason")
        assert r["verification"]["correct"], r["verification"]
        assert r["workload"] == f"{workload}-2p" and r["events_per_s"] > 0
    edge = runs[1]
    # the edge ran as a supervisor with two worker processes, each read over the window
    assert {"supervisor", "worker-0", "worker-1"} <= set(edge["cpu"]["processes"])
    assert edge["settings"]["workers"] == 2
    assert "num.stream.threads=2" in runs[0]["settings"]["client"]

"""Kafka Streams against the edge with every core in use: P input partitions, ``num.stream.threads=P``
against ``streamhouse edge run --workers P``, taking turns on one broker.

``alternating.py`` compares the two on a one-partition input, where each runs one stream thread: Kafka
Streams' JVM then spreads its work over more than one core (its producer's sender thread, the JIT
compiler, the garbage collector) while the edge's stream thread holds one core (the GIL). A user who
wants throughput gives each system as many partitions and threads (workers, for the edge) as cores;
this is that comparison. Same workloads, same inputs, same checks of every output; with P partitions
an order and its payments share one (the event-time inputs go to partition key number mod P), as do a
user's events and table row (both produced with the client's default partitioner):

* ``count``: the events counted per user (the issue's headline workload), every final count checked;
* ``enrichment``: the events left-joined with the 10k-row user table;
* ``windowed-count``: 1-minute tumbling windows, stream time per partition (the truth knows each
  record's partition);
* ``stream-stream-join``: orders and payments, ±5 minutes, grace 1 minute.

Both systems run as they would be run: Kafka Streams as its benchmark JVM with ``num.stream.threads=P``
(one process, as many stream threads), the edge as ``streamhouse edge run --workers P`` (a supervisor and
P worker processes, each a group member). Each is timed from outside from its first output to the N-th,
read by a watcher (so start-up and the group join do not count, for either), and over that window the
CPU of each of its processes (``/proc``, all threads), of the broker and of the whole machine is read:
so the figures say both how fast each system goes and whether the cores were full.

**Steady state.** A JVM compiles its hot path while it runs: over a 1M-event run (8 s) Kafka Streams'
JIT compiler threads take about half a core and its stream thread speeds up throughout. Each run
therefore also reports its *second half* (rate and CPU from the sample at half the outputs to the end)
and a timeline of every thread kind's cores per second. For steady-state figures give it a long input
on Apache Kafka (``STREAMHOUSE_BROKER_KIND=kafka``, ``--events 3000000``): Tansu's fetches get dearer as
a partition's batches pile up, and at 4M events in one partition it took a whole core.

    .venv/bin/python -m benchmarks.all_cores --workload enrichment --events 1000000 --rounds 3
    .venv/bin/python -m benchmarks.all_cores --workload enrichment -c linger.ms=100
    STREAMHOUSE_BROKER_KIND=kafka .venv/bin/python -m benchmarks.all_cores --workload enrichment \
        --events 3000000 --rounds 1 --timeout-s 600

``-c KEY=VALUE`` adds an edge setting (e.g. ``linger.ms=100``, Kafka Streams' own producer default; the
edge's is 5 ms, for latency). Prints one line per run and writes
``benchmarks/results/all_cores_<workload>[-<variant>].json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from benchmarks.common import RESULTS_DIR, machine_info, result, start_child, wait_for_outputs
from benchmarks.edge_workers import Sampler, children_of, cpu_window, machine_parallelism, ready_topic

WORKLOADS = ("count", "enrichment", "windowed-count", "stream-stream-join")
PEER = "kafka-streams"
EDGE = "streamhouse-edge"

# ------------------------------------------------------------------------------- the edge's app


def topology() -> Any:
    """The edge's app for ``streamhouse edge run`` (``benchmarks.all_cores:topology``): the workload and
    its topics from the environment, each worker building the same topology as the one-partition
    benchmarks' children do."""
    from benchmarks.systems.streamhouse_count import build_enrichment_topology, build_topology
    from benchmarks.systems.streamhouse_windowed import build_join_topology, build_windowed_topology

    workload, inputs, output = os.environ["BENCH_WORKLOAD"], os.environ["BENCH_IN"], os.environ["BENCH_OUT"]
    first, _, second = inputs.partition(",")
    if workload == "count":
        return build_topology(first, output)
    if workload == "enrichment":
        return build_enrichment_topology(first, second, output)
    if workload == "windowed-count":
        return build_windowed_topology(first, output)
    if workload == "stream-stream-join":
        return build_join_topology(first, second, output)
    raise ValueError(f"BENCH_WORKLOAD={workload!r}: expected one of {', '.join(WORKLOADS)}")


# ------------------------------------------------------------------------------------ the inputs


@dataclass
class Prepared:
    """A workload's input, made once, and the check of a run's output."""

    info: dict[str, Any]
    inputs: list[str]
    input_events: int
    expected_outputs: int
    verify: Callable[[str], dict[str, Any]]


def prepare(client: Any, workload: str, events: int, partitions: int, prefix: str = "") -> Prepared:
    """Produce the workload's input once, to topics named ``<prefix>events`` and so on."""
    from benchmarks.common import prepare_input, prepare_table, verify_counts
    from benchmarks.event_time import prepare_join_input, prepare_windowed_input, verify_join, verify_windowed
    from benchmarks.systems.streamhouse_count import verify_enrichment

    if workload == "count":
        info = prepare_input(client, f"{prefix}events", events, partitions=partitions)
        return Prepared(
            info, [f"{prefix}events"], events, events, lambda topic: verify_counts(client, topic, events)
        )
    if workload == "enrichment":
        table = prepare_table(client, f"{prefix}users", partitions=partitions)
        info = {**prepare_input(client, f"{prefix}events", events, partitions=partitions), "table": table}
        return Prepared(
            info,
            [f"{prefix}events", f"{prefix}users"],
            events,
            events,
            lambda topic: verify_enrichment(client, topic, events),
        )
    if workload == "windowed-count":
        info, truth = prepare_windowed_input(client, f"{prefix}timed-events", events, partitions=partitions)
        expected = truth.outputs("partition", events)
        return Prepared(
            info,
            [f"{prefix}timed-events"],
            events,
            expected,
            lambda topic: verify_windowed(
                client, topic, truth, "partition", events, start_field="start", count_field="count"
            ),
        )
    orders, payments = f"{prefix}orders", f"{prefix}payments"
    info, joins = prepare_join_input(client, orders, payments, events, partitions=partitions)
    return Prepared(
        info,
        [orders, payments],
        info["events"],
        info["expected_joins"],
        lambda topic: verify_join(client, topic, joins),
    )


# --------------------------------------------------------------------------------------- one run


@dataclass
class Launch:
    """How one system is started for one run, and what its result says about its settings."""

    system: str
    cmd: list[str]
    env: dict[str, str]
    described: dict[str, Any]


def peer_launch(
    client: Any, workload: str, inputs: list[str], output: str, tag: str, workdir: Path, partitions: int
) -> Launch:
    from benchmarks.systems import kafka_streams

    cmd, described = kafka_streams.command(
        client,
        workload=workload,
        inputs=inputs,
        output=output,
        app_id=f"bench-{tag}",
        state_dir=workdir / f"{tag}-state",
        stats=workdir / f"{tag}.stats.json",
        threads=partitions,
    )
    return Launch(PEER, cmd, {}, described)


def edge_launch(
    client: Any,
    workload: str,
    inputs: list[str],
    output: str,
    tag: str,
    workdir: Path,
    partitions: int,
    settings: list[str],
) -> Launch:
    from benchmarks.common import COMMIT_INTERVAL_S

    ms = int(COMMIT_INTERVAL_S * 1000)
    cmd = [
        sys.executable,
        "-m",
        "orchestration.cli.main",
        "edge",
        "run",
        "benchmarks.all_cores:topology",
        "--application-id",
        f"bench-{tag}",
        "--bootstrap-servers",
        client.bootstrap_servers,
        "--state-dir",
        str(workdir / f"{tag}-state"),
        "--workers",
        str(partitions),
        "-c",
        f"broker.profile={client.profile.value}",
        "-c",
        f"commit.interval.ms={ms}",
        "--log-level",
        "WARNING",
        *[arg for kv in settings for arg in ("-c", kv)],
    ]
    env = {"BENCH_WORKLOAD": workload, "BENCH_IN": ",".join(inputs), "BENCH_OUT": output}
    described = {
        "settings": {
            "processing_guarantee": "at_least_once",
            "commit_interval_ms": ms,
            "workers": partitions,
            "caching": "off in the topology (one output per update)",
            "extra": settings,
        }
    }
    return Launch(EDGE, cmd, env, described)


def _roles(system: str, pid: int, partitions: int, broker_pid: int | None) -> dict[str, int]:
    """The processes whose CPU is read over the window: the system's (for the edge with several workers,
    the supervisor and each worker), the broker's, and this one's (the watcher)."""
    roles = {"benchmark": os.getpid()}
    if broker_pid is not None:
        roles["broker"] = broker_pid
    if system == EDGE and partitions > 1:
        roles["supervisor"] = pid
        # the workers start right after the supervisor; by the first output every one has
        roles.update({f"worker-{i}": child for i, child in enumerate(children_of(pid))})
    else:
        roles[system] = pid
    return roles


def _first_output(
    client: Any, topic: str, partitions: int, alive: Callable[[], bool], timeout_s: float
) -> float:
    """Wall time at which ``topic`` first held a record (its high watermarks, every 10 ms: no records
    are read, so the watcher costs the system under test nothing)."""
    c = Consumer(
        client.consumer(None, **{"group.id": f"bench-first-{os.getpid()}", "enable.auto.commit": False})
    )
    try:
        parts = [TopicPartition(topic, p) for p in range(partitions)]
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(c.get_watermark_offsets(tp, timeout=5, cached=False)[1] for tp in parts):
                return time.time()
            if not alive():
                raise RuntimeError("exited before its first output")
            time.sleep(0.01)
        raise RuntimeError(f"no output within {timeout_s:.0f} s")
    finally:
        c.close()


def timed_run(
    client: Any,
    launch: Launch,
    prepared: Prepared,
    workload: str,
    output: str,
    partitions: int,
    broker_pid: int | None,
    workdir: Path,
    tag: str,
    timeout_s: float,
) -> dict[str, Any]:
    """Start the system, time it from its first output to the expected-th, read the CPU in between,
    stop it and check its output."""
    workload_name = f"{workload}-{partitions}p"
    child = start_child(launch.cmd, workdir / f"{tag}.log", env=launch.env)
    base: dict[str, Any] = {"output_topic": output, "partitions": partitions, **launch.described}

    def failed(why: str) -> dict[str, Any]:
        return result(launch.system, workload_name, prepared.input_events, None, status="failed",
                      reason=f"{why}; log tail:\n{child.log_tail()}", **base)  # fmt: skip

    try:
        try:
            first = _first_output(client, output, partitions, child.alive, timeout_s)
        except RuntimeError as exc:
            return failed(str(exc))
        roles = _roles(launch.system, child.popen.pid, partitions, broker_pid)
        marks = Consumer(client.consumer(None, **{"group.id": f"bench-marks-{os.getpid()}"}))
        parts = [TopicPartition(output, p) for p in range(partitions)]
        sampler = Sampler(
            roles,
            lambda: sum(marks.get_watermark_offsets(tp, timeout=5, cached=False)[1] for tp in parts),
            interval_s=1.0,
        )
        cpu_start = sampler.start()
        try:
            watch = wait_for_outputs(
                client, output, prepared.expected_outputs, timeout_s=timeout_s, alive=child.alive
            )
        finally:
            cpu_end = sampler.stop()
            marks.close()
    finally:
        child.finish(timeout_s=60, terminate=True)
    if not watch.reached:
        return failed(f"only {watch.seen}/{prepared.expected_outputs} outputs within {timeout_s:.0f} s")
    seconds = watch.end_wall - first
    cpu = cpu_window(cpu_start, cpu_end)
    system_cpu_s = sum(
        p["cpu_s"] for role, p in cpu["processes"].items() if role not in ("benchmark", "broker")
    )
    system_roles = [role for role in roles if role not in ("benchmark", "broker")]
    middle = sampler.middle_rate(prepared.expected_outputs)
    inputs_per_output = prepared.input_events / prepared.expected_outputs
    r = result(
        launch.system,
        workload_name,
        prepared.input_events,
        prepared.input_events / seconds,
        seconds_first_to_last_output=round(seconds, 3),
        # the steady rate, without the first and last fifth of the outputs: for a JVM, without most of
        # its warm-up (see thread_timeline: the JIT compiler's threads)
        events_per_s_20_to_80pct=round(middle * inputs_per_output) if middle else None,
        cpu_s_per_1m_events=round(system_cpu_s / prepared.input_events * 1e6, 2),
        whole_run_cpu_s=child.cpu_s,
        cpu=cpu,
        second_half=second_half(sampler, system_roles, prepared.expected_outputs, inputs_per_output),
        thread_timeline=thread_timeline(sampler, system_roles),
        **base,
    )
    r["verification"] = prepared.verify(output)
    if not r["verification"].get("correct"):
        r["status"] = "failed"
    return r


def second_half(
    sampler: Sampler, system_roles: list[str], expected_outputs: int, inputs_per_output: float
) -> dict[str, float] | None:
    """Rate and CPU per 1M input events from the first sample with half the outputs to the last: the
    steady state. A JVM compiles its hot path during the first seconds of a run (at 1M events that is
    most of Kafka Streams' run: its JIT compiler's threads take half a core meanwhile), a CPython
    process runs the same code from its first record; comparing the second halves of long runs
    compares the two as they run for days."""
    snaps, outputs = sampler.snapshots, sampler.outputs
    start = next((i for i, n in enumerate(outputs) if n >= expected_outputs / 2), None)
    end = len(snaps) - 1
    if start is None or end <= start or outputs[end] <= outputs[start]:
        return None
    events = (outputs[end] - outputs[start]) * inputs_per_output
    cpu_s = 0.0
    for role in system_roles:
        a, b = snaps[start].processes.get(role), snaps[end].processes.get(role)
        if a is not None and b is not None and a.pid == b.pid:
            cpu_s += b.total_s - a.total_s
    seconds = snaps[end].at - snaps[start].at
    return {
        "events_per_s": round(events / seconds),
        "cpu_s_per_1m_events": round(cpu_s / events * 1e6, 2),
        "from_s": round(snaps[start].at - snaps[0].at, 2),
        "seconds": round(seconds, 2),
    }


def thread_timeline(sampler: Sampler, system_roles: list[str]) -> dict[str, list[float]]:
    """The system's cores per sampling interval by thread kind, summed over its processes (``python``:
    the workers' Python threads; ``rdk:broker``: librdkafka's; for the JVM its stream thread, the
    producer's sender, the JIT compiler's and the GC's threads), and the outputs so far: how a system's
    use of the cores changes over a run, e.g. when a JVM's JIT compiler is done."""
    snaps = sampler.snapshots
    out: dict[str, list[float]] = {"t_s": [], "outputs": []}
    kinds = sorted(
        {k for s in snaps for role in system_roles if role in s.processes for k in s.processes[role].threads}
    )
    for kind in kinds:
        out[kind] = []
    for a, b, n in zip(snaps, snaps[1:], sampler.outputs[1:], strict=False):
        span = b.at - a.at
        out["t_s"].append(round(b.at - snaps[0].at, 2))
        out["outputs"].append(n)
        for kind in kinds:
            used = 0.0
            for role in system_roles:
                pa, pb = a.processes.get(role), b.processes.get(role)
                if pa is not None and pb is not None and pa.pid == pb.pid:
                    used += pb.threads.get(kind, 0.0) - pa.threads.get(kind, 0.0)
            out[kind].append(round(max(0.0, used) / span, 2) if span > 0 else 0.0)
    return out


# ----------------------------------------------------------------------------------------- report


def describe(r: dict[str, Any]) -> str:
    """One run in a line, and where the cores went."""
    cpu = r.get("cpu")
    head = (
        f"{r['system']:>17}: {r.get('events_per_s')} events/s "
        f"(20-80 %: {r.get('events_per_s_20_to_80pct')}), "
        f"{r.get('cpu_s_per_1m_events')} CPU-s per 1M (first to last output), "
        f"output correct: {(r.get('verification') or {}).get('correct')}"
    )
    if not cpu:
        return head + (f"\n    {str(r.get('reason'))[:500]}" if r.get("reason") else "")
    half = r.get("second_half")
    if half:
        head += (
            f"\n    second half of the outputs (from {half['from_s']} s): {half['events_per_s']} events/s, "
            f"{half['cpu_s_per_1m_events']} CPU-s per 1M"
        )
    roles = ", ".join(f"{role} {p['cores']:.2f}" for role, p in cpu["processes"].items())
    return (
        f"{head}\n    cores: machine {cpu['machine_busy_cores']:.2f} busy of {cpu['machine_cores']}, "
        f"{cpu['machine_idle_cores']:.2f} idle; {roles}"
    )


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each system's medians over its correct runs, and the edge's ratios to Kafka Streams: in rate, and
    in events per CPU-second (the peer's CPU-s per 1M over the edge's)."""
    out: dict[str, Any] = {}
    for system in (PEER, EDGE):
        ok = [r for r in runs if r.get("system") == system and r.get("status") == "ok"]
        if ok:
            out[system] = {
                "runs": len(ok),
                "events_per_s_median": statistics.median(r["events_per_s"] for r in ok),
                "cpu_s_per_1m_median": statistics.median(r["cpu_s_per_1m_events"] for r in ok),
                "machine_idle_cores_median": statistics.median(r["cpu"]["machine_idle_cores"] for r in ok),
            }
            halves = [r["second_half"] for r in ok if r.get("second_half")]
            if halves:
                out[system]["second_half_events_per_s_median"] = statistics.median(
                    h["events_per_s"] for h in halves
                )
                out[system]["second_half_cpu_s_per_1m_median"] = statistics.median(
                    h["cpu_s_per_1m_events"] for h in halves
                )
    if PEER in out and EDGE in out:
        edge, peer = out[EDGE], out[PEER]
        out["edge_vs_peer"] = round(edge["events_per_s_median"] / peer["events_per_s_median"], 3)
        if edge["cpu_s_per_1m_median"] and peer["cpu_s_per_1m_median"]:
            out["edge_vs_peer_per_cpu_s"] = round(
                peer["cpu_s_per_1m_median"] / edge["cpu_s_per_1m_median"], 3
            )
        if "second_half_events_per_s_median" in edge and "second_half_events_per_s_median" in peer:
            out["edge_vs_peer_second_half"] = round(
                edge["second_half_events_per_s_median"] / peer["second_half_events_per_s_median"], 3
            )
            if edge["second_half_cpu_s_per_1m_median"] and peer["second_half_cpu_s_per_1m_median"]:
                out["edge_vs_peer_per_cpu_s_second_half"] = round(
                    peer["second_half_cpu_s_per_1m_median"] / edge["second_half_cpu_s_per_1m_median"], 3
                )
    return out


def variant_name(settings: list[str]) -> str:
    """``linger.ms=100`` -> ``lingerms100``: the result file's suffix for a run with extra settings."""
    return "-".join(re.sub(r"[^a-z0-9]", "", kv.lower()) for kv in settings)


def compare(
    client: Any,
    workload: str,
    events: int,
    partitions: int,
    rounds: int,
    settings: list[str],
    workdir: Path,
    timeout_s: float,
    *,
    broker_pid: int | None = None,
    prefix: str = "",
    report: Callable[[str], None] = lambda _line: None,
) -> tuple[Prepared, list[dict[str, Any]]]:
    """Prepare the input, then ``rounds`` turns of Kafka Streams and the edge on it; every run's result."""
    prepared = prepare(client, workload, events, partitions, prefix)
    report(f"input: {prepared.info}")
    runs: list[dict[str, Any]] = []
    for i in range(rounds):
        for system in (PEER, EDGE):
            tag = f"{prefix}{system}-{i}"
            output = f"bench-{tag}-out"
            # no time-based retention: the windowed count's and the join's outputs carry their inputs'
            # event times (2025), which Apache Kafka would delete while the run goes
            ready_topic(client, output, partitions=partitions, **{"retention.ms": "-1"})
            launch = (
                peer_launch(client, workload, prepared.inputs, output, tag, workdir, partitions)
                if system == PEER
                else edge_launch(
                    client, workload, prepared.inputs, output, tag, workdir, partitions, settings
                )
            )
            r = timed_run(
                client, launch, prepared, workload, output, partitions, broker_pid, workdir, tag, timeout_s
            )
            r["round"] = i
            report(f"  round {i} {describe(r)}")
            runs.append(r)
    return prepared, runs


# ------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", choices=WORKLOADS, default="enrichment")
    ap.add_argument("--events", type=int, default=1_000_000, help="input events (default 1M)")
    ap.add_argument(
        "--partitions",
        type=int,
        default=os.cpu_count() or 2,
        help="input partitions = Kafka Streams' threads = the edge's workers (default: the cores)",
    )
    ap.add_argument("--rounds", type=int, default=2, help="turns per system (default 2)")
    ap.add_argument("--timeout-s", type=float, default=300.0, help="per run")
    ap.add_argument(
        "-c",
        dest="settings",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an edge setting for every edge run (e.g. linger.ms=100)",
    )
    ap.add_argument("--results", type=Path, default=None)
    a = ap.parse_args(argv)
    if a.events < 1_000 or a.rounds < 1 or a.partitions < 1:
        ap.error("--events must be at least 1000, --rounds and --partitions at least 1")
    bad = [kv for kv in a.settings if "=" not in kv]
    if bad:
        ap.error(f"-c takes KEY=VALUE, got {', '.join(bad)}")
    from benchmarks.systems import kafka_streams

    reason = kafka_streams.availability()
    if reason:
        print(f"Kafka Streams is not available: {reason}")
        return 2
    suffix = f"-{variant_name(a.settings)}" if a.settings else ""
    results = a.results or RESULTS_DIR / f"all_cores_{a.workload}{suffix}.json"

    from edge.broker import local_broker, profile_for
    from edge.kafka.profile import KafkaClientConfig

    parallelism = machine_parallelism()
    print(
        f"machine: two CPU-bound processes do x{parallelism['ratio_two_to_one']} the work of one", flush=True
    )
    workdir = Path(tempfile.mkdtemp(prefix="all-cores-"))
    with local_broker(log_dir=workdir) as broker:
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(broker.kind))
        broker_pid = getattr(getattr(broker, "info", None), "pid", None)
        prepared, runs = compare(
            client, a.workload, a.events, a.partitions, a.rounds, a.settings, workdir, a.timeout_s,
            broker_pid=broker_pid, report=lambda line: print(line, flush=True),
        )  # fmt: skip
    s = summary(runs)
    if "edge_vs_peer" in s:
        print(
            f"edge / Kafka Streams (medians): x{s['edge_vs_peer']} in rate, "
            f"x{s.get('edge_vs_peer_per_cpu_s')} per CPU-second"
        )
    if "edge_vs_peer_second_half" in s:
        print(
            f"  second halves (steady state): x{s['edge_vs_peer_second_half']} in rate, "
            f"x{s.get('edge_vs_peer_per_cpu_s_second_half')} per CPU-second"
        )
    doc = {
        "benchmark": "all_cores",
        "workload": a.workload,
        "partitions": a.partitions,
        "edge_settings": a.settings,
        "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {**machine_info(), "parallelism": parallelism},
        "input": prepared.info,
        "runs": runs,
        "summary": s,
    }
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    print(f"-> {results}")
    return 0 if runs and all(r.get("status") == "ok" for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())

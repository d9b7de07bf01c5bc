"""One edge instance with 1 worker against the same instance with 2 (``streamhouse edge run --workers``),
with the CPU every process used while it ran.

A 2-partition input of N events is counted per key (one output per input, no cache) by
``streamhouse edge run`` as a separate process, timed from outside: from the first output to the N-th
(so start-up and the group join do not count), read by a watcher consumer. The target: 2 workers on
2 cores >= 1.7x one.

A throughput ratio alone cannot say whether 1.7x was reachable: on a 2-core machine the broker and the
benchmark's own readers share the cores with the workers. So at the first output and at the N-th the
benchmark reads, from ``/proc``, the CPU-seconds of every process involved -- the broker, the
``edge run`` process (with 2 workers: the supervisor), each worker, this process (its watcher
consumers) -- each split by thread (the Python main thread, librdkafka's ``rdk:*`` threads, RocksDB's,
the broker's), and the whole machine's busy and idle time from ``/proc/stat``. Over the timed window
that says where both cores went: whether one worker, the broker and the measuring already fill them
(then no second worker can double the rate here), or how much stayed idle. CPU that is busy but none of
these processes' is other load on the machine, reported as such.

Runs alternate 1 worker, 2 workers (``--runs`` pairs); each pair gives a speedup, the summary their
median. ``--quiet-below L`` waits (up to ``--quiet-wait`` s) before each run until the 1-minute load
average is below L. Prints the figures and writes ``benchmarks/results/edge_workers[-<broker>].json``.

    .venv/bin/python -m benchmarks.edge_workers --events 1000000 --runs 3 --broker tansu
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from benchmarks.common import (
    ensure_topics,
    machine_info,
    prepare_input,
    result,
    wait_for_outputs,
    write_results,
)
from benchmarks.systems.streamhouse_count import build_topology
from edge.broker.local import BrokerKind, broker_kind_from_env, local_broker, profile_for
from edge.kafka import KafkaClientConfig

ROOT = Path(__file__).resolve().parent.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")


def topology() -> Any:
    """The benchmark's app for ``streamhouse edge run`` (topics from the environment)."""
    return build_topology(os.environ["BENCH_IN"], os.environ["BENCH_OUT"])


# ------------------------------------------------------------------------------------- CPU accounting


def _stat(path: str) -> tuple[str, list[str]] | None:
    """(comm, the fields after it) of a ``/proc/.../stat`` file; None once the process or thread is gone.
    The name is cut at the last ``)`` since a thread name may itself hold one."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    return text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()


def _cpu_s(fields: list[str]) -> float:
    """utime + stime (stat fields 14 and 15; ``fields`` starts at field 3) in seconds."""
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def children_of(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(k) for k in f.read().split()]
    except OSError:
        pass
    return sorted(kids)


def _thread_kind(pid: int, tid: int, comm: str) -> str:
    """A thread's group: ``main`` (the process's first thread: in a worker, the stream thread with the
    GIL's work), else its name with numbers folded (``rdk:broker1`` -> ``rdk:broker``); CPython names
    no thread, so the Python threads besides the main one share the process name."""
    return "main" if tid == pid else re.sub(r"\d+", "", comm).rstrip(":-_ ") or comm


@dataclass
class ProcessCpu:
    """One process's CPU-seconds so far: the total (exited threads included) and by thread kind."""

    pid: int
    total_s: float
    threads: dict[str, float]


def process_cpu(pid: int) -> ProcessCpu | None:
    own = _stat(f"/proc/{pid}/stat")
    if own is None:
        return None
    threads: dict[str, float] = {}
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        tids = []
    for tid in tids:
        st = _stat(f"/proc/{pid}/task/{tid}/stat")
        if st is not None:
            kind = _thread_kind(pid, tid, st[0])
            threads[kind] = threads.get(kind, 0.0) + _cpu_s(st[1])
    return ProcessCpu(pid, _cpu_s(own[1]), threads)


def machine_cpu() -> dict[str, float]:
    """The whole machine's CPU-seconds so far by state (``/proc/stat``'s first line; guest time is
    already inside user time, so it is left out)."""
    with open("/proc/stat") as f:
        values = [int(v) / CLK_TCK for v in f.readline().split()[1:9]]
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    return dict(zip(names, values, strict=True))


@dataclass
class CpuSnapshot:
    at: float  # time.perf_counter()
    machine: dict[str, float]
    processes: dict[str, ProcessCpu]


def snapshot(roles: dict[str, int]) -> CpuSnapshot:
    """Every role's process CPU and the machine's, read together (a few /proc files: well under 1 ms)."""
    procs = {role: cpu for role, pid in roles.items() if (cpu := process_cpu(pid)) is not None}
    return CpuSnapshot(time.perf_counter(), machine_cpu(), procs)


def cpu_window(start: CpuSnapshot, end: CpuSnapshot) -> dict[str, Any]:
    """Where the cores went between two snapshots: each role in cores (CPU-seconds / window seconds)
    with its threads, the machine's busy and idle cores, and the busy time no role accounts for."""
    window = end.at - start.at
    cores = os.cpu_count() or 1

    def per_s(x: float) -> float:
        return round(x / window, 3)

    machine = {k: end.machine[k] - start.machine[k] for k in end.machine}
    total = sum(machine.values())
    idle = machine["idle"] + machine["iowait"]
    # /proc/stat counts every core: its total over the window is cores x window (up to tick rounding)
    scale = cores * window / total if total else 1.0
    processes: dict[str, Any] = {}
    ours = 0.0
    for role, last in end.processes.items():
        first = start.processes.get(role)
        used = last.total_s - (first.total_s if first is not None and first.pid == last.pid else 0.0)
        ours += used
        threads = {
            kind: per_s(s - (first.threads.get(kind, 0.0) if first is not None else 0.0))
            for kind, s in sorted(last.threads.items())
        }
        processes[role] = {
            "pid": last.pid,
            "cpu_s": round(used, 2),
            "cores": per_s(used),
            "threads_cores": {k: v for k, v in threads.items() if v >= 0.005},
        }
    busy = (total - idle) * scale
    return {
        "window_s": round(window, 3),
        "machine_cores": cores,
        "machine_busy_cores": per_s(busy),
        "machine_idle_cores": per_s(idle * scale),
        "machine_by_state_cores": {k: per_s(v * scale) for k, v in machine.items() if v},
        "processes": processes,
        "accounted_cores": per_s(ours),
        "other_load_cores": per_s(max(0.0, busy - ours)),
    }


class Sampler:
    """Snapshots every ``interval_s`` in a thread, for a timeline of the window: who was busy when (a
    worker idle at the start is one still joining) and how many outputs the sink held (its high
    watermarks: one small request to the broker per sample). Reading /proc takes well under a ms."""

    def __init__(self, roles: dict[str, int], progress: Callable[[], int], interval_s: float = 0.5) -> None:
        self.roles = roles
        self.progress = progress
        self.interval_s = interval_s
        self.snapshots: list[CpuSnapshot] = []
        self.outputs: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)

    def _take(self) -> CpuSnapshot:
        snap = snapshot(self.roles)
        self.snapshots.append(snap)
        self.outputs.append(self.progress())
        return snap

    def start(self) -> CpuSnapshot:
        snap = self._take()
        self._thread.start()
        return snap

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._take()

    def stop(self) -> CpuSnapshot:
        self._stop.set()
        self._thread.join()
        return self._take()

    def timeline(self) -> dict[str, list[float]]:
        """Each role's cores per interval, the machine's busy cores and the outputs so far, from the
        window's start."""
        out: dict[str, list[float]] = {"t_s": [], "outputs": [], "machine_busy": []}
        first = self.snapshots[0].at
        for a, b, n in zip(self.snapshots, self.snapshots[1:], self.outputs[1:], strict=False):
            w = cpu_window(a, b)
            out["t_s"].append(round(b.at - first, 2))
            out["outputs"].append(n)
            out["machine_busy"].append(round(w["machine_busy_cores"], 2))
            for role, p in w["processes"].items():
                out.setdefault(role, []).append(round(p["cores"], 2))
        return out

    def middle_rate(self, events: int) -> float | None:
        """Outputs per second between 20 % and 80 % of ``events``: the steady rate, without the start
        (a worker still joining, a rebalance) or the end (one worker done before the other)."""
        times = [s.at for s in self.snapshots]

        def crossing(target: float) -> float | None:
            for (t0, n0), (t1, n1) in zip(
                zip(times, self.outputs, strict=True),
                zip(times[1:], self.outputs[1:], strict=True),
                strict=False,
            ):
                if n0 < target <= n1:
                    return t0 + (t1 - t0) * (target - n0) / (n1 - n0)
            return None

        lo, hi = crossing(0.2 * events), crossing(0.8 * events)
        return 0.6 * events / (hi - lo) if lo is not None and hi is not None and hi > lo else None


def all_busy_rate(timeline: dict[str, list[float]], busy: float = 0.3) -> dict[str, float] | None:
    """Outputs per second over the samples in which every worker used at least ``busy`` of a core: the
    rate of the workers working together. Two workers are separate group members, so the second may
    join a moment after the first started on every partition (on a broker with
    ``group.initial.rebalance.delay.ms=0``, as the local Apache Kafka has, the first join completes
    alone and the second worker gets its task from the cooperative rebalance seconds later); that
    stretch is in the first-to-last figure but is not what two workers do."""
    workers = [k for k in timeline if k.startswith("worker-")]
    both = [i for i in range(len(timeline["t_s"])) if all(timeline[w][i] >= busy for w in workers)]
    if len(both) < 2:
        return None
    # each sample covers the interval ending at t_s[i]; the interval's start is the previous sample
    first, last = both[0], both[-1]
    t0 = timeline["t_s"][first - 1] if first else 0.0
    n0 = timeline["outputs"][first - 1] if first else None
    if n0 is None:
        first += 1
        t0, n0 = timeline["t_s"][first - 1], timeline["outputs"][first - 1]
    seconds = timeline["t_s"][last] - t0
    if seconds <= 0:
        return None
    return {
        "events_per_s": round((timeline["outputs"][last] - n0) / seconds),
        "seconds": round(seconds, 2),
        "from_s": round(t0, 2),
    }


def busy_cores_now(seconds: float = 2.0) -> float:
    """The machine's busy cores over the next ``seconds`` (how quiet it is right before a run)."""
    a = machine_cpu()
    time.sleep(seconds)
    b = machine_cpu()
    d = {k: b[k] - a[k] for k in a}
    total = sum(d.values())
    busy = total - d["idle"] - d["iowait"]
    return round((os.cpu_count() or 1) * busy / total, 3) if total else 0.0


#: A CPU-bound pure-Python loop (dict and str work like the count's) that prints its rounds per second.
_SPIN = """
import sys, time
end = time.perf_counter() + float(sys.argv[1])
d, rounds = {}, 0
while time.perf_counter() < end:
    for i in range(1000):
        k = "user-%05d" % (i * 7919 % 10000)
        d[k] = d.get(k, 0) + 1
    rounds += 1
print(rounds / float(sys.argv[1]))
"""


def machine_parallelism(seconds: float = 2.0) -> dict[str, Any]:
    """How much two CPU-bound processes get out of this machine together against one alone: the ceiling
    of any 2-worker speedup here. 2.0 on two real cores; less when the virtual CPUs share a physical
    core (SMT siblings), are throttled, or other load takes a share. One alone, two together, one alone."""

    def spin(n: int) -> list[float]:
        procs = [
            subprocess.Popen([sys.executable, "-c", _SPIN, str(seconds)], stdout=subprocess.PIPE, text=True)
            for _ in range(n)
        ]
        return [float(p.communicate()[0]) for p in procs]

    alone = spin(1)
    together = spin(2)
    alone += spin(1)
    one = statistics.mean(alone)
    return {
        "one_process_rounds_per_s": [round(x) for x in alone],
        "two_processes_rounds_per_s": [round(x) for x in together],
        "ratio_two_to_one": round(sum(together) / one, 2),
    }


# ------------------------------------------------------------------------------------------ one run


def ready_topic(
    client: KafkaClientConfig, topic: str, timeout_s: float = 30.0, partitions: int = 2, **config: str
) -> None:
    """Create ``topic`` (with ``config``) and wait until every partition answers for its offsets: a fresh
    Apache Kafka broker elects a new partition's leader a moment after the creation returns."""
    ensure_topics(client, [topic], partitions, **config)
    probe = Consumer(client.consumer(f"bench-ready-{uuid.uuid4().hex[:6]}"))
    deadline = time.monotonic() + timeout_s
    try:
        for p in range(partitions):
            while True:
                try:
                    probe.get_watermark_offsets(TopicPartition(topic, p), timeout=5, cached=False)
                    break
                except KafkaException:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
    finally:
        probe.close()


def run_once(
    client: KafkaClientConfig,
    broker_pid: int,
    source: str,
    events: int,
    workers: int,
    workdir: Path,
    settings: list[str] | None = None,
) -> dict[str, Any]:
    """One timed run of the count with ``workers`` workers; ``settings`` are extra ``-c key=value``."""
    sink = f"bench-workers-out-{uuid.uuid4().hex[:8]}"
    ready_topic(client, sink)
    env = {**os.environ, "BENCH_IN": source, "BENCH_OUT": sink}
    tag = f"w{workers}-{uuid.uuid4().hex[:6]}"
    cmd = [
        sys.executable, "-m", "orchestration.cli.main", "edge", "run", "benchmarks.edge_workers:topology",
        "--application-id", f"bench-workers-{tag}",
        "--bootstrap-servers", client.bootstrap_servers, "--state-dir", str(workdir / tag),
        "--workers", str(workers), "-c", "commit.interval.ms=1000", "--log-level", "WARNING",
        *[arg for kv in settings or [] for arg in ("-c", kv)],
    ]  # fmt: skip
    loadavg = round(os.getloadavg()[0], 2)
    busy_before = busy_cores_now()
    watcher = Consumer(client.consumer(f"bench-watch-{uuid.uuid4().hex[:6]}"))
    log = (workdir / f"{tag}.log").open("w")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=log, stdout=log)
    started = time.perf_counter()
    first: float | None = None
    try:
        watcher.assign([TopicPartition(sink, p, OFFSET_BEGINNING) for p in range(2)])
        while not [m for m in watcher.consume(1, 0.02) if m.error() is None]:
            # waiting for the first output: start-up and the group join are over then
            if proc.poll() is not None:
                raise RuntimeError(f"the app exited with {proc.returncode}; see {log.name}")
        first = time.perf_counter()
        roles = {"broker": broker_pid, "benchmark": os.getpid()}
        if workers == 1:
            roles["worker-0"] = proc.pid  # one worker runs in the edge run process itself
        else:
            roles["supervisor"] = proc.pid
            roles.update({f"worker-{i}": pid for i, pid in enumerate(children_of(proc.pid))})
        marks = Consumer(client.consumer(f"bench-marks-{uuid.uuid4().hex[:6]}"))
        parts = [TopicPartition(sink, p) for p in range(2)]

        def progress() -> int:
            return sum(marks.get_watermark_offsets(tp, timeout=5, cached=False)[1] for tp in parts)

        sampler = Sampler(roles, progress)
        cpu_start = sampler.start()
        # this consumer would go on prefetching the output in the background: the measuring's CPU
        # should be the wait below, nothing else
        watcher.close()
        watch = wait_for_outputs(client, sink, events, timeout_s=900, alive=lambda: proc.poll() is None)
        cpu_end = sampler.stop()
        marks.close()
        if not watch.reached:
            raise RuntimeError(f"{watch.seen} of {events} outputs; see {log.name}")
        end = time.perf_counter() - (time.time() - watch.end_wall)
    finally:
        proc.terminate()
        proc.wait(60)
        if first is None:
            watcher.close()
        log.close()
    seconds = end - first
    middle = sampler.middle_rate(events)
    timeline = sampler.timeline()
    return result(
        "streamhouse-edge",
        f"count-2p-{workers}worker",
        events,
        events / seconds,
        workers=workers,
        seconds_first_to_last_output=round(seconds, 3),
        seconds_incl_startup=round(end - started, 3),
        events_per_s_20_to_80pct=round(middle) if middle else None,
        loadavg_1m_before=loadavg,
        machine_busy_cores_before=busy_before,
        cpu=cpu_window(cpu_start, cpu_end),
        all_workers_busy=all_busy_rate(timeline),
        cpu_timeline=timeline,
    )


def wait_quiet(below: float, max_wait_s: float) -> float:
    """Wait until the 1-minute load average is under ``below`` (at most ``max_wait_s``); the last one."""
    deadline = time.monotonic() + max_wait_s
    while (load := os.getloadavg()[0]) >= below and time.monotonic() < deadline:
        time.sleep(5)
    return round(load, 2)


def describe(r: dict[str, Any]) -> str:
    """The run's figures and where the cores went, in one paragraph."""
    cpu = r["cpu"]
    parts = []
    for role, p in cpu["processes"].items():
        top = sorted(p["threads_cores"].items(), key=lambda kv: -kv[1])[:4]
        threads = ", ".join(f"{k} {v:.2f}" for k, v in top)
        parts.append(f"    {role:<11} {p['cores']:.2f} cores ({threads})")
    return (
        f"{r['workers']} worker(s): {r['events_per_s']:,} events/s "
        f"(20-80 %: {r['events_per_s_20_to_80pct'] or 0:,}; "
        f"{r['seconds_first_to_last_output']} s first to last output, {r['seconds_incl_startup']} s "
        f"with start-up; load {r['loadavg_1m_before']}, {r['machine_busy_cores_before']} cores busy "
        f"before)\n  machine over the window: {cpu['machine_busy_cores']:.2f} of {cpu['machine_cores']} "
        f"cores busy, {cpu['machine_idle_cores']:.2f} idle; ours {cpu['accounted_cores']:.2f}, other "
        f"load {cpu['other_load_cores']:.2f}\n" + "\n".join(parts)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=1, help="pairs of runs (1 worker, then 2)")
    ap.add_argument("--broker", choices=[k.value for k in BrokerKind], default=None,
                    help="the local broker (default: $STREAMHOUSE_BROKER_KIND, else tansu)")  # fmt: skip
    ap.add_argument("--quiet-below", type=float, default=None, help="wait for a load average under this")
    ap.add_argument("--quiet-wait", type=float, default=120.0)
    ap.add_argument(
        "-c", dest="settings", action="append", default=[], metavar="KEY=VALUE",
        help="a setting for both runs, as for edge run (a variant: named in the result file)",
    )  # fmt: skip
    args = ap.parse_args()
    kind = BrokerKind(args.broker) if args.broker else broker_kind_from_env()
    workdir = Path(tempfile.mkdtemp(prefix="edge-workers-bench-"))
    runs: list[dict[str, Any]] = []
    if args.quiet_below is not None:
        wait_quiet(args.quiet_below, args.quiet_wait)
    parallelism = machine_parallelism()
    print(
        f"machine: 2 CPU-bound processes together do {parallelism['ratio_two_to_one']}x the work of one "
        "alone (the ceiling of any 2-worker speedup here)",
        flush=True,
    )
    with local_broker(kind, log_dir=workdir) as broker:
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(broker.kind))
        source = "bench-workers-in"
        ready_topic(client, source)
        prepare_input(client, source, args.events, partitions=2)
        for _ in range(args.runs):
            pair = []
            for workers in (1, 2):
                if args.quiet_below is not None:
                    wait_quiet(args.quiet_below, args.quiet_wait)
                r = run_once(client, broker.info.pid, source, args.events, workers, workdir, args.settings)
                r["broker"] = kind.value
                r["settings"] = args.settings
                print(describe(r), flush=True)
                pair.append(r)
            one, two = pair
            two["speedup_vs_1"] = round(two["events_per_s"] / one["events_per_s"], 2)
            if one["all_workers_busy"] and two["all_workers_busy"]:
                two["speedup_vs_1_all_workers_busy"] = round(
                    two["all_workers_busy"]["events_per_s"] / one["all_workers_busy"]["events_per_s"], 2
                )
            if one["events_per_s_20_to_80pct"] and two["events_per_s_20_to_80pct"]:
                two["speedup_vs_1_20_to_80pct"] = round(
                    two["events_per_s_20_to_80pct"] / one["events_per_s_20_to_80pct"], 2
                )
            print(
                f"2 workers / 1 worker: {two['speedup_vs_1']}x, 20-80 %: "
                f"{two.get('speedup_vs_1_20_to_80pct')}x, every worker busy: "
                f"{two.get('speedup_vs_1_all_workers_busy')}x (target >= 1.7x on 2 cores)",
                flush=True,
            )
            runs += pair
    speedups = [r["speedup_vs_1"] for r in runs if "speedup_vs_1" in r]
    middles = [r["speedup_vs_1_20_to_80pct"] for r in runs if "speedup_vs_1_20_to_80pct" in r]
    together = [r["speedup_vs_1_all_workers_busy"] for r in runs if "speedup_vs_1_all_workers_busy" in r]
    print(
        f"speedups {speedups}, median {statistics.median(speedups)}x; 20-80 %: {middles}; every worker "
        f"busy: {together} ({kind.value} broker)"
    )
    machine = machine_info()
    name = "edge_workers" if kind is BrokerKind.TANSU else f"edge_workers-{kind.value}"
    if args.settings:
        name += "-" + "-".join(re.sub(r"[^A-Za-z0-9]+", "", kv) for kv in args.settings)
    machine["parallelism"] = parallelism
    path = write_results(name, [{**r, "machine": machine} for r in runs])
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

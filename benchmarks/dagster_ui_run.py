"""What a run launched from the Dagster UI costs against the same work in-process.

    .venv/bin/python -m benchmarks.dagster_ui_run [--events 20000] [--day 2026-01-06] [--executors in_process]

Sample events are produced to an embedded broker and ``ingest_job`` (bronze + the silver dimension
tables) runs once, in-process, into a base lake. Then, each on a fresh copy of that lake:

* **in-process**: a new Python process builds the Definitions from the settings and runs the one-day
  ``daily_job`` with ``execute_in_process`` (what ``streamhouse demo`` and the tests do), timed from
  process start to exit (imports, Spark start, run);
* **UI** (one per ``--executors`` value, ``STREAMHOUSE_DAGSTER_EXECUTOR``): ``dagster dev -w
  workspace.yaml`` on a free loopback port with a temporary ``DAGSTER_HOME``; the run is launched through
  the webserver's GraphQL ``launchRun`` (as the Launchpad does, tag ``dagster/partition``) and its
  status polled through GraphQL, timed from ``launchRun`` to a terminal status.

For each run, the processes started under it are sampled every 0.25 s from ``/proc``: the java
processes (Spark JVMs) and the peak resident memory of the whole new process tree.
Results: ``benchmarks/results/dagster_ui_run.json``; docs/benchmarks.md, "Runs launched from the UI".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "dagster_ui_run.json"
PAGE = os.sysconf("SC_PAGE_SIZE")

# ------------------------------------------------------------------------------------- processes


def _processes() -> dict[int, tuple[int, str, int]]:
    """pid -> (parent pid, command name, resident bytes), from /proc."""
    out: dict[int, tuple[int, str, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        out[int(entry)] = (int(fields[1]), comm, int(fields[21]) * PAGE)
    return out


def _is_jvm(pid: int) -> bool:
    """A Spark driver JVM (``SparkSubmit``), not the ``java -version`` probe of ``build_spark_session``
    nor the short-lived ``org.apache.spark.launcher.Main`` that spark-submit runs first."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
    except OSError:
        return False
    launcher = b"org.apache.spark.launcher.Main" in cmdline
    return b"org.apache.spark.deploy.SparkSubmit" in cmdline and not launcher


def _descendants(procs: dict[int, tuple[int, str, int]], root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    seen: set[int] = set()
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen


class TreeSampler:
    """Samples the processes that appear under ``root`` after start: java pids and peak RSS."""

    def __init__(self, root: int) -> None:
        self.root = root
        procs = _processes()
        self.before = _descendants(procs, root) | {root}
        self.java: set[int] = set()
        #: java pid -> when it was first seen (epoch seconds), to attribute JVMs to runs
        self.java_seen: dict[int, float] = {}
        self.new: set[int] = set()
        self.peak_rss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            procs = _processes()
            new = (_descendants(procs, self.root) | {self.root}) - self.before
            self.new |= new
            jvms = {p for p in new - self.java if procs[p][1] == "java" and _is_jvm(p)}
            self.java_seen.update(dict.fromkeys(jvms, time.time()))
            self.java |= jvms
            self.peak_rss = max(self.peak_rss, sum(procs[p][2] for p in new if p in procs))
            self._stop.wait(0.25)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


# ------------------------------------------------------------------------------------- children


def _child_ingest() -> None:
    """Bronze + dimension silver, in-process, from the settings in the environment."""
    from dagster import DagsterInstance

    from orchestration.definitions import build_definitions
    from orchestration.pipeline import QUIET_RUN_CONFIG, run_ingest
    from orchestration.settings import load_settings

    summary = run_ingest(build_definitions(load_settings()), DagsterInstance.ephemeral(), QUIET_RUN_CONFIG)
    assert summary.result.success
    print(json.dumps({"event_dates": summary.event_dates, "records": summary.records}))


def _child_daily(day: str) -> None:
    from dagster import DagsterInstance

    from orchestration.definitions import build_definitions
    from orchestration.pipeline import QUIET_RUN_CONFIG
    from orchestration.settings import load_settings

    job = build_definitions(load_settings()).resolve_job_def("daily_job")
    started = time.perf_counter()
    result = job.execute_in_process(
        instance=DagsterInstance.ephemeral(), partition_key=day, run_config=QUIET_RUN_CONFIG
    )
    assert result.success
    print(json.dumps({"run_seconds": time.perf_counter() - started}))


# ------------------------------------------------------------------------------------- the UI


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(port: int, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        data = json.loads(resp.read())
    if data.get("errors"):
        raise RuntimeError(f"GraphQL errors: {data['errors']}")
    return data["data"]


REPOS = """{ repositoriesOrError { __typename ... on RepositoryConnection { nodes { name
  location { name } jobs { name } } } ... on PythonError { message } } }"""
LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message stack }
  ... on RunConfigValidationInvalid { errors { message } } ... on InvalidSubsetError { message } } }"""
STATUS = """query($id: ID!) { runOrError(runId: $id) { __typename ... on Run { status startTime endTime
  executionPlan { steps { key } } } } }"""
TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}


def wait_for_location(port: int, proc: subprocess.Popen, timeout_s: float = 300) -> tuple[str, str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"dagster dev exited with {proc.returncode}")
        try:
            repos = graphql(port, REPOS)["repositoriesOrError"]
            for node in repos.get("nodes", []):
                if any(j["name"] == "daily_job" for j in node["jobs"]):
                    return node["location"]["name"], node["name"]
        except (OSError, RuntimeError, KeyError):  # not up yet
            pass
        time.sleep(1)
    raise TimeoutError("the code location did not load")


@contextlib.contextmanager
def dagster_dev(env: dict[str, str], log_path: Path) -> Iterator[tuple[subprocess.Popen, int]]:
    """``dagster dev -w workspace.yaml`` on a free loopback port (as ``make dagster``); killed on exit."""
    port = free_port()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [str(ROOT / ".venv" / "bin" / "dagster"), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1",
             "-p", str(port)],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        yield proc, port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def _ui_run(env: dict[str, str], workdir: Path, day: str, executor: str) -> dict[str, Any]:
    home = workdir / f"dagster-home-{executor}"
    home.mkdir()
    env = {**env, "DAGSTER_HOME": str(home), "STREAMHOUSE_DAGSTER_EXECUTOR": executor}
    with dagster_dev(env, workdir / f"dagster-dev-{executor}.log") as (proc, port):
        location, repo = wait_for_location(port, proc)
        time.sleep(5)  # let the daemon settle after start-up, as a user would not launch in the same second
        params = {
            "selector": {"repositoryLocationName": location, "repositoryName": repo, "jobName": "daily_job"},
            "runConfigData": {},
            "executionMetadata": {"tags": [{"key": "dagster/partition", "value": day}]},
        }
        with TreeSampler(proc.pid) as sampler:
            started = time.perf_counter()
            launched = graphql(port, LAUNCH, {"p": params})["launchRun"]
            if launched["__typename"] != "LaunchRunSuccess":
                raise RuntimeError(f"launchRun: {launched}")
            run_id = launched["run"]["runId"]
            while True:
                run = graphql(port, STATUS, {"id": run_id})["runOrError"]
                if run["status"] in TERMINAL:
                    break
                time.sleep(0.5)
            wall = time.perf_counter() - started
        if run["status"] != "SUCCESS":
            raise RuntimeError(f"UI run {run_id} ended {run['status']}; see {home}")
        return {
            "executor": executor,
            "seconds": round(wall, 2),
            "run_start_to_end_s": round(run["endTime"] - run["startTime"], 2),
            "steps": len(run["executionPlan"]["steps"]) if run.get("executionPlan") else None,
            "java_processes": len(sampler.java),
            "new_processes": len(sampler.new),
            "peak_rss_mb": round(sampler.peak_rss / 2**20),
        }


def run_child(args: list[str], env: dict[str, str]) -> tuple[float, dict[str, Any], TreeSampler]:
    """``python -m <args>``, sampled from outside: (wall seconds, its last stdout line as JSON, samples)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    with TreeSampler(proc.pid) as sampler:
        out, err = proc.communicate()
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}): {err.decode()[-2000:]}")
    return wall, json.loads(out.decode().strip().splitlines()[-1]), sampler


def _in_process_run(env: dict[str, str], day: str) -> dict[str, Any]:
    wall, inner, sampler = run_child(["benchmarks.dagster_ui_run", "--child", "daily", "--day", day], env)
    return {
        "seconds": round(wall, 2),
        "execute_in_process_s": round(inner["run_seconds"], 2),
        "java_processes": len(sampler.java),
        "peak_rss_mb": round(sampler.peak_rss / 2**20),
    }


def bench_env(workdir: Path, lake: Path, bootstrap: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMHOUSE_", "DAGSTER_"))}
    state = workdir / "state"
    state.mkdir(exist_ok=True)
    jars = ROOT / ".state" / "jars"
    if jars.exists() and not (state / "jars").exists():
        (state / "jars").symlink_to(jars)  # same native-Delta setting as the repository
    env.update(
        STREAMHOUSE_LAKE_ROOT=str(lake),
        STREAMHOUSE_STATE_DIR=str(state),
        STREAMHOUSE_BOOTSTRAP_SERVERS=bootstrap,
        PYTHONWARNINGS="ignore",
    )
    return env


def run(events: int, day: str | None, executors: list[str], workdir: Path) -> dict[str, Any]:
    from assets import sample_data
    from edge.broker import local_broker, profile_for
    from edge.kafka import KafkaClientConfig

    base = workdir / "base"
    with local_broker(log_dir=workdir / "broker") as broker:
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(broker.kind))
        sample_data.produce(client, sample_data.generate(events, seed=5))
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.dagster_ui_run", "--child", "ingest"],
            cwd=ROOT, env=bench_env(workdir, base, broker.bootstrap_servers), capture_output=True, check=True,
        )  # fmt: skip
        ingest = json.loads(out.stdout.decode().strip().splitlines()[-1])
        bootstrap = broker.bootstrap_servers
        order_days = sorted(ingest["event_dates"].get("orders", []))
        day = day or order_days[len(order_days) // 2]
        print(f"bronze: {sum(ingest['records'].values()):,} records; daily_job for {day}", flush=True)

        lake = workdir / "lake-in-process"
        shutil.copytree(base, lake)
        in_process = _in_process_run(bench_env(workdir, lake, bootstrap), day)
        print(f"in-process: {in_process}", flush=True)
        ui_runs = []
        for executor in executors:
            lake = workdir / f"lake-ui-{executor}"
            shutil.copytree(base, lake)
            ui = _ui_run(bench_env(workdir, lake, bootstrap), workdir, day, executor)
            ui["ratio_to_in_process"] = round(ui["seconds"] / in_process["seconds"], 2)
            print(f"UI ({executor}): {ui}", flush=True)
            ui_runs.append(ui)
    return {
        "events": events,
        "day": day,
        "machine": {"cpus": os.cpu_count(), "load_avg_at_end": os.getloadavg()},
        "in_process": in_process,
        "ui": ui_runs,
        "target": "UI run (in_process executor) <= 1.3x the in-process run, one JVM",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--day", help="partition to run (default: a day in the middle of the data)")
    parser.add_argument("--executors", default="in_process", help="comma-separated: in_process,multiprocess")
    parser.add_argument("--workdir", type=Path, help="keep the lakes and logs here (default: a temp dir)")
    parser.add_argument("--child", choices=["ingest", "daily"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child == "ingest":
        _child_ingest()
        return 0
    if args.child == "daily":
        _child_daily(args.day)
        return 0
    if args.workdir:
        shutil.rmtree(args.workdir, ignore_errors=True)
        args.workdir.mkdir(parents=True)
        result = run(args.events, args.day, args.executors.split(","), args.workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="dagster-ui-run-") as tmp:
            result = run(args.events, args.day, args.executors.split(","), Path(tmp))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

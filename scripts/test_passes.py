"""``make test``'s pytest passes: the main one in the foreground, the others beside it in two lanes.

1. the whole suite on the embedded broker (native Delta where ``make install`` resolved the jars), in
   the foreground with its output as usual (``MAIN_TEST_ARGS`` added: deselections of tests that run
   in the Kafka passes only);
2. lane A: ``KAFKA_TESTS`` on Apache Kafka (``KAFKA_PASS_ENV``);
3. lane B: ``DELTA_TESTS`` on Parquet + deltalake (only when the jars were resolved, else the reason is
   printed), then ``KAFKA_SYSTEM_TESTS`` (Kafka's own Streams system tests and the broker bounces, each
   scenario on brokers of its own) on Apache Kafka;

each background pass into a log under ``.state/test-logs`` that is printed when the main pass is done.

Why beside: the Kafka passes spend most of their time waiting (consumer session timeouts after kill -9,
broker restarts and bounces, Kafka's drivers polling for their last results): run alone the Kafka pass
kept 2 cores about half busy. With every background pass in one lane the background outlasted the main
pass; the system tests' cluster scenarios, mostly waits, run in the second, shorter lane.

The exit status is non-zero when any pass fails; a summary names each pass with its last line and time,
and repeats a failed background pass's failures at the end (CI keeps the output's head and tail).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTEST = str(ROOT / ".venv" / "bin" / "pytest")


@dataclass
class PassResult:
    name: str
    code: int
    seconds: float
    last_line: str
    log: Path | None = None


def _env_list(name: str) -> list[str]:
    return shlex.split(os.environ.get(name, ""))


def _env_pairs(name: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in _env_list(name):
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"{name}: expected KEY=VALUE items, got {item!r}")
        pairs[key] = value
    return pairs


def _last_line(text: str) -> str:
    """pytest's closing line (``== 63 passed in ... ==``), else the last line: a client's log line
    printed as the process exits must not stand in for the pass's result."""
    lines = [line for line in text.splitlines() if line.strip()]
    closing = [line for line in lines if line.startswith("=") and " in " in line and line.endswith("=")]
    chosen = closing[-1] if closing else (lines[-1] if lines else "(no output)")
    return chosen.strip("= ")


def _failure_digest(result: PassResult, limit: int = 60) -> str:
    """A failed background pass's failing tests and assertion lines, printed last.

    CI keeps the head and the tail of the output: a background pass's tracebacks sit in its middle, so
    its failures are repeated here, at the end, where the excerpt still shows them.
    """
    assert result.log is not None
    lines = result.log.read_text(errors="replace").splitlines()
    picked = [
        line
        for line in lines
        if line.startswith(("FAILED ", "ERROR ", "E   ", "_____")) or " - AssertionError" in line
    ]
    if len(picked) > limit:
        picked = [*picked[: limit - 1], f"... {len(picked) - limit + 1} more lines in {result.log}"]
    return f"\n{'=' * 30} {result.name} pass: failures {'=' * 30}\n" + "\n".join(picked)


def _run_logged(name: str, args: list[str], env: dict[str, str], log: Path, procs: list) -> PassResult:
    started = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        procs.append(proc)
        code = proc.wait()
    return PassResult(name, code, time.monotonic() - started, _last_line(log.read_text()), log)


def main() -> int:
    pytest_args = _env_list("PYTEST_ARGS")
    kafka_tests = _env_list("KAFKA_TESTS")
    delta_tests = _env_list("DELTA_TESTS")
    system_tests = _env_list("KAFKA_SYSTEM_TESTS")
    delta_jars = ROOT / os.environ.get("DELTA_JARS", ".state/jars/delta")  # an absolute path stays itself
    logs = ROOT / ".state" / "test-logs"
    logs.mkdir(parents=True, exist_ok=True)
    base_env = dict(os.environ)
    # the background passes must not write the same pytest cache as the foreground pass
    background_args = [PYTEST, "-p", "no:cacheprovider", *pytest_args]

    results: list[PassResult] = []
    notes: list[str] = []
    procs: list[subprocess.Popen] = []

    def lane(name: str, run: Callable[[], None]) -> threading.Thread:
        def guarded() -> None:
            try:
                run()
            except BaseException as exc:  # a pass that could not even start is a failed pass
                results.append(PassResult(f"background lane {name}", 1, 0.0, f"could not run: {exc!r}"))

        return threading.Thread(target=guarded, name=f"lane-{name}", daemon=True)

    kafka_env = {**base_env, **_env_pairs("KAFKA_PASS_ENV")}

    def lane_a() -> None:
        results.append(
            _run_logged(
                "Apache Kafka", [*background_args, *kafka_tests], kafka_env, logs / "kafka.log", procs
            )
        )

    def lane_b() -> None:
        if (delta_jars / ".resolved").is_file():
            env = {**base_env, "STREAMHOUSE_DELTA_JARS_AVAILABLE": "false"}
            results.append(
                _run_logged(
                    "Parquet + deltalake", [*background_args, *delta_tests], env, logs / "delta.log", procs
                )
            )
        else:
            reason = (delta_jars / "UNAVAILABLE").read_text().splitlines()[:1] if delta_jars.exists() else []
            notes.append(
                f"native Delta not tested: {reason[0] if reason else 'the delta-spark jars are not resolved'}"
            )
        if system_tests:
            results.append(
                _run_logged(
                    "Kafka system tests",
                    [*background_args, *system_tests],
                    kafka_env,
                    logs / "system.log",
                    procs,
                )
            )

    print(
        f"beside the main pass: the Apache Kafka pass ({' '.join(kafka_tests)}); the Parquet pass "
        f"({' '.join(delta_tests)}) then the Kafka system tests ({' '.join(system_tests) or 'none'}): "
        f"logs in {logs.relative_to(ROOT)}/, printed after the main pass",
        flush=True,
    )
    workers = [lane("A", lane_a), lane("B", lane_b)]
    for worker in workers:
        worker.start()
    started = time.monotonic()
    try:
        main_code = subprocess.call([PYTEST, *pytest_args, *_env_list("MAIN_TEST_ARGS")], cwd=ROOT)
        main_seconds = time.monotonic() - started
        for worker in workers:
            worker.join()
    except KeyboardInterrupt:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        raise
    for result in results:
        if result.log is None:
            continue
        print(f"\n{'=' * 30} {result.name} pass ({result.log.relative_to(ROOT)}) {'=' * 30}", flush=True)
        sys.stdout.write(result.log.read_text())
    print(f"\n{'=' * 30} summary {'=' * 30}")
    print(f"  main (embedded broker): exit {main_code}, {main_seconds / 60:.1f} min")
    for result in results:
        print(f"  {result.name}: exit {result.code}, {result.seconds / 60:.1f} min: {result.last_line}")
    for note in notes:
        print(f"  {note}")
    for result in results:
        if result.code != 0 and result.log is not None:
            print(_failure_digest(result))
    failed = main_code != 0 or any(r.code != 0 for r in results)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

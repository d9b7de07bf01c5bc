"""``make test``'s three pytest passes, the Apache Kafka and Parquet passes beside the main one.

1. the whole suite on the embedded broker (native Delta where ``make install`` resolved the jars), in
   the foreground with its output as usual (``MAIN_TEST_ARGS`` added: deselections of tests that run
   in the Kafka pass only);
2. ``KAFKA_TESTS`` on Apache Kafka (``KAFKA_PASS_ENV``), then
3. ``DELTA_TESTS`` on Parquet + deltalake (only when the jars were resolved, else the reason is printed),
   one after the other in the background, each into a log under ``.state/test-logs`` that is printed
   when the main pass is done.

Why beside: the Kafka pass spends most of its time waiting (consumer session timeouts after kill -9,
broker restarts, give-up timers): run alone it kept 2 cores about half busy for ~10 minutes. In
sequence the passes took ~33 minutes, over the 20 the suite is meant to take on 2 cores.

The exit status is non-zero when any pass fails; a summary names each pass with its last line and time.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
import time
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
    lines = [line.strip("= ") for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


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
    delta_jars = ROOT / os.environ.get("DELTA_JARS", ".state/jars/delta")  # an absolute path stays itself
    logs = ROOT / ".state" / "test-logs"
    logs.mkdir(parents=True, exist_ok=True)
    base_env = dict(os.environ)
    # the background passes must not write the same pytest cache as the foreground pass
    background_args = [PYTEST, "-p", "no:cacheprovider", *pytest_args]

    results: list[PassResult] = []
    notes: list[str] = []
    procs: list[subprocess.Popen] = []

    def background() -> None:
        try:
            _background()
        except BaseException as exc:  # a pass that could not even start is a failed pass
            results.append(PassResult("background passes", 1, 0.0, f"could not run: {exc!r}"))

    def _background() -> None:
        env = {**base_env, **_env_pairs("KAFKA_PASS_ENV")}
        results.append(
            _run_logged("Apache Kafka", [*background_args, *kafka_tests], env, logs / "kafka.log", procs)
        )
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

    print(
        f"Apache Kafka pass ({' '.join(kafka_tests)}) and Parquet pass ({' '.join(delta_tests)}) run in the "
        f"background: logs in {logs.relative_to(ROOT)}/, printed after the main pass",
        flush=True,
    )
    worker = threading.Thread(target=background, daemon=True)
    worker.start()
    started = time.monotonic()
    try:
        main_code = subprocess.call([PYTEST, *pytest_args, *_env_list("MAIN_TEST_ARGS")], cwd=ROOT)
        main_seconds = time.monotonic() - started
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

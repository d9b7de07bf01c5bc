"""Ctrl-C during `streamhouse demo` (issue 46 item 6): one line saying where it stopped and that running it
again continues, exit status 130, no traceback; and the next run does continue.

It printed ~140 lines (Dagster's step and run failures for ``DagsterExecutionInterruptedError`` with
their stack traces, PySpark's and SQLAlchemy's) and exited 1. The demo runs here as a user runs it, a
subprocess with its own state dir (its own local broker, lake and Dagster instance); the signal goes to
its whole process group, as a terminal's Ctrl-C does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _env(tmp_path: Path) -> dict[str, str]:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    for shared in ("jars", "jvm"):  # what `make install` put under the project's .state
        if (ROOT / ".state" / shared).exists() and not (state / shared).exists():
            (state / shared).symlink_to(ROOT / ".state" / shared)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMHOUSE_")}
    env.update(
        {
            "STREAMHOUSE_STATE_DIR": str(state),
            "STREAMHOUSE_LAKE_ROOT": str(tmp_path / "lake"),
            "STREAMHOUSE_DAGSTER_HOME": str(tmp_path / "dagster"),
            "STREAMHOUSE_BROKER_KIND": "tansu",
            "PATH": f"{BIN}:{env.get('PATH', '')}",
        }
    )
    return env


def _demo_interrupted_at(env: dict[str, str], marker: str) -> tuple[list[str], int]:
    """Run the demo, send SIGINT to its process group once a line containing ``marker`` appears."""
    proc = subprocess.Popen(
        [str(BIN / "streamhouse"), "demo", "--events", "500"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    lines, sent = [], False
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if not sent and marker in line:
            os.killpg(proc.pid, signal.SIGINT)
            sent = True
    code = proc.wait(timeout=300)
    assert sent, "\n".join(lines)
    return lines, code


def _assert_one_line(lines: list[str], code: int) -> str:
    out = "\n".join(lines)
    assert code == 130, out
    assert "Traceback" not in out and "DagsterExecutionInterruptedError" not in out, out
    assert "Fatal Python error" not in out, out
    # issue 46 item 7: the demo's noise (the first Kafka line, the JVM's start-up warning, librdkafka)
    assert "(no prefix)" not in out and "incubator" not in out, out
    assert "METADATAUPDATE" not in out and "GETPID" not in out, out
    last = [line for line in lines if line.strip()][-1]
    assert last.startswith(("interrupted during '", "interrupted after '")), out
    assert last.endswith(
        "run `make demo` (`streamhouse demo`) again to continue (bronze resumes from the "
        "offsets it committed)"
    ), out
    return last


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.timeout(900)
def test_ctrl_c_prints_one_line_and_the_next_run_continues(tmp_path: Path) -> None:
    env = _env(tmp_path)
    try:
        # During the first Dagster run (the step that printed the four tracebacks).
        lines, code = _demo_interrupted_at(env, "… ingest_job: Kafka → bronze")
        last = _assert_one_line(lines, code)
        assert "during 'ingest_job: Kafka → bronze (and the silver dimension tables)'" in last, last

        # The next run continues: the lock is free, the lake agrees with the topics (nothing half
        # written), and it goes on to produce its batch; interrupted again while producing or later.
        lines, code = _demo_interrupted_at(env, "… producing ")
        out = "\n".join(lines)
        assert "another demo" not in out and "read further than the topics" not in out, out
        assert any(line.startswith("  checking the lake against the topics: ") for line in lines), out
        _assert_one_line(lines, code)
    finally:
        subprocess.run(
            [str(BIN / "streamhouse"), "broker", "stop"], cwd=ROOT, env=env, capture_output=True, timeout=60
        )

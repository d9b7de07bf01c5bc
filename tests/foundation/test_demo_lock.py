"""Issue 25 item 8: a second `make demo` while one runs failed only after 202 s, at its edge step. The
demo takes a lock under state_dir: a second one fails at once naming the running one; the lock is
released at exit, and one left by a killed demo is detected as stale and taken over."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestration.demo_lock import LOCK_FILE, DemoRunningError, demo_lock

ROOT = Path(__file__).resolve().parents[2]


def test_a_second_demo_fails_at_once_naming_the_running_one(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "STREAMHOUSE_STATE_DIR": str(state),
        "STREAMHOUSE_LAKE_ROOT": str(tmp_path / "lake"),
        "STREAMHOUSE_DAGSTER_HOME": str(tmp_path / "dagster"),
        "STREAMHOUSE_BOOTSTRAP_SERVERS": "127.0.0.1:1",
    }
    with demo_lock(state) as path:  # this test process is "the running demo"
        held = json.loads(path.read_text())
        assert held["pid"] == os.getpid()
        started = time.monotonic()
        second = subprocess.run(
            [sys.executable, "-m", "orchestration.cli.main", "demo", "--events", "10"],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
        )
        assert time.monotonic() - started < 30, "refused at start, not at the edge step"
        assert second.returncode == 2, second.stderr
        line = f"error: another streamhouse demo is running (pid {os.getpid()}, since {held['since']})"
        assert second.stderr.startswith(line), second.stderr
        with pytest.raises(DemoRunningError), demo_lock(state):  # the same in-process
            pass
    assert not (state / LOCK_FILE).exists()  # released at exit


def test_a_lock_left_by_a_killed_demo_is_stale(tmp_path: Path) -> None:
    state = tmp_path / "state"
    killed = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path;"
            "from orchestration.demo_lock import demo_lock\n"
            "with demo_lock(Path(sys.argv[1])):\n    print('locked', flush=True); time.sleep(60)",
            str(state),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert killed.stdout is not None and killed.stdout.readline().strip() == "locked"
    with pytest.raises(DemoRunningError, match=f"pid {killed.pid}"), demo_lock(state):
        pass
    killed.kill()  # no clean-up: the file stays, with a dead pid
    killed.wait()
    assert json.loads((state / LOCK_FILE).read_text())["pid"] == killed.pid
    with demo_lock(state) as path:
        assert json.loads(path.read_text())["pid"] == os.getpid()
    assert not path.exists()

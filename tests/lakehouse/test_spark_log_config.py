"""A Spark session starts without the log4j noise it printed on every run (the demo printed 7 Spark/log4j
lines before doing anything), while Spark's real warnings still show."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOISE = (
    "Using Spark's default log4j profile",
    "resolves to a loopback address",
    "Set SPARK_LOCAL_IP",
    "Setting default log level",
    "To adjust logging level",
    "NativeCodeLoader",
)


@pytest.mark.slow
@pytest.mark.spark
def test_a_session_starts_quietly_and_keeps_real_warnings(tmp_path: Path) -> None:
    # its own JVM: the suite's shared session was started long before, and logging is set up at start
    script = textwrap.dedent(
        """
        from assets.spark.session import build_spark_session

        spark = build_spark_session("local[1]", extra_conf={"spark.ui.showConsoleProgress": "false"})
        assert spark.range(3).count() == 3
        jvm = spark.sparkContext._jvm
        jvm.org.apache.logging.log4j.LogManager.getLogger("org.apache.spark.Probe").warn("a real warning")
        spark.stop()
        """
    )
    # without SPARK_LOCAL_IP: the session sets it for a local master
    env = {k: v for k, v in os.environ.items() if k != "SPARK_LOCAL_IP"} | {"TMPDIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    assert [line for line in lines if any(n in line for n in NOISE)] == []
    assert any(line.endswith("WARN Probe: a real warning") for line in lines), lines

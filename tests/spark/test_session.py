"""Spark session factory: configuration of the shared session and Java checks before the JVM starts."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from assets.spark.errors import JavaNotFoundError, JavaVersionError, SparkSetupError
from assets.spark.session import build_spark_session, check_java, parse_java_major


@pytest.mark.parametrize(
    ("output", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('java version "1.8.0_392"', 8),
        ('openjdk version "21" 2023-09-19', 21),
        ('openjdk version "11.0.2-ea"', 11),
        ("garbage", None),
    ],
)
def test_parse_java_major(output: str, major: int | None) -> None:
    assert parse_java_major(output) == major


def _fake_java_home(tmp_path: Path, version: str) -> Path:
    home = tmp_path / f"jdk-{version}"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2020-01-01' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return home


def test_old_java_is_rejected_before_the_jvm_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(_fake_java_home(tmp_path, "11.0.2")))
    with pytest.raises(JavaVersionError, match=r"Java 17\+.*JAVA_HOME"):
        build_spark_session(master="local[1]")


def test_java_home_without_java_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    with pytest.raises(JavaNotFoundError, match="JAVA_HOME"):
        check_java()


def test_missing_java_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SparkSetupError, match="Install a JDK"):
        check_java()


def test_installed_java_is_accepted() -> None:
    assert check_java() >= 17


@pytest.mark.spark
def test_shared_session_configuration(spark) -> None:
    conf = spark.conf
    assert conf.get("spark.sql.session.timeZone") == "UTC"
    assert conf.get("spark.sql.parquet.outputTimestampType") == "TIMESTAMP_MICROS"
    assert conf.get("spark.ui.enabled") == "false"
    assert int(conf.get("spark.sql.shuffle.partitions")) <= 4
    assert spark.sparkContext.master == "local[2]"
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    assert os.environ["PYSPARK_DRIVER_PYTHON"] == sys.executable
    # the local data sockets of collect() & co. outlast a busy machine (Spark's own 15 s did not in CI)
    assert spark.sparkContext.getConf().get("spark.python.authenticate.socketTimeout") == "120s"
    assert os.environ["SPARK_AUTH_SOCKET_TIMEOUT"] == "120"


@pytest.mark.spark
def test_python_workers_run_this_interpreter(spark) -> None:
    def executable(_: object) -> str:
        import sys as worker_sys

        return worker_sys.executable

    assert set(spark.sparkContext.parallelize([1, 2], 2).map(executable).collect()) == {sys.executable}


@pytest.mark.spark
def test_a_new_session_prints_no_jvm_incubator_warning_and_keeps_the_jvms_other_output() -> None:
    """Issue 46 item 7: every Spark start (the demo's first lines) printed `WARNING: Using incubator
    modules: jdk.incubator.vector`, from the `--add-modules` Spark's launcher always passes. A fresh
    process, as a user's: the warning is gone and what else the JVM writes to stderr still arrives."""
    import subprocess

    script = (
        "from assets.spark.session import build_spark_session\n"
        "spark = build_spark_session('local[1]')\n"
        "assert spark.range(3).count() == 3\n"
        "spark._jvm.java.lang.System.err.println('jvm-stderr-marker')\n"
        "spark._jvm.java.lang.System.err.flush()\n"
        "spark.stop()\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "jvm-stderr-marker" in done.stderr
    assert "incubator" not in done.stderr + done.stdout

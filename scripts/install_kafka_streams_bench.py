#!/usr/bin/env python3
"""Build the Kafka Streams benchmark peer (jvm/kafka-streams-bench) into
``<state_dir>/jvm/kafka-streams-bench``.

Part of ``make install``; standard library only, like ``install_kafka_streams_tests.py``. Maven resolves
``kafka-streams`` 4.1.1, Jackson and an SLF4J binding into ``libs/`` (``install_kafka_broker.install``,
``maven-dependency-plugin:3.8.1:copy-dependencies``), then ``javac --release 17`` compiles the one source
file against them into ``classes/``. Compiling with ``javac`` instead of a Maven build means no compiler
plugin to fetch and no jar to shade: the harness runs ``java -cp 'classes:libs/*'``.

``build.json`` records ``{"status": "ok", ...}`` or ``{"status": "unavailable", "reason": ...}``; a success
for the same pom and source is reused at once; a failure warns, exits 0 (``--require``: 1), and the
benchmark reports Kafka Streams as "not available" with the recorded reason.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import install_kafka_broker as resolver

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ROOT / "jvm" / "kafka-streams-bench"
POM = PROJECT / "pom.xml"
SOURCES = PROJECT / "src" / "main" / "java"
SUBDIR = Path("jvm") / "kafka-streams-bench"
BUILD_RECORD = "build.json"
MAIN_CLASS = "io.streamhouse.bench.KafkaStreamsBench"
_STREAMS_JAR = re.compile(r"kafka-streams-(\d[^-]*)\.jar")


def streams_jar_version(libs: Path) -> str | None:
    """The version of the kafka-streams jar in ``libs`` (None: not there)."""
    for jar in libs.glob("kafka-streams-*.jar"):
        match = _STREAMS_JAR.fullmatch(jar.name)
        if match:
            return match.group(1)
    return None


def default_dest() -> Path:
    return resolver._state_dir() / SUBDIR


def _sources_sha() -> str:
    h = hashlib.sha256(POM.read_bytes())
    for src in sorted(SOURCES.rglob("*.java")):
        h.update(src.relative_to(PROJECT).as_posix().encode())
        h.update(src.read_bytes())
    return h.hexdigest()


def read_record(dest: Path | None = None) -> dict:
    try:
        return json.loads(((dest or default_dest()) / BUILD_RECORD).read_text())
    except (OSError, ValueError):
        return {}


def _write(dest: Path, rec: dict) -> dict:
    dest.mkdir(parents=True, exist_ok=True)
    (dest / BUILD_RECORD).write_text(json.dumps(rec, indent=2) + "\n")
    return rec


def build(dest: Path, *, force: bool = False) -> dict:
    """Resolve the jars and compile; returns the build record (cached when pom and source are unchanged)."""
    sha = _sources_sha()
    rec = read_record(dest)
    classes = dest / "classes"
    if (
        not force
        and rec.get("status") == "ok"
        and rec.get("sources_sha256") == sha
        and (classes / (MAIN_CLASS.replace(".", "/") + ".class")).exists()
    ):
        return {**rec, "cached": True}

    def unavailable(reason: str) -> dict:
        return _write(dest, {"status": "unavailable", "reason": reason, "sources_sha256": sha,
                             "attempted_at": time.time()})  # fmt: skip

    original = resolver._kafka_jar_version
    resolver._kafka_jar_version = streams_jar_version  # "is it there": the kafka-streams jar
    try:
        deps = resolver.install(POM, dest, force=force)
    finally:
        resolver._kafka_jar_version = original
    if deps.get("status") != "ok":
        reason = str(deps.get("reason")).replace("Apache Kafka jars", "Kafka Streams jars")
        return unavailable(reason)
    javac = shutil.which("javac")
    if not javac:
        return unavailable("`javac` (JDK 17+) is not on PATH; install a JDK and rerun `make install`")
    tmp = dest / "classes.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    srcs = [str(s) for s in sorted(SOURCES.rglob("*.java"))]
    cmd = [javac, "--release", "17", "-nowarn", "-cp", str(dest / "libs" / "*"), "-d", str(tmp), *srcs]
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return unavailable(f"javac could not run: {exc}")
    if proc.returncode != 0:
        return unavailable(f"javac failed (exit {proc.returncode}): {(proc.stdout + proc.stderr)[-800:]}")
    shutil.rmtree(classes, ignore_errors=True)
    tmp.rename(classes)
    return _write(dest, {
        "status": "ok", "kafka_streams_version": deps.get("version"), "sources_sha256": sha,
        "main_class": MAIN_CLASS, "jars": deps.get("jars"),
        "compile_seconds": round(time.monotonic() - started, 1),
        "built_at": time.time(),
    })  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=None, help=f"default: <state_dir>/{SUBDIR}")
    parser.add_argument("--force", action="store_true", help="resolve and compile again even if up to date")
    parser.add_argument("--require", action="store_true", help="exit 1 if the peer cannot be built")
    args = parser.parse_args(argv)
    dest = args.dest or default_dest()
    rec = build(dest, force=args.force)
    if rec["status"] == "ok":
        if not rec.get("cached"):
            print(f"Kafka Streams {rec['kafka_streams_version']} benchmark peer built in {dest}")
        return 0
    print(f"warning: Kafka Streams benchmark peer unavailable ({rec['reason']}); `make bench` reports it as "
          "not available.", file=sys.stderr)  # fmt: skip
    return 1 if args.require else 0


if __name__ == "__main__":
    sys.exit(main())

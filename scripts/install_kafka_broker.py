#!/usr/bin/env python3
"""Resolve the pinned Apache Kafka server (jvm/kafka/pom.xml) with Maven into ``<state_dir>/jvm/kafka``.

Part of ``make install``. Standard library only (it may run before the venv exists). What it does:

* ``<dest>/install.json`` records the outcome: ``{"status": "ok", "version": ..., "pom_sha256": ...}``
  or ``{"status": "unavailable", "reason": ...}``. Streamhouse reads it to start the broker
  (``edge/broker/kafka.py``) or to say precisely why it cannot (tests on Apache Kafka then skip).
* A recorded success for the same pom is reused at once (a second ``make install`` costs nothing).
* Maven is invoked as ``mvn -q -B -f jvm/kafka/pom.xml <maven-dependency-plugin>:copy-dependencies`` (its own
  repositories and settings; this script names no host). If ``mvn`` is missing or fails (Maven Central
  unreachable), the reason is recorded, a warning printed, and the exit status is still 0 so the rest
  of the install goes on; ``--require`` makes that an error instead. A failed attempt is retried on the
  next run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_POM = ROOT / "jvm" / "kafka" / "pom.xml"
RECORD = "install.json"
#: Pinned here (not left to Maven's defaults) so every machine runs the same resolver.
DEPENDENCY_PLUGIN = "3.8.1"


def _state_dir() -> Path:
    return Path(os.environ.get("STREAMHOUSE_STATE_DIR") or ROOT / ".state")


def _write_record(dest: Path, record: dict) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    tmp = dest / (RECORD + ".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(dest / RECORD)


def _read_record(dest: Path) -> dict:
    try:
        return json.loads((dest / RECORD).read_text())
    except (OSError, ValueError):
        return {}


def _kafka_jar_version(libs: Path) -> str | None:
    for jar in libs.glob("kafka_2.13-*.jar"):
        match = re.fullmatch(r"kafka_2\.13-(.+)\.jar", jar.name)
        if match:
            return match.group(1)
    return None


def install(pom: Path, dest: Path, *, force: bool = False) -> dict:
    pom_sha = hashlib.sha256(pom.read_bytes()).hexdigest()
    record = _read_record(dest)
    libs = dest / "libs"
    if (
        not force
        and record.get("status") == "ok"
        and record.get("pom_sha256") == pom_sha
        and _kafka_jar_version(libs) == record.get("version")
    ):
        return {**record, "cached": True}

    def unavailable(reason: str) -> dict:
        rec = {"status": "unavailable", "reason": reason, "pom_sha256": pom_sha, "attempted_at": time.time()}
        _write_record(dest, rec)
        return rec

    mvn = os.environ.get("MVN") or shutil.which("mvn")
    if not mvn:
        return unavailable("Maven (`mvn`) is not on PATH; install Maven 3.8+ and rerun `make install`")
    tmp = dest / f"libs.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [
        mvn,
        "-q",
        "-B",
        "-Dstyle.color=never",
        "-f",
        str(pom),
        f"org.apache.maven.plugins:maven-dependency-plugin:{DEPENDENCY_PLUGIN}:copy-dependencies",
        f"-DoutputDirectory={tmp}",
        "-DincludeScope=runtime",
    ]
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        return unavailable(f"`{' '.join(cmd[:6])}` could not run: {exc}")
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        out = [
            re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in (proc.stdout + proc.stderr).splitlines()
        ]
        generic = ("re-run Maven", "Re-run Maven", "[ERROR] [Help", "For more information", "full debug")
        errors = [
            line
            for line in out
            if line.startswith("[ERROR]") and line != "[ERROR]" and not any(g in line for g in generic)
        ]
        tail = " | ".join(errors[:2] or out[-3:])[:800]
        return unavailable(f"Maven could not resolve the Apache Kafka jars (exit {proc.returncode}): {tail}")
    version = _kafka_jar_version(tmp)
    if version is None:
        shutil.rmtree(tmp, ignore_errors=True)
        return unavailable(f"Maven succeeded but no kafka_2.13 jar is in {tmp}")
    old = dest / "libs.old"
    shutil.rmtree(old, ignore_errors=True)
    if libs.exists():
        libs.rename(old)
    tmp.rename(libs)
    shutil.rmtree(old, ignore_errors=True)
    rec = {
        "status": "ok",
        "version": version,
        "pom_sha256": pom_sha,
        "jars": len(list(libs.glob("*.jar"))),
        "resolve_seconds": round(time.monotonic() - started, 1),
        "installed_at": time.time(),
    }
    _write_record(dest, rec)
    return rec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pom", type=Path, default=DEFAULT_POM)
    parser.add_argument("--dest", type=Path, default=None, help="default: <state_dir>/jvm/kafka")
    parser.add_argument("--force", action="store_true", help="resolve again even if up to date")
    parser.add_argument("--require", action="store_true", help="exit 1 if the jars cannot be resolved")
    args = parser.parse_args(argv)
    dest = args.dest or _state_dir() / "jvm" / "kafka"
    rec = install(args.pom, dest, force=args.force)
    if rec["status"] == "ok":
        if not rec.get("cached"):
            print(
                f"Apache Kafka {rec['version']} broker: {rec['jars']} jars in {dest / 'libs'} "
                f"({rec['resolve_seconds']}s)"
            )
        return 0
    print(
        f"warning: Apache Kafka broker unavailable ({rec['reason']}); `broker_kind: kafka` and the tests "
        "on Apache Kafka will skip. The embedded broker is unaffected.",
        file=sys.stderr,
    )
    return 1 if args.require else 0


if __name__ == "__main__":
    sys.exit(main())

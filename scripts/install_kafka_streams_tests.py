#!/usr/bin/env python3
"""Resolve Kafka Streams' system-test drivers (jvm/kafka-streams-tests/pom.xml) with Maven into
``<state_dir>/jvm/kafka-streams-tests``.

Part of ``make install``; standard library only, like ``install_kafka_broker.py`` whose resolver it
reuses: ``mvn -q -B -f jvm/kafka-streams-tests/pom.xml maven-dependency-plugin:3.8.1:copy-dependencies``
copies ``org.apache.kafka:kafka-streams:4.1.1:test`` (the drivers ``StreamsSmokeTest`` /
``StreamsEosTest``), ``kafka-streams``, ``kafka-clients`` (and its ``test`` jar), their dependencies and a
Log4j 2 binding into ``libs/``. ``install.json`` records ``{"status": "ok", ...}`` or
``{"status": "unavailable", "reason": ...}``; a recorded success for the same pom is reused at once; a
failure warns, exits 0 (``--require``: 1) and the system tests skip with the recorded reason.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import install_kafka_broker as resolver

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_POM = ROOT / "jvm" / "kafka-streams-tests" / "pom.xml"
SUBDIR = Path("jvm") / "kafka-streams-tests"
_TEST_JAR = re.compile(r"kafka-streams-(.+)-test\.jar")


def test_jar_version(libs: Path) -> str | None:
    """The version of the kafka-streams test jar in ``libs`` (None: not there)."""
    for jar in libs.glob("kafka-streams-*-test.jar"):
        match = _TEST_JAR.fullmatch(jar.name)
        if match:
            return match.group(1)
    return None


def install(pom: Path, dest: Path, *, force: bool = False) -> dict:
    """``install_kafka_broker.install`` with this jar set's own "is it there" check."""
    original = resolver._kafka_jar_version
    resolver._kafka_jar_version = test_jar_version  # the record's version is the test jar's
    try:
        return resolver.install(pom, dest, force=force)
    finally:
        resolver._kafka_jar_version = original


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pom", type=Path, default=DEFAULT_POM)
    parser.add_argument(
        "--dest", type=Path, default=None, help="default: <state_dir>/jvm/kafka-streams-tests"
    )
    parser.add_argument("--force", action="store_true", help="resolve again even if up to date")
    parser.add_argument("--require", action="store_true", help="exit 1 if the jars cannot be resolved")
    args = parser.parse_args(argv)
    dest = args.dest or resolver._state_dir() / SUBDIR
    rec = install(args.pom, dest, force=args.force)
    if rec["status"] == "ok":
        if not rec.get("cached"):
            print(
                f"Kafka Streams {rec['version']} system-test drivers: {rec['jars']} jars in {dest / 'libs'} "
                f"({rec['resolve_seconds']}s)"
            )
        return 0
    reason = str(rec["reason"]).replace("Apache Kafka jars", "Kafka Streams test jars")
    print(
        f"warning: Kafka Streams system-test drivers unavailable ({reason}); `make system-test` and "
        "tests/system will skip.",
        file=sys.stderr,
    )
    return 1 if args.require else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Check what `make` needs before it creates the virtualenv: Python >= 3.11 and Java 17+ (for Spark).

Standard library only, because it runs before anything is installed. Prints one line per problem
saying what to install, and exits 1 if anything is missing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys


def java_major() -> tuple[int | None, str]:
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not os.path.exists(java):
        where = f"JAVA_HOME={java_home} has no bin/java" if java_home else "no `java` on PATH"
        return None, where
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"`{java} -version` failed: {exc}"
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        return None, f"cannot parse `{java} -version` output: {out.strip()[:120]}"
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0" style
        major = int(match.group(2))
    return major, java


def main() -> int:
    problems = []
    if sys.version_info < (3, 11):  # noqa: UP036 (this script must run on old Pythons to say so)
        problems.append(
            f"Python >= 3.11 is required, found {sys.version.split()[0]} ({sys.executable}); "
            "install Python 3.11+ or run `make PYTHON=/path/to/python3.11`"
        )
    major, detail = java_major()
    if major is None:
        problems.append(f"Java 17+ is required for Spark: {detail}; install a JDK 17 (e.g. openjdk-17-jdk)")
    elif major < 17:
        problems.append(f"Java 17+ is required for Spark, found Java {major} at {detail}; install a JDK 17+")
    for problem in problems:
        print(f"prerequisite missing: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Resolve the delta-spark jars from Maven Central into ``<state dir>/jars/delta`` (part of `make install`).

Runs ``mvn dependency:copy-dependencies`` on ``jvm/delta/pom.xml``. Cached: ``.resolved`` records a
hash of the pom, and a second run with the same pom and the jars present does nothing (no JVM start).
If Maven is missing or cannot reach Maven Central, the reason is written to ``UNAVAILABLE`` in that
directory, a one-line notice is printed and the script exits 0: everything works on the Parquet +
deltalake path without the jars, and the tests that need native Delta skip with that reason. The next
`make install` tries again.

Standard library only. ``--state-dir`` defaults to ``$STREAMHOUSE_STATE_DIR`` or ``.state``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POM = ROOT / "jvm" / "delta" / "pom.xml"
STAMP = ".resolved"
UNAVAILABLE = "UNAVAILABLE"
TIMEOUT_S = 600


def pom_hash() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def record_unavailable(out: Path, reason: str) -> int:
    shutil.rmtree(out, ignore_errors=True)  # jars of an older pom must not be mistaken for these
    out.mkdir(parents=True, exist_ok=True)
    (out / UNAVAILABLE).write_text(reason.strip() + "\n")
    print(f"delta-spark jars not installed ({reason.strip().splitlines()[0]}); Spark uses the Parquet + "
          "deltalake path and native-Delta tests skip. Reason recorded in "
          f"{out / UNAVAILABLE}", file=sys.stderr)  # fmt: skip
    return 0


def resolve(out: Path, force: bool = False) -> int:
    stamp = out / STAMP
    digest = pom_hash()
    if not force and stamp.is_file() and stamp.read_text().strip() == digest and any(out.glob("*.jar")):
        return 0
    mvn = shutil.which("mvn")
    if mvn is None:
        return record_unavailable(out, "Maven (`mvn`) is not on PATH")
    staging = out.with_name(out.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    cmd = [
        mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(POM), "dependency:copy-dependencies",
        "-DincludeScope=runtime", f"-DoutputDirectory={staging}",
    ]  # fmt: skip
    print("resolving delta-spark jars with Maven (jvm/delta/pom.xml) ...", file=sys.stderr)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        return record_unavailable(out, f"`mvn dependency:copy-dependencies` did not finish: {exc}")
    jars = sorted(staging.glob("*.jar"))
    if proc.returncode != 0 or not jars:
        shutil.rmtree(staging, ignore_errors=True)
        output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
        errors = [ln for ln in output.splitlines() if "ERROR" in ln and ln.strip() != "[ERROR]"][:3]
        detail = "\n".join(errors) or output.strip()[-600:]
        return record_unavailable(out, f"Maven could not resolve the delta-spark jars\n{detail}")
    # Swap in the new set whole: a Spark started meanwhile never sees half a directory.
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    (out / STAMP).write_text(digest + "\n")
    print(f"delta-spark jars: {len(jars)} jars in {out}", file=sys.stderr)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_state = os.environ.get("STREAMHOUSE_STATE_DIR") or ".state"
    parser.add_argument("--state-dir", default=default_state)
    parser.add_argument("--force", action="store_true", help="resolve again even if cached")
    args = parser.parse_args()
    state = Path(args.state_dir)
    if not state.is_absolute():
        state = ROOT / state
    return resolve(state / "jars" / "delta", force=args.force)


if __name__ == "__main__":
    sys.exit(main())

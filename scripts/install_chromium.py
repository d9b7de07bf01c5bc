#!/usr/bin/env python3
"""Install Debian's ``chromium`` for the Dagster UI test (tests/ui) when it is missing.

The UI test drives a real headless browser through Playwright for Python, pointed at the system's
``/usr/bin/chromium`` rather than a browser build Playwright would download (only package registries
are reachable from CI). ``make install`` runs this before the tests, so a fresh machine gets the browser
from its own package manager: ``apt-get install -y chromium``, non-interactively, as root or via sudo.

Standard library only (it runs before and independently of the virtualenv). Never fatal: without
chromium only the UI test skips, saying why, so this prints what went wrong and exits 0 unless
``--strict`` is given (then 1).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

#: Where Debian's package puts the browser; the UI test looks here first.
CHROMIUM = "/usr/bin/chromium"
PACKAGE = "chromium"


def find_chromium() -> str | None:
    """The chromium executable: Debian's, else one on PATH."""
    if os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _apt_prefix() -> list[str] | None:
    """``[]`` as root, ``["sudo", "-n"]`` with password-less sudo, else None (we cannot install)."""
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
        return ["sudo", "-n"]
    return None


def _run(cmd: list[str]) -> tuple[bool, str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
    return proc.returncode == 0, tail


def install() -> tuple[str | None, str]:
    """(path to chromium or None, what happened)."""
    found = find_chromium()
    if found:
        return found, f"chromium present: {found}"
    if not shutil.which("apt-get"):
        return None, "no apt-get on this machine: install Chromium so that `chromium` is on PATH"
    prefix = _apt_prefix()
    if prefix is None:
        return None, f"not root and no password-less sudo: run `sudo apt-get install -y {PACKAGE}` yourself"
    print(f"installing {PACKAGE} with apt-get for the Dagster UI test (a few minutes the first time)...")
    ok, out = _run([*prefix, "apt-get", "install", "-y", "--no-install-recommends", PACKAGE])
    if not ok:
        # A fresh machine has no package lists yet: fetch them once and retry.
        updated, update_out = _run([*prefix, "apt-get", "update"])
        if not updated:
            return None, f"`apt-get update` failed:\n{update_out}"
        ok, out = _run([*prefix, "apt-get", "install", "-y", "--no-install-recommends", PACKAGE])
    if not ok:
        return None, f"`apt-get install -y {PACKAGE}` failed:\n{out}"
    found = find_chromium()
    if not found:
        return None, f"`apt-get install {PACKAGE}` succeeded but no chromium executable is at {CHROMIUM}"
    return found, f"installed chromium: {found}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="exit 1 when chromium cannot be installed")
    args = parser.parse_args(argv)
    path, message = install()
    if path:
        print(message)
        return 0
    print(f"chromium not installed ({message}); the Dagster UI test (tests/ui) will skip", file=sys.stderr)
    return 1 if args.strict else 0


if __name__ == "__main__":
    sys.exit(main())

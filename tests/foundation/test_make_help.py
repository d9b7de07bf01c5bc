"""``make help``, the list a newcomer reads first: one row per documented target, descriptions aligned.

Issue 46 item 9: the name column was a fixed 14 characters, so ``bench-lakehouse`` (15) pushed its
description one column right of every other row."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_help_lists_every_documented_target_with_aligned_descriptions() -> None:
    out = subprocess.run(
        ["make", "--no-print-directory", "help"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    rows = [line for line in out.splitlines() if line.strip()]
    documented = re.findall(r"^([a-z-]+):.*## ", (ROOT / "Makefile").read_text(), re.MULTILINE)
    names = [row.split()[1] for row in rows]
    assert names == documented
    longest = max(len(n) for n in names)
    assert "bench-lakehouse" in names and longest >= len("bench-lakehouse")
    starts = {row.index(row.split()[2], len("  make ") + len(row.split()[1])) for row in rows}
    assert starts == {len("  make ") + longest + 2}, out

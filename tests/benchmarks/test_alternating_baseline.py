"""``alternating.py --baseline``: the older checkout's children really start there, and the baseline is
named by its commit (no broker: the timing itself is the benchmark's, not a test's)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.alternating import _baseline
from benchmarks.common import ROOT, children_started_in, start_child


def _cwd_of_child(tmp_path: Path, name: str) -> str:
    run = start_child([sys.executable, "-c", "import os; print(os.getcwd())"], tmp_path / f"{name}.log")
    assert run.popen.wait(timeout=60) == 0
    return (tmp_path / f"{name}.log").read_text().strip()


def test_children_start_in_the_baseline_checkout_only_inside_the_block(tmp_path: Path) -> None:
    other = tmp_path / "other-checkout"
    other.mkdir()
    with children_started_in(other):
        assert _cwd_of_child(tmp_path, "inside") == str(other.resolve())
    assert _cwd_of_child(tmp_path, "after") == str(ROOT)


def _git(repo: Path, *args: str) -> str:
    env_args = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    return subprocess.run(["git", *env_args, "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


def test_the_baseline_is_named_by_its_commit_and_refused_when_it_is_no_checkout(tmp_path: Path) -> None:
    ap = argparse.ArgumentParser()
    with pytest.raises(SystemExit):
        _baseline(tmp_path, ap)  # no edge/ and benchmarks/ there
    repo = tmp_path / "repo"
    for package in ("edge", "benchmarks"):
        (repo / package).mkdir(parents=True)
        (repo / package / "__init__.py").write_text("")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "baseline")
    short = _git(repo, "rev-parse", "--short", "HEAD")
    assert _baseline(repo, ap) == (repo.resolve(), short)
    (repo / "edge" / "__init__.py").write_text("CHANGED = True\n")
    assert _baseline(repo, ap) == (repo.resolve(), f"{short}+dirty")


def test_the_summary_gives_medians_of_correct_runs_and_both_ratios() -> None:
    """The rate ratio and the per-CPU-second ratio from each system's medians; a failed run counts in
    neither."""
    from benchmarks.alternating import PAIRS, _summary

    pair = PAIRS["enrichment"]

    def run(system: str, rate: float, cpu: float, status: str = "ok") -> dict:
        return {"system": system, "status": status, "events_per_s": rate, "cpu_s_per_1m_events": cpu}

    runs = [
        run(pair.peer, 100_000, 14.0),
        run(pair.peer, 120_000, 13.0),
        run(pair.peer, 130_000, 12.0),
        run(pair.edge, 180_000, 6.0),
        run(pair.edge, 150_000, 6.5),
        run(pair.edge, 999_999, 0.1, status="failed"),
    ]
    summary = _summary(runs, pair)
    assert summary[pair.peer] == {"runs": 3, "events_per_s_median": 120_000, "cpu_s_per_1m_median": 13.0}
    assert summary[pair.edge] == {"runs": 2, "events_per_s_median": 165_000, "cpu_s_per_1m_median": 6.25}
    assert summary["edge_vs_peer"] == 1.375
    assert summary["edge_vs_peer_per_cpu_s"] == 2.08

"""Kafka's Streams system tests, short form: Kafka's own drivers judge the edge ports of their clients.

``scripts/system_test.py`` (``make system-test``) runs the full matrix; the CI runs these four: the
smoke test with one instance under each guarantee, the EOS test with an instance killed -9 in the
middle of its transactions (then ``StreamsEosTest verify``), and a client with one aggregate off by one,
which Kafka's driver must call a FAILURE -- without it a test that can only pass proves nothing.
Every scenario starts its own Apache Kafka broker (the drivers hard-code topics and group ids); all
skip, saying why, where ``make install`` could not resolve the drivers or the broker.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_runner() -> ModuleType:
    """``scripts/system_test.py`` (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("system_test_runner", ROOT / "scripts" / "system_test.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


runner = _load_runner()


@pytest.fixture(scope="module")
def drivers() -> None:
    reason = runner.drivers_unavailable_reason()
    if reason:
        pytest.skip(reason)


def _explain(result: object) -> str:
    r = result
    logs = "\n".join(
        f"--- {p.relative_to(r.workdir)} (tail)\n"
        + "\n".join(p.read_text(errors="replace").splitlines()[-15:])
        for p in sorted(r.workdir.glob("*/std*.log"))
        if p.stat().st_size
    )
    return f"{r.scenario.name}: driver said {r.verdict} ({r.detail})\n{logs}"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["smoke-alos-1", "smoke-eos-1", "eos-kill"])
def test_kafka_driver_passes_the_port(name: str, drivers: None, tmp_path: Path) -> None:
    result = runner.run_scenario(runner.SCENARIOS[name], tmp_path / name, log=lambda _line: None)
    assert result.accepted, _explain(result)


@pytest.mark.slow
def test_kafka_driver_fails_a_sabotaged_port(drivers: None, tmp_path: Path) -> None:
    """Every ``sum`` one less than the truth: the smoke driver must print FAILURE, naming the topic."""
    result = runner.run_scenario(runner.SCENARIOS["smoke-alos-sabotaged"], tmp_path / "sabotaged")
    assert result.verdict == "FAILURE", _explain(result)
    assert "sum fail" in result.detail, _explain(result)


def test_report_section_replaces_only_its_own_rows(tmp_path: Path) -> None:
    """``--report`` rewrites its section's rows for the scenarios run and keeps everything else."""
    report = tmp_path / "reliability.md"
    report.write_text("# Reliability\n\nintro\n\n## Hardening\n\nkept\n")
    sc = runner.SCENARIOS
    first = runner.Result(sc["smoke-alos-1"], "SUCCESS", True, 10.0, "", tmp_path)
    runner.write_report(report, [first, runner.Result(sc["eos-1"], "FAILURE", False, 5.0, "x", tmp_path)])
    runner.write_report(
        report, [runner.Result(sc["eos-1"], "ALL-RECORDS-DELIVERED", True, 6.0, "", tmp_path)]
    )
    text = report.read_text()
    assert text.startswith("# Reliability\n\nintro\n\n## Hardening\n\nkept\n")
    assert text.count(f"## {runner.SECTION}") == 1
    rows = [line for line in text.splitlines() if line.startswith(("| smoke-", "| eos-"))]
    assert len(rows) == 2
    assert "| SUCCESS | yes | 10.0 |" in rows[0]
    assert "| ALL-RECORDS-DELIVERED | yes | 6.0 |" in rows[1]

"""Imports only go down: ``orchestration/`` → ``assets/`` + ``quality/`` → ``edge/``.

``edge/`` must deploy without Spark or Dagster and ``assets/`` must take its resources rather than
build them from settings, so a stray upward import (often a convenience import of a resource or a
partition definition) is a layering bug even when it happens to work. Read from the source (AST),
including imports inside functions, so nothing has to be imported to check it. The partition start
moved below ``orchestration/`` with the partitions, so its resolution is tested here as well.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: package -> top-level packages it must never import
FORBIDDEN = {
    "edge": {"assets", "quality", "orchestration"},
    "assets": {"orchestration", "quality"},
    "quality": {"orchestration"},
}


def _parse(source: str, filename: str, attempts: int = 3) -> ast.Module:
    """``ast.parse``, again when CPython 3.11 raises its spurious "AST constructor recursion depth
    mismatch" (CPython issue 106905, fixed in 3.11.8 and 3.12.1): the depth counter is shared between
    threads, and a thread left by an earlier test (a Data Docs build, a Dagster daemon) may be
    compiling at the same moment. A real syntax error raises SyntaxError, never this."""
    for attempt in range(attempts):
        try:
            return ast.parse(source, filename=filename)
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc) or attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def imported_packages(path: Path) -> list[tuple[int, str]]:
    """(line, top-level package) of every absolute import in ``path``."""
    tree = _parse(path.read_text(), str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def violations(package: str) -> list[str]:
    forbidden = FORBIDDEN[package]
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, top in imported_packages(path):
            if top in forbidden:
                out.append(f"{path.relative_to(ROOT)}:{line} imports {top}")
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_only_go_down(package: str) -> None:
    assert (ROOT / package).is_dir()
    assert violations(package) == []


def test_the_scan_sees_upward_imports(tmp_path: Path) -> None:
    """The checker itself: module-level, aliased and function-local imports are all caught."""
    source = tmp_path / "bad.py"
    source.write_text(
        "import orchestration.settings as s\n"
        "from assets.delta import read_arrow\n"
        "def f():\n"
        "    from quality.checks import QUALITY_CHECKS\n"
        "from . import sibling\n"
    )
    assert [top for _, top in imported_packages(source)] == ["orchestration", "assets", "quality"]


def test_partitions_start_follows_the_settings_precedence(tmp_path: Path) -> None:
    """``assets.partitions`` reads ``partitions_start`` itself (it cannot import the settings), with
    the same precedence: environment, then the config file, then the default; a malformed value falls
    back to the default there and fails in the definitions, which compare it with the settings."""
    from assets.partitions import DEFAULT_PARTITION_START, configured_start

    config = tmp_path / "streamhouse.yaml"
    config.write_text("partitions_start: 2025-03-01\n")
    home = {"STREAMHOUSE_HOME": str(tmp_path / "nowhere")}
    assert configured_start({**home, "STREAMHOUSE_CONFIG": str(config)}) == "2025-03-01"
    env = {**home, "STREAMHOUSE_CONFIG": str(config), "STREAMHOUSE_PARTITIONS_START": "2024-12-31"}
    assert configured_start(env) == "2024-12-31"
    assert configured_start({"STREAMHOUSE_HOME": str(tmp_path)}) == "2025-03-01"  # the home's file
    assert configured_start(home) == DEFAULT_PARTITION_START
    assert configured_start({**home, "STREAMHOUSE_PARTITIONS_START": "June"}) == DEFAULT_PARTITION_START


def test_definitions_refuse_settings_that_disagree_with_the_partitions() -> None:
    from datetime import date

    from assets.partitions import PARTITION_START
    from orchestration.definitions import build_definitions
    from orchestration.settings import Settings, SettingsError

    other = date.fromisoformat(PARTITION_START).replace(year=2020)
    with pytest.raises(SettingsError, match="partitions_start is 2020"):
        build_definitions(Settings(partitions_start=other))

"""One locator for where things are (``edge.home``), used by the settings, the partitions and the lake
catalog: the three must agree on the project home, the settings file and relative paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from edge.home import config_path, config_value, project_home, resolve_path

ROOT = Path(__file__).resolve().parents[2]


def test_the_home_is_the_env_then_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert project_home({}) == ROOT
    assert project_home({"STREAMHOUSE_HOME": str(tmp_path / "h")}) == tmp_path / "h"
    assert resolve_path("lake", {"STREAMHOUSE_HOME": str(tmp_path / "h")}) == tmp_path / "h" / "lake"
    assert resolve_path("/abs/lake", {}) == Path("/abs/lake")


def test_the_settings_file_is_the_env_then_the_working_directory_then_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    env = {"STREAMHOUSE_HOME": str(home)}
    assert config_path(env) is None
    (home / "streamhouse.yaml").write_text("lake_root: from-home\n")
    assert config_path(env) == home / "streamhouse.yaml"
    (cwd / "streamhouse.yaml").write_text("lake_root: from-cwd\n")
    assert config_path(env) == Path("streamhouse.yaml")
    assert config_value("lake_root", env) == "from-cwd"
    named = {**env, "STREAMHOUSE_CONFIG": str(tmp_path / "missing.yaml")}
    assert config_path(named) == tmp_path / "missing.yaml"  # named: the settings report it missing
    assert config_value("lake_root", named) is None
    assert config_value("lake_root", {**env, "STREAMHOUSE_LAKE_ROOT": "from-env"}) == "from-env"
    (cwd / "streamhouse.yaml").write_text("lake_root: [unclosed\n")
    assert config_value("lake_root", env) is None  # lenient: the settings report a malformed file


def test_default_lake_root_honours_the_settings_file_and_the_project_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``lake_root`` in the home's streamhouse.yaml, relative to the home, whatever the working
    directory; the same path the settings resolve."""
    from assets.lake.catalog import default_lake_root
    from orchestration.settings import load_settings

    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for name in ("STREAMHOUSE_CONFIG", "STREAMHOUSE_LAKE_ROOT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STREAMHOUSE_HOME", str(home))
    assert default_lake_root() == str(home / ".state" / "lake")  # the default, relative to the home
    (home / "streamhouse.yaml").write_text("lake_root: data/lake\n")
    assert default_lake_root() == str(home / "data" / "lake")
    assert load_settings({"STREAMHOUSE_HOME": str(home)}).lake_root == home / "data" / "lake"
    monkeypatch.setenv("STREAMHOUSE_LAKE_ROOT", "env/lake")
    assert default_lake_root() == str(home / "env" / "lake")
    monkeypatch.setenv("STREAMHOUSE_LAKE_ROOT", "s3://bucket/lake")
    assert default_lake_root() == "s3://bucket/lake"


def test_partitions_start_reads_the_same_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from assets.partitions import configured_start

    monkeypatch.chdir(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (home / "streamhouse.yaml").write_text("partitions_start: 2025-03-01\n")
    assert configured_start({"STREAMHOUSE_HOME": str(home)}) == "2025-03-01"

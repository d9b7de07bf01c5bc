"""`streamhouse ui` (`make dagster`): the instance it opens is the one the demo writes to.

The UI itself is driven in tests/ui; here the command's choices are checked without starting it:
``os.execve`` is intercepted, so what would run (binary, arguments, ``DAGSTER_HOME``) is inspected.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from orchestration.cli import ui as ui_module
from orchestration.cli.main import main


class Executed(Exception):
    pass


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def fake_execve(path: str, args: list[str], env: dict[str, str]) -> None:
        seen.update(path=path, args=args, env=env)
        raise Executed

    monkeypatch.setattr(ui_module.os, "execve", fake_execve)
    monkeypatch.setattr(ui_module.os, "chdir", lambda path: seen.setdefault("cwd", Path(path)))
    return seen


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ui_opens_the_dagster_home_setting(
    captured: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "instance"
    monkeypatch.setenv("STREAMHOUSE_DAGSTER_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "someone-elses"))
    monkeypatch.setenv("STREAMHOUSE_BOOTSTRAP_SERVERS", "127.0.0.1:1")  # a cluster is set: no local broker
    port = _free_port()
    with pytest.raises(Executed):
        main(["ui", "--port", str(port)])
    assert captured["env"]["DAGSTER_HOME"] == str(home)
    assert home.is_dir()
    assert captured["args"][1:] == ["dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)]
    assert Path(captured["path"]).name == "dagster"
    assert (captured["cwd"] / "workspace.yaml").is_file()


def test_ui_port_in_use_is_a_clear_error(
    captured: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STREAMHOUSE_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(SystemExit) as exit_info:
            main(["ui", "--port", str(port)])
    assert exit_info.value.code == 2
    assert f"port {port} on 127.0.0.1 is in use" in capsys.readouterr().err
    assert "args" not in captured

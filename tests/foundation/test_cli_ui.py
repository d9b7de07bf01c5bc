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


def test_ui_start_up_is_quiet(
    captured: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 25 item 7: `make dagster` printed 8 BetaWarnings, a SupersessionWarning, a dagster.yaml
    warning and a telemetry banner. The instance gets a dagster.yaml with telemetry off, `dagster dev`
    runs with a filter for its own supersession warning, and the code location imports without a beta
    warning for the parameters we use knowingly."""
    import subprocess
    import sys

    home = tmp_path / "instance"
    monkeypatch.setenv("STREAMHOUSE_DAGSTER_HOME", str(home))
    monkeypatch.setenv("STREAMHOUSE_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    with pytest.raises(Executed):
        main(["ui", "--port", str(_free_port())])
    config = home / "dagster.yaml"
    assert config.is_file()
    env = captured["env"]
    assert "ignore:Function `dev_command` is superseded" in env["PYTHONWARNINGS"].split(",")

    code = (
        "import logging, sys\n"
        "from dagster import DagsterInstance\n"
        "instance = DagsterInstance.get()\n"
        "print('telemetry', instance.telemetry_enabled)\n"
        "import orchestration.definitions\n"
        # the warning `dagster dev` itself would print, filtered as its PYTHONWARNINGS says
        "import warnings\n"
        "from dagster import SupersessionWarning\n"
        "warnings.warn('Function `dev_command` is superseded and its usage is discouraged.', "
        "SupersessionWarning)\n"
    )
    child = {**env, "DAGSTER_HOME": str(home), "PYTHONWARNINGS": "default," + env["PYTHONWARNINGS"]}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=child,
        cwd=captured["cwd"],
        timeout=180,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "telemetry False" in out.stdout
    for noise in ("BetaWarning", "SupersessionWarning", "No dagster instance configuration", "Telemetry"):
        assert noise not in out.stderr, out.stderr[-3000:]

    # The user's own dagster.yaml is never rewritten.
    config.write_text("telemetry:\n  enabled: true\n")
    with pytest.raises(Executed):
        main(["ui", "--port", str(_free_port())])
    assert config.read_text() == "telemetry:\n  enabled: true\n"

"""``streamhouse ui``: the Dagster UI (webserver + daemon) on the project's instance, lake and broker.

``make dagster`` used to pick ``DAGSTER_HOME`` or ``.state/dagster`` by itself while ``streamhouse demo``
followed the ``dagster_home`` setting: with the setting changed, the UI opened an empty instance and the
demo's runs were elsewhere. Both now read the same setting, and the local broker is started when no
cluster is configured, so the lag sensor has topics to watch.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import click

from edge.broker.embedded import broker_status, port_is_free, start_recorded_broker
from edge.errors import StreamhouseError
from orchestration.instance import ensure_instance_dir
from orchestration.settings import load_settings, project_home

#: ``dagster dev`` warns on every start that it is superseded by ``dg dev`` (a separate package we do
#: not install); a message filter (no category import: PYTHONWARNINGS would import dagster at start-up
#: in every Python process the UI spawns, Spark's workers included) silences exactly that line.
QUIET_WARNINGS = "ignore:Function `dev_command` is superseded"


def dagster_command(host: str, port: int) -> list[str]:
    """``dagster dev`` from the environment this command runs in (the project's ``.venv``)."""
    local = Path(sys.executable).parent / "dagster"
    binary = str(local) if local.exists() else shutil.which("dagster")
    if binary is None:
        raise StreamhouseError("the `dagster` command is not installed here: run `make install` first")
    return [binary, "dev", "-w", "workspace.yaml", "-h", host, "-p", str(port)]


@click.command("ui")
@click.option("--port", type=click.IntRange(1, 65535), default=3000, show_default=True, help="webserver port")
@click.option("--host", default="127.0.0.1", show_default=True, help="interface the webserver listens on")
def ui(port: int, host: str) -> None:
    """Open the Dagster UI: `dagster dev` on the dagster_home instance (where `streamhouse demo` writes).

    The webserver and the daemon run in the foreground until Ctrl-C; the lag sensor, declarative
    automation and the nightly maintenance are on. Without bootstrap_servers the recorded local broker
    is started if it is not running.
    """
    settings = load_settings()
    home = project_home()
    if not (home / "workspace.yaml").is_file():
        raise StreamhouseError(
            f"no workspace.yaml in the project home {home}: run it in a Streamhouse checkout"
        )
    if not port_is_free(host, port):
        raise StreamhouseError(f"port {port} on {host} is in use: choose another with --port")
    if not settings.bootstrap_servers:
        info, alive = broker_status(settings.state_dir)
        if not alive:
            if warning := settings.broker_fallback_warning():
                click.echo(warning, err=True)
            info = start_recorded_broker(settings.state_dir, None, kind=settings.broker_kind.value)
            click.echo(f"started the local {info.kind} broker at {info.bootstrap_servers}")
    dagster_home = Path(settings.dagster_home)
    ensure_instance_dir(dagster_home)  # dagster.yaml with telemetry off: no warning, no banner
    click.echo(f"Dagster UI on http://{host}:{port} (instance {dagster_home}); Ctrl-C stops it")
    command = dagster_command(host, port)
    os.chdir(home)  # workspace.yaml names the code location relative to the checkout
    warnings = ",".join(w for w in (os.environ.get("PYTHONWARNINGS"), QUIET_WARNINGS) if w)
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home), "PYTHONWARNINGS": warnings}
    os.execve(command[0], command, env)

"""``streamhouse edge run MODULE:ATTR``: run one instance of an edge (Kafka Streams-style) app.

ATTR may be a Topology, a StreamsBuilder, or a zero-argument function returning either. Defaults come
from the platform settings (bootstrap servers, broker profile, Kafka client properties, state dir);
``-c key=value`` sets any runtime key (``num.standby.replicas=1``, ``commit.interval.ms=100``, ...).
SIGTERM/SIGINT shut the instance down gracefully (commit, close stores, leave the group).
Exit status: 0 after a requested shutdown, 1 when the app failed (also: the cluster was unreachable for
``cluster.unavailable.timeout.ms``, a source topic vanished, an internal topic has the wrong partition
count), 3 when a newer instance fenced it.
"""

from __future__ import annotations

import importlib
import logging
import sys
from pathlib import Path
from typing import Any

import click

from edge.errors import StreamhouseError


class AppLoadError(StreamhouseError):
    pass


def load_app_object(spec: str) -> Any:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise AppLoadError(f"expected MODULE:ATTR (e.g. myapp.wordcount:topology), got {spec!r}")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise AppLoadError(f"module {module_name!r} not found (is it on PYTHONPATH?)") from exc
        raise
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AppLoadError(f"module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def read_properties(path: Path) -> dict[str, str]:
    """A Java ``.properties`` file (``key=value``, ``key: value``, ``#`` comments, ``\\`` line
    continuations, ``\\uXXXX`` escapes) as Java's ``Properties.load`` reads it."""
    import javaproperties

    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")  # Properties.load(InputStream)'s encoding
    return {str(k): str(v) for k, v in javaproperties.loads(text).items()}


def _parse_overrides(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected key=value, got {item!r}", param_hint="-c/--config")
        out[key.strip()] = value.strip()
    return out


@click.group()
def edge() -> None:
    """Run edge stream-processing apps against Kafka."""


@edge.command()
@click.argument("app_spec", metavar="MODULE:ATTR")
@click.option("--application-id", help="Consumer group, internal topic prefix and state subdirectory.")
@click.option(
    "--bootstrap-servers", help="Kafka bootstrap servers (default: settings / the embedded broker)."
)
@click.option(
    "--state-dir",
    type=click.Path(path_type=Path),
    help="Local state directory (default: <state_dir>/streams).",
)
@click.option(
    "--guarantee", type=click.Choice(["at_least_once", "exactly_once_v2"]), help="processing.guarantee."
)
@click.option(
    "--server", help="host:port of this instance's query/metrics HTTP server (port 0 = any free port)."
)
@click.option(
    "--properties",
    "properties_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A Kafka Streams .properties file, taken as Kafka Streams takes it (options and -c win).",
)
@click.option(
    "-c", "--config", "overrides", multiple=True, help="Any runtime setting as key=value (repeatable)."
)
@click.option("--log-level", default="INFO", show_default=True)
def run(
    app_spec: str,
    application_id: str | None,
    bootstrap_servers: str | None,
    state_dir: Path | None,
    guarantee: str | None,
    server: str | None,
    properties_file: Path | None,
    overrides: tuple[str, ...],
    log_level: str,
) -> None:
    """Start one instance of the app MODULE:ATTR and run until SIGTERM/SIGINT.

    Settings, weakest first: the platform settings, --properties FILE, the options, -c key=value.
    Unprefixed client settings go to every client they fit, consumer./producer./admin./main.consumer./
    restore.consumer./global.consumer. ones to that client; settings the edge does not know are logged
    and ignored, as Kafka Streams does.
    """
    from edge.runtime import State, StreamsApp
    from edge.runtime.signals import install_shutdown_handlers
    from orchestration.settings import load_settings

    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s [%(process)d] %(message)s"
    )
    settings = load_settings()
    obj = load_app_object(app_spec)
    props = read_properties(properties_file) if properties_file else {}
    values: dict[str, Any] = {}
    servers = bootstrap_servers or props.pop("bootstrap.servers", None)
    values["bootstrap.servers"] = settings.kafka_client(servers).bootstrap_servers
    # no broker.profile unless given with -c: the runtime asks the cluster which tuning it needs
    if settings.kafka:
        values["kafka"] = dict(settings.kafka)
    values["state.dir"] = str(state_dir or props.pop("state.dir", None) or settings.state_dir / "streams")
    values.update(props)
    overrides_map = _parse_overrides(overrides)
    app_id = (
        application_id
        or overrides_map.get("application.id")
        or props.get("application.id")
        or getattr(obj, "application_id", None)
    )
    if not app_id:
        raise AppLoadError("--application-id is required (or set application.id with -c)")
    values["application.id"] = app_id
    if guarantee:
        values["processing.guarantee"] = guarantee
    if server:
        values["application.server"] = server
    values.update(overrides_map)
    app = StreamsApp(obj, values)
    app.start()

    install_shutdown_handlers(app)
    click.echo(
        f"edge app {app_id!r} instance {app.instance_id} running; queries and /metrics on "
        f"http://{app.advertised_server}",
        err=True,
    )
    while app.wait(0.5) not in (State.NOT_RUNNING, State.ERROR):
        pass
    app.close(30)
    if app.fenced:
        click.echo("this instance was fenced by a newer instance with the same transactional.id", err=True)
        sys.exit(3)
    if app.state is State.ERROR:
        if isinstance(app.error, StreamhouseError):
            # the reason in one line at the end (the log above has the details)
            click.echo(f"error: {app.error}", err=True)
        sys.exit(1)

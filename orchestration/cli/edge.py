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

import logging
import sys
from pathlib import Path
from typing import Any

import click

from edge.app_spec import AppLoadError, load_app_object


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
@click.option(
    "--workers",
    type=click.IntRange(1, 256),
    default=None,
    help="Stream workers of this instance, each a process (Kafka's num.stream.threads, which sets it too; "
    "default 1). Use one per core.",
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
    workers: int | None,
    log_level: str,
) -> None:
    """Start one instance of the app MODULE:ATTR and run until SIGTERM/SIGINT.

    Settings, weakest first: the platform settings, --properties FILE, the options, -c key=value.
    Unprefixed client settings go to every client they fit, consumer./producer./admin./main.consumer./
    restore.consumer./global.consumer. ones to that client; settings the edge does not know are logged
    and ignored, as Kafka Streams does.
    """
    from edge.runtime import StreamsApp
    from edge.runtime.instance import run_instance
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
    threads = values.pop("num.stream.threads", None)
    count = workers or _positive_int("num.stream.threads", threads) or 1
    if count > 1:
        sys.exit(_run_workers(app_spec, app_id, values, count, log_level))

    def announce(app: StreamsApp) -> None:
        click.echo(
            f"edge app {app_id!r} instance {app.instance_id} running; queries and /metrics on "
            f"http://{app.advertised_server}",
            err=True,
        )

    code = run_instance(obj, values, announce=announce)
    if code:
        sys.exit(code)


def _positive_int(key: str, value: Any) -> int | None:
    if value is None:
        return None
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number < 1:
        raise click.BadParameter(f"{key} must be a whole number >= 1, got {value!r}")
    return number


def _run_workers(app_spec: str, app_id: str, values: dict[str, Any], count: int, log_level: str) -> int:
    """Run the app as ``count`` worker processes behind this instance's address until SIGTERM/SIGINT."""
    import signal

    from edge.runtime.workers import StreamWorkers

    supervisor = StreamWorkers(app_spec, values, count, log_level=log_level)
    supervisor.start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: supervisor.request_shutdown())
    click.echo(
        f"edge app {app_id!r} running as {count} workers (pids "
        f"{', '.join(str(w.process.pid) for w in supervisor.workers)}); queries, /health and /metrics on "
        f"http://{supervisor.advertised_server}",
        err=True,
    )
    return supervisor.run()

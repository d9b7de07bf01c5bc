"""``streamhouse broker start|stop|status``: a local broker on 127.0.0.1 (embedded Tansu or Apache Kafka)."""

from __future__ import annotations

import time

import click

from edge.broker.embedded import (
    BrokerAlreadyRunningError,
    broker_status,
    start_recorded_broker,
    stop_recorded_broker,
)
from edge.broker.local import BrokerKind
from orchestration.settings import load_settings

KIND_NAMES = {"tansu": "embedded broker", "kafka": "Apache Kafka broker"}


@click.group()
def broker() -> None:
    """Run a local Kafka broker on 127.0.0.1: the embedded Tansu broker (default) or Apache Kafka.

    Tansu keeps data in memory only (stopping it discards every topic); Apache Kafka (--kind kafka or
    STREAMHOUSE_BROKER_KIND=kafka) keeps it under the state dir across restarts.
    """


@broker.command()
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="TCP port (default: a free one).")
@click.option(
    "--kind",
    type=click.Choice([k.value for k in BrokerKind]),
    default=None,
    help="tansu (embedded, in memory) or kafka (Apache Kafka, on disk); default: the broker_kind setting.",
)
def start(port: int | None, kind: str | None) -> None:
    """Start the broker in the background and record it under the state dir."""
    settings = load_settings()
    kind = kind or settings.broker_kind.value
    try:
        info = start_recorded_broker(settings.state_dir, port, kind=kind)
    except BrokerAlreadyRunningError as exc:
        click.echo(f"already running at {exc.info.bootstrap_servers} (pid {exc.info.pid}, {exc.info.kind})")
        return
    click.echo(f"{KIND_NAMES[info.kind]} running at {info.bootstrap_servers} (pid {info.pid})")
    click.echo(f"  export STREAMHOUSE_BOOTSTRAP_SERVERS={info.bootstrap_servers}")
    if info.kind == "kafka":
        click.echo("  export STREAMHOUSE_BROKER_KIND=kafka   # clients use Kafka's default settings")
        click.echo(f"  data: {info.data_dir}")
    click.echo(f"  log: {info.log_path}")


@broker.command()
def stop() -> None:
    """Stop the recorded broker (Tansu's in-memory data is discarded; Apache Kafka's is kept on disk)."""
    info = stop_recorded_broker(load_settings().state_dir)
    kept = f"; its data stays in {info.data_dir}" if info.kind == "kafka" else ""
    name = KIND_NAMES.get(info.kind, info.kind)
    click.echo(f"stopped the {name} at {info.bootstrap_servers} (pid {info.pid}){kept}")


@broker.command()
def status() -> None:
    """Show whether the recorded broker is running; exits 1 when it is not."""
    info, alive = broker_status(load_settings().state_dir)
    if info is None:
        click.echo("no local broker recorded (start one with `streamhouse broker start [--kind kafka]`)")
        raise SystemExit(1)
    if not alive:
        click.echo(f"recorded {info.kind} broker at {info.bootstrap_servers} (pid {info.pid}) is not running")
        raise SystemExit(1)
    uptime = time.time() - info.started_at
    where = f"{info.kind}, pid {info.pid}, up {uptime:.0f}s, log {info.log_path}"
    click.echo(f"running at {info.bootstrap_servers} ({where})")

"""``streamhouse broker start|stop|status``: the embedded Tansu broker for local work."""

from __future__ import annotations

import time

import click

from edge.broker.embedded import (
    BrokerAlreadyRunningError,
    broker_status,
    start_recorded_broker,
    stop_recorded_broker,
)
from orchestration.settings import load_settings


@click.group()
def broker() -> None:
    """Run the embedded Kafka-compatible broker (Tansu) on 127.0.0.1.

    It keeps data in memory only: stopping it discards every topic.
    """


@broker.command()
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="TCP port (default: a free one).")
def start(port: int | None) -> None:
    """Start the broker in the background and record it under the state dir."""
    settings = load_settings()
    try:
        info = start_recorded_broker(settings.state_dir, port)
    except BrokerAlreadyRunningError as exc:
        click.echo(f"already running at {exc.info.bootstrap_servers} (pid {exc.info.pid})")
        return
    click.echo(f"embedded broker running at {info.bootstrap_servers} (pid {info.pid})")
    click.echo(f"  export STREAMHOUSE_BOOTSTRAP_SERVERS={info.bootstrap_servers}")
    click.echo(f"  log: {info.log_path}")


@broker.command()
def stop() -> None:
    """Stop the recorded broker (its in-memory data is discarded)."""
    info = stop_recorded_broker(load_settings().state_dir)
    click.echo(f"stopped the embedded broker at {info.bootstrap_servers} (pid {info.pid})")


@broker.command()
def status() -> None:
    """Show whether the recorded broker is running; exits 1 when it is not."""
    info, alive = broker_status(load_settings().state_dir)
    if info is None:
        click.echo("no embedded broker recorded (start one with `streamhouse broker start`)")
        raise SystemExit(1)
    if not alive:
        click.echo(f"recorded broker at {info.bootstrap_servers} (pid {info.pid}) is not running")
        raise SystemExit(1)
    uptime = time.time() - info.started_at
    click.echo(f"running at {info.bootstrap_servers} (pid {info.pid}, up {uptime:.0f}s, log {info.log_path})")

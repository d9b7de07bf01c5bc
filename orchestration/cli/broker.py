"""``streamhouse broker start|stop|status``: a local broker on 127.0.0.1 (Apache Kafka or embedded Tansu).

The recorded broker is the one the demo and the UI share, so by default it is Apache Kafka (topics on
disk under the state dir, kept across stop/start) wherever `make install` resolved its jars; Tansu keeps
topics in memory only, so stopping it empties them and the next demo finds the lake ahead of its topics.
"""

from __future__ import annotations

import time

import click

from edge.broker.cluster import MAX_BROKERS, cluster_min_insync_replicas
from edge.broker.embedded import (
    BrokerAlreadyRunningError,
    BrokerError,
    BrokerInfo,
    broker_status,
    node_status,
    start_recorded_broker,
    stop_recorded_broker,
)
from edge.broker.local import BrokerKind
from orchestration.settings import load_settings

KIND_NAMES = {"tansu": "embedded broker", "kafka": "Apache Kafka broker"}


class DifferentBrokerRunningError(BrokerError):
    """``broker start`` asked for another kind or size of broker than the recorded one that runs: starting
    nothing and exiting 0 would leave the user on a broker they did not ask for (``error:``, exit 2)."""


def _describe(kind: str, brokers: int) -> str:
    if brokers > 1:
        return f"an Apache Kafka cluster of {brokers} nodes"
    return "a single Apache Kafka broker" if kind == "kafka" else "the embedded Tansu broker"


def _pids(info: BrokerInfo) -> str:
    return f"pids {', '.join(str(p) for p in info.pids)}" if info.nodes else f"pid {info.pid}"


def _stop_keeps(kind: str) -> str:
    return " (its data stays on disk)" if kind == "kafka" else " (its in-memory topics are lost)"


@click.group()
def broker() -> None:
    """Run a local Kafka broker on 127.0.0.1: Apache Kafka (default where installed) or embedded Tansu.

    Apache Kafka keeps topics under the state dir across stop/start; Tansu (--kind tansu or
    STREAMHOUSE_BROKER_KIND=tansu, and the fallback when Kafka's jars are missing) keeps them in memory
    only, so stopping it discards every topic.
    """


@broker.command()
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="TCP port (default: a free one).")
@click.option(
    "--kind",
    type=click.Choice([k.value for k in BrokerKind]),
    default=None,
    help="kafka (Apache Kafka, on disk) or tansu (embedded, in memory); default: the broker_kind setting "
    "(unset: kafka where `make install` resolved it, else tansu).",
)
@click.option(
    "--brokers",
    type=click.IntRange(1, MAX_BROKERS),
    default=1,
    show_default=True,
    help="Apache Kafka nodes (KRaft, each broker and controller, on consecutive ports from --port). "
    "From 3: replication factor N and min.insync.replicas 2, so one node may be down.",
)
def start(port: int | None, kind: str | None, brokers: int) -> None:
    """Start the broker (or a cluster of --brokers N) in the background and record it under the state dir."""
    settings = load_settings()
    if brokers > 1:
        if kind == "tansu":
            raise click.UsageError(f"--brokers {brokers} needs Apache Kafka; Tansu runs a single node")
        kind = "kafka"
    if kind is None and (warning := settings.broker_fallback_warning()):
        click.echo(warning, err=True)
    kind = kind or settings.broker_kind.value
    try:
        info = start_recorded_broker(settings.state_dir, port, kind=kind, brokers=brokers)
    except BrokerAlreadyRunningError as exc:
        running = exc.info
        if running.kind != kind or len(running.nodes or (None,)) != brokers:
            raise DifferentBrokerRunningError(
                f"{_describe(running.kind, len(running.nodes or (None,)))} is already running at "
                f"{running.bootstrap_servers} ({_pids(running)}), not {_describe(kind, brokers)} as asked; "
                f"stop it first with `streamhouse broker stop`{_stop_keeps(running.kind)} and start again"
            ) from None
        click.echo(f"already running at {running.bootstrap_servers} ({_pids(running)}, {running.kind})")
        return
    if info.nodes:
        click.echo(
            f"Apache Kafka cluster of {len(info.nodes)} nodes running at {info.bootstrap_servers} "
            f"(replication factor {len(info.nodes)}, min.insync.replicas "
            f"{cluster_min_insync_replicas(len(info.nodes))})"
        )
        for node in info.nodes:
            click.echo(f"  node {node['node_id']}: {info.host}:{node['port']} (pid {node['pid']})")
    else:
        click.echo(f"{KIND_NAMES[info.kind]} running at {info.bootstrap_servers} (pid {info.pid})")
    click.echo(f"  export STREAMHOUSE_BOOTSTRAP_SERVERS={info.bootstrap_servers}")
    if info.kind != settings.broker_kind.value:
        # other commands check the recorded broker against broker_kind and pick the client settings by it
        click.echo(f"  export STREAMHOUSE_BROKER_KIND={info.kind}   # not the broker_kind setting")
    if info.kind == "kafka":
        click.echo(f"  data: {info.data_dir} (kept across stop/start)")
    click.echo(f"  log: {info.log_path}")


@broker.command()
def stop() -> None:
    """Stop the recorded broker (Apache Kafka's data is kept on disk; Tansu's in-memory topics are lost)."""
    info = stop_recorded_broker(load_settings().state_dir)
    kept = (
        f"; its data stays in {info.data_dir}"
        if info.kind == "kafka"
        else "; its topics were in memory only and are gone"
    )
    name = KIND_NAMES.get(info.kind, info.kind)
    if info.nodes:
        pids = ", ".join(str(pid) for pid in info.pids)
        name = f"Apache Kafka cluster of {len(info.nodes)} nodes"
        click.echo(f"stopped the {name} at {info.bootstrap_servers} (pids {pids}){kept}")
        return
    click.echo(f"stopped the {name} at {info.bootstrap_servers} (pid {info.pid}){kept}")


@broker.command()
def status() -> None:
    """Show whether the recorded broker (every node of a cluster) is running; exits 1 when none is."""
    info, alive = broker_status(load_settings().state_dir)
    if info is None:
        click.echo("no local broker recorded (start one with `streamhouse broker start [--kind kafka]`)")
        raise SystemExit(1)
    if info.nodes:
        nodes = node_status(info)
        up = sum(1 for _node, node_up in nodes if node_up)
        state = "running" if up == len(nodes) else ("degraded" if up else "not running")
        uptime = time.time() - info.started_at
        click.echo(
            f"Apache Kafka cluster {state} at {info.bootstrap_servers}: {up} of {len(nodes)} nodes up"
            + (f", up {uptime:.0f}s" if up else "")
        )
        for node, node_up in nodes:
            word = "up" if node_up else "DOWN"
            click.echo(
                f"  node {node['node_id']}: {info.host}:{node['port']} {word} "
                f"(pid {node['pid']}, log {node['log_path']})"
            )
        if not up:
            raise SystemExit(1)
        return
    if not alive:
        click.echo(f"recorded {info.kind} broker at {info.bootstrap_servers} (pid {info.pid}) is not running")
        raise SystemExit(1)
    uptime = time.time() - info.started_at
    where = f"{info.kind}, pid {info.pid}, up {uptime:.0f}s, log {info.log_path}"
    click.echo(f"running at {info.bootstrap_servers} ({where})")

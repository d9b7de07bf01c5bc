"""``streamhouse replay lake|edge``: reprocess after a logic change or bad input.

``replay lake`` rebuilds chosen lake tables and everything downstream of them as new Delta versions
(``orchestration.replay.lake``; the Dagster ``replay_job`` takes the same config). ``replay edge``
resets an edge app as Kafka's streams application reset tool does (``edge.tools.reset``) and, with
``--run``, runs it again. Both print their plan first; ``--dry-run`` stops there and changes nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from orchestration.cli.render import echo_json, print_rich, rich_table


@click.group()
def replay() -> None:
    """Reprocess: rebuild lake tables and their downstream, or reset and rerun an edge app."""


# -------------------------------------------------------------------------------------------- lake
@replay.command("lake")
@click.argument("tables", nargs=-1, required=True, metavar="TABLE...")
@click.option(
    "--from", "from_date", metavar="DATE", help="First day to rebuild (default: every day present)."
)
@click.option("--to", "to_date", metavar="DATE", help="Last day to rebuild (default: every day present).")
@click.option("--as-of-version", type=int, metavar="N", help="Read the chosen tables' input as of version N.")
@click.option(
    "--as-of-timestamp",
    metavar="TS",
    help="Read the chosen tables' inputs as of a time (ISO-8601 or epoch ms).",
)
@click.option(
    "--input", "input_table", metavar="TABLE", help="The input the as-of applies to (when there are several)."
)
@click.option("--no-checks", is_flag=True, help="Do not run the rebuilt tables' quality checks.")
@click.option("--dry-run", is_flag=True, help="Print the plan (tables, days, versions) and change nothing.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def lake(
    tables: tuple[str, ...],
    from_date: str | None,
    to_date: str | None,
    as_of_version: int | None,
    as_of_timestamp: str | None,
    input_table: str | None,
    no_checks: bool,
    dry_run: bool,
    fmt: str,
) -> None:
    """Rebuild TABLE... (silver/orders, gold.click_sessions) and every table downstream.

    Every selected day is recomputed from the inputs with the current logic and replaced in one
    commit per table; the previous versions stay readable (streamhouse sql --as-of V). Without
    --from/--to: every day the tables and their inputs hold.
    """
    from dagster import DagsterInstance

    from orchestration.definitions import build_definitions
    from orchestration.pipeline import QUIET_RUN_CONFIG
    from orchestration.replay.job import ReplayConfig, plan_from_config
    from orchestration.replay.lake import run_lake_replay
    from orchestration.resources import build_resources
    from orchestration.settings import load_settings

    config = ReplayConfig(
        tables=list(tables),
        from_date=from_date,
        to_date=to_date,
        as_of_version=as_of_version,
        as_of_timestamp=as_of_timestamp,
        input_table=input_table,
        run_checks=not no_checks,
        dry_run=dry_run,
    )
    settings = load_settings()
    lake_root = str(settings.lake_root)
    defs = build_definitions(settings)
    plan = plan_from_config(config, defs, lake_root)
    if not dry_run:
        click.echo(
            f"replaying {len(plan.steps)} step(s) over {len(plan.days)} day(s) from {plan.source}", err=True
        )
        run_lake_replay(
            plan,
            defs,
            resources=build_resources(settings),
            lake_root=lake_root,
            instance=DagsterInstance.ephemeral(),
            run_config=QUIET_RUN_CONFIG,
            checks=config.run_checks,
            progress=lambda msg: click.echo(msg, err=True),
        )
    if fmt == "json":
        echo_json(
            {
                "dry_run": dry_run,
                "source": plan.source,
                "days": plan.days,
                "tables": [
                    dict(zip(["table", "why", "days", "reads", "version"], row, strict=True))
                    for row in plan.rows()
                ],
            }
        )
        return
    title = f"{'plan (dry run, nothing written)' if dry_run else 'replayed'} — from {plan.source}"
    print_rich(rich_table(title, ["table", "why", "days", "reads", "version"], plan.rows()))


# -------------------------------------------------------------------------------------------- edge
@replay.command("edge")
@click.argument("app_spec", metavar="MODULE:ATTR")
@click.option("--application-id", help="The app's application.id (default: the app's own).")
@click.option("--to-earliest", is_flag=True, help="Rewind every input partition to its first record.")
@click.option(
    "--to-offset",
    "to_offsets",
    multiple=True,
    metavar="[TOPIC:]P:O",
    help="Set partition P (of TOPIC) to offset O; repeatable; unlisted partitions keep their offset.",
)
@click.option(
    "--to-datetime",
    metavar="TS",
    help="First record at or after a time (ISO-8601, naive = UTC, or epoch ms).",
)
@click.option("--input-topic", "input_topics", multiple=True, help="Another input topic to rewind.")
@click.option(
    "--intermediate-topic",
    "intermediate_topics",
    multiple=True,
    help="A topic the app writes and reads back (through()): skipped to its end, as in Kafka's tool.",
)
@click.option(
    "--bootstrap-servers", help="Kafka bootstrap servers (default: settings / the embedded broker)."
)
@click.option(
    "--state-dir", type=click.Path(path_type=Path), help="The app's state.dir (default: <state_dir>/streams)."
)
@click.option("--dry-run", is_flag=True, help="Print the plan (offsets, topics, state) and change nothing.")
@click.option("--run", "run_after", is_flag=True, help="Run the app after the reset (as `edge run`).")
@click.option(
    "-c", "--config", "overrides", multiple=True, help="With --run: any runtime setting as key=value."
)
@click.pass_context
def edge(
    ctx: click.Context,
    app_spec: str,
    application_id: str | None,
    to_earliest: bool,
    to_offsets: tuple[str, ...],
    to_datetime: str | None,
    input_topics: tuple[str, ...],
    intermediate_topics: tuple[str, ...],
    bootstrap_servers: str | None,
    state_dir: Path | None,
    dry_run: bool,
    run_after: bool,
    overrides: tuple[str, ...],
) -> None:
    """Reset the edge app MODULE:ATTR for reprocessing, as kafka-streams-application-reset does.

    Refuses while the app's consumer group has active members. Then: commits the input offsets
    (earliest, explicit, or the first record at/after a time, found by reading the partitions),
    deletes the app's internal topics (changelogs, repartition, <app>-instances; never user topics)
    and its local state directory. With --run, starts the app again.
    """
    from edge.runtime.app import resolve_topology
    from edge.tools.reset import ResetTarget, apply_reset, parse_offsets, plan_reset, topology_topics
    from orchestration.cli.edge import AppLoadError, load_app_object, run
    from orchestration.replay.lake import parse_timestamp
    from orchestration.settings import load_settings

    chosen = sum([to_earliest, bool(to_offsets), to_datetime is not None])
    if chosen != 1:
        raise click.UsageError("give exactly one of --to-earliest, --to-offset, --to-datetime")
    if dry_run and run_after:
        raise click.UsageError("--dry-run and --run exclude each other")
    settings = load_settings()
    client = settings.kafka_client(bootstrap_servers)
    obj = load_app_object(app_spec)
    app_id = application_id or getattr(obj, "application_id", None)
    if not app_id:
        raise AppLoadError("--application-id is required (the app does not name its application.id)")
    topology = resolve_topology(obj)
    inputs, _ = topology_topics(topology, app_id)
    target: ResetTarget
    if to_earliest:
        target = ResetTarget.earliest()
    elif to_offsets:
        target = ResetTarget.at_offsets(parse_offsets(to_offsets, [*inputs, *input_topics]))
    else:
        assert to_datetime is not None
        target = ResetTarget.at_timestamp(parse_timestamp(to_datetime))
    states = state_dir or settings.state_dir / "streams"
    click.echo(f"reading the input partitions of {app_id!r} for {target.describe()} ...", err=True)
    plan = plan_reset(
        client,
        app_id,
        target,
        topology=topology,
        input_topics=input_topics,
        intermediate_topics=intermediate_topics,
        state_dir=states,
    )
    rows: list[tuple[Any, ...]] = [
        ("offset", f"{p.topic}[{p.partition}]", "-" if p.current is None else p.current, p.new, p.reason)
        for p in plan.partitions
    ]
    rows += [("delete topic", t, "", "", "internal") for t in plan.internal_topics]
    if plan.state_dir is not None:
        what = "delete state" if plan.state_dir_exists else "state (absent)"
        rows.append((what, str(plan.state_dir), "", "", "local"))
    title = (
        f"{'reset plan (dry run, nothing changed)' if dry_run else 'reset'} of {app_id!r} "
        f"(group {plan.group_state}) to {target.describe()}"
    )
    if dry_run:
        print_rich(rich_table(title, ["action", "what", "current", "new", "why"], rows))
        return
    apply_reset(client, plan)
    print_rich(rich_table(title, ["action", "what", "current", "new", "why"], rows))
    if run_after:
        sys.stdout.flush()
        ctx.invoke(
            run,
            app_spec=app_spec,
            application_id=app_id,
            bootstrap_servers=bootstrap_servers,
            state_dir=state_dir,
            overrides=overrides,
        )

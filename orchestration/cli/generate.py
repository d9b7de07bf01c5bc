"""``streamhouse generate``: more sample events to the pipeline's topics, to watch it react.

After ``make demo`` the topics and the lake exist; this sends further orders and clicks (with late,
malformed and duplicate records mixed in, ``assets.sample_data.LIVE_*``) to the same topics, at a
chosen rate, so a user sees the Kafka lag sensor start an ingest, the daily automation recompute the
affected days (late events re-open the day before), and the quarantine fill.
The Dagster job ``generate_sample_events`` does the same from the UI.
"""

from __future__ import annotations

import click

from orchestration.cli.topics import exit_1_when_records_are_lost
from orchestration.settings import load_settings


@click.command()
@click.option(
    "--events",
    type=click.IntRange(1, 10_000_000),
    default=1_000,
    show_default=True,
    help="How many events (orders and clicks, half each) to produce; bad records come on top.",
)
@click.option(
    "--rate",
    type=click.FloatRange(0, min_open=True),
    default=None,
    help="Records per second (default: as fast as possible).",
)
@click.option(
    "--bootstrap-servers", default=None, help="Kafka servers (default: settings / the recorded broker)."
)
@click.option("--topic-prefix", default="", help="Prefix of the topic names (default: none, as the demo).")
def generate(events: int, rate: float | None, bootstrap_servers: str | None, topic_prefix: str) -> None:
    """Produce EVENTS more sample events to the demo's topics, late and malformed ones included.

    Event times fall on yesterday (the latest complete daily partition); about 5% of the orders are
    late (6 h behind the stream), 2% of orders and clicks are malformed (broken JSON, missing or
    mistyped fields, impossible values) and 1% are exact duplicates. With the Dagster UI running
    (`make dagster`) its sensors start the ingest and the daily runs of the affected days. Exit 1, with
    the topic, partition and error, when a record is not delivered.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from assets import sample_data
    from assets.pipeline.active import DEFAULT_PIPELINE, pipeline_folder

    if pipeline_folder() != DEFAULT_PIPELINE:
        raise click.UsageError(
            f"`streamhouse generate` sends the demo's sample events, and the configured pipeline is "
            f"{pipeline_folder()}: `streamhouse demo --pipeline {pipeline_folder()}` runs its own generator"
        )
    client = load_settings().kafka_client(bootstrap_servers)
    pace = f"{rate:,.0f} records/s" if rate else "as fast as possible"
    click.echo(f"producing {events:,} events to {client.bootstrap_servers} ({pace})")
    # the bar is closed before a lost record's `error:` line (exit 1) is printed
    with (
        exit_1_when_records_are_lost(),
        Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            transient=False,
        ) as bar,
    ):
        task = bar.add_task("producing", total=None)

        def progress(sent: int, total: int) -> None:
            bar.update(task, completed=sent, total=total)

        batch = sample_data.produce_live(client, events, prefix=topic_prefix, rate=rate, progress=progress)
    for topic, count in sorted(batch.produced.items()):
        click.echo(f"  {topic}: {count:,} records")
    orders, clicks = batch.injected.get(sample_data.ORDERS, {}), batch.injected.get(sample_data.CLICKS, {})
    click.echo(
        f"{batch.total:,} records in {batch.seconds:.1f}s, event dates {batch.first_day}..{batch.last_day}: "
        f"{orders.get('late', 0):,} late orders, "
        f"{orders.get('invalid', 0) + clicks.get('invalid', 0):,} malformed, "
        f"{orders.get('duplicate', 0) + clicks.get('duplicate', 0):,} duplicates"
    )
    click.echo("with `make dagster` running, its sensors ingest them and recompute the affected days")

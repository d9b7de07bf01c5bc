"""``streamhouse demo``: run the main job end to end on the embedded defaults and print a summary."""

from __future__ import annotations

import click


@click.command()
@click.option(
    "--events",
    type=click.IntRange(1, 10_000_000),
    default=20_000,
    show_default=True,
    help="How many demo events to produce.",
)
@click.option("--keep-broker", is_flag=True, help="Leave the embedded broker running afterwards.")
def demo(events: int, keep_broker: bool) -> None:
    """Produce demo events to Kafka and land them in the lakehouse, end to end.

    Uses the embedded broker unless STREAMHOUSE_BROKER_PROFILE=real, Spark at STREAMHOUSE_SPARK_MASTER
    (default local[*]) and Delta tables under STREAMHOUSE_LAKE_ROOT (default .state/lake).
    """
    import warnings

    # Dagster flags beta parameters on every definitions load; they are ours to track, not the user's.
    warnings.filterwarnings("ignore", message=".*is currently in beta.*")
    warnings.filterwarnings("ignore", message=".*is superseded and its usage is discouraged.*")
    from orchestration.demo import run_demo
    from orchestration.settings import load_settings

    run_demo(load_settings(), events=events, keep_broker=keep_broker)

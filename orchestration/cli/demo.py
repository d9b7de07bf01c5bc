"""``streamhouse demo``: the end-to-end demo into the project's lake and Dagster instance (``make demo``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click


@click.command()
@click.option(
    "--events",
    type=click.IntRange(1, 10_000_000),
    default=20_000,
    show_default=True,
    help="How many demo events to produce.",
)
@click.option(
    "--reset",
    is_flag=True,
    help="Start over: delete the lake's tables, their history in the Dagster instance and the edge "
    "apps' local state before the run. Never done without it: when the lake has read further than the "
    "topics hold (the broker lost them), the demo stops with exit 2 and says what it found.",
)
@click.option(
    "--stop-broker",
    is_flag=True,
    help="Stop the local broker at the end (default: leave it running, recorded, for `make dagster`).",
)
@click.option(
    "--pipeline",
    "pipeline_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run this pipeline (a folder with pipeline.yaml, docs/pipelines.md) end to end with its own "
    "sample generator instead of the demo's: topics, ingest, silver, gold and a summary.",
)
def demo(events: int, reset: bool, stop_broker: bool, pipeline_dir: Path | None) -> None:
    """Produce sample events to Kafka, land them in the lakehouse and run the edge apps, end to end.

    Everything goes where `make dagster` looks: the recorded local broker (started if none runs, left
    running), unprefixed topics, the lake at STREAMHOUSE_LAKE_ROOT (default .state/lake) and the
    Dagster instance at STREAMHOUSE_DAGSTER_HOME (default .state/dagster). Running it again adds a new
    batch of events. A configured cluster (STREAMHOUSE_BOOTSTRAP_SERVERS) is used instead of the local
    broker. Nothing is deleted without --reset.
    """
    import warnings

    # Dagster flags beta parameters on every definitions load; they are ours to track, not the user's.
    warnings.filterwarnings("ignore", message=".*is currently in beta.*")
    warnings.filterwarnings("ignore", message=".*is superseded and its usage is discouraged.*")
    from orchestration.demo_lock import demo_lock
    from orchestration.settings import load_settings

    if pipeline_dir is not None:
        from assets.pipeline import check_pipeline

        _, problems = check_pipeline(pipeline_dir)
        if problems:
            for problem in problems:
                click.echo(str(problem), err=True)
            raise click.exceptions.Exit(2)
        # Before anything builds the asset definitions: they are made from the pipeline this names.
        os.environ["STREAMHOUSE_PIPELINE"] = str(pipeline_dir.resolve())
    settings = load_settings()
    # A second demo fails here at once, before the slow imports, naming the running one (it used to
    # fail minutes later, at its edge step).
    try:
        with demo_lock(settings.state_dir):
            from orchestration.cli.topics import exit_1_when_records_are_lost
            from orchestration.demo import run_demo
            from orchestration.demo_interrupt import run_interruptibly

            with exit_1_when_records_are_lost():  # sample events not delivered: `error:`, exit 1
                if pipeline_dir is not None:
                    from orchestration.pipeline_demo import run_pipeline_demo

                    run_interruptibly(lambda: run_pipeline_demo(settings))
                else:
                    run_interruptibly(
                        lambda: run_demo(settings, events=events, reset=reset, stop_broker=stop_broker)
                    )
    except KeyboardInterrupt:  # before the demo's worker started (the imports): nothing ran yet
        click.echo(
            "interrupted before the demo started; nothing was changed: run `make demo` again", err=True
        )
        raise SystemExit(130) from None
    except Exception as exc:
        from orchestration.demo_interrupt import DemoInterrupted

        if not isinstance(exc, DemoInterrupted):
            raise
        # Ctrl-C: one line (issue 46 item 6: it was ~140 lines of Dagster's interrupt tracebacks)
        click.echo(exc.line(), err=True)
        sys.stdout.flush()
        sys.stderr.flush()
        # Without the interpreter's shutdown: Kafka clients the interrupted step left open call back
        # into Python from librdkafka's threads, which aborts a finalizing interpreter ("Fatal Python
        # error: PyGILState_Release"). The worker has closed what it could (the lock is released; the
        # Spark JVM exits when its stdin closes; the broker is left running as after any demo).
        os._exit(130)
